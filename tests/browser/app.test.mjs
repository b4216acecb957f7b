// Browser tests: the real web build in headless Chromium (Debian's, driven by playwright-core).
// They wait on the frame counter the app publishes (Module.frameCount), never on a fixed sleep,
// and assert on the app's state read through Embind, not only on pixels. Set-up: harness.mjs.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { artifacts, launch, openApp as openAppIn, waitFrames } from "./harness.mjs";

let harness;
// The parallel sizes of Module.getConfig() (the whole configuration as config_to_json writes it).
const layoutOf = (config) => ({
  tp: config.parallel.tensor_parallel, pp: config.parallel.pipeline_parallel,
  ep: config.parallel.expert_parallel, etp: config.parallel.expert_tensor_parallel,
});
const openApp = (fragment, options) => openAppIn(harness, fragment, options);

before(async () => {
  harness = await launch();
});

after(async () => {
  await harness?.close();
});

describe("stagemem in headless Chromium", () => {
  test("a link's configuration is decoded, drawn with WebGL2, and edits rewrite the link in place", async () => {
    const { context, page, consoleErrors } = await openApp("v=1&tp=2&pp=8");

    const webgl = await page.evaluate(() => {
      const gl = document.getElementById("canvas").getContext("webgl2");
      return { isWebGL2: gl instanceof WebGL2RenderingContext, version: gl && gl.getParameter(gl.VERSION) };
    });
    assert.ok(webgl.isWebGL2, "the app's canvas must hold a WebGL2 context");
    assert.match(webgl.version, /^WebGL 2\.0/);

    const config = await page.evaluate(() => Module.getConfig());
    assert.equal(config.model, "llama-3.1-8b");
    assert.deepEqual(layoutOf(config), { tp: 2, pp: 8, ep: 1, etp: 1 });

    // Llama-3.1-8B, PP 8, TP 2: stage 0 holds layers 0-3 and the embedding. Per layer
    // (218,112,000 - 8,192 norm weights) / 2 + 8,192 = 109,060,096 per rank; x 4 = 436,240,384;
    // embedding 128,256 x 4,096 / 2 = 262,668,288 (128,256 is already a multiple of 256)
    // -> 698,908,672 params per rank -> 1,397,817,344 B in bf16.
    const report = await page.evaluate(() => Module.getReport());
    assert.equal(report.total_parameters, 8_030_261_248);
    assert.equal(report.stages.length, 8);
    assert.equal(report.app.errors.length, 0);
    const weights = report.stages[0].terms.find((term) => term.name === "weights (bf16)");
    assert.equal(weights?.bytes, 1_397_817_344);
    // The peak is resident memory plus the largest phase peak: never above the sum of all terms.
    for (const stage of report.stages) {
      const sum = stage.terms.reduce((total, term) => total + term.bytes, 0);
      assert.ok(stage.peak_bytes >= weights.bytes && stage.peak_bytes <= sum,
                `stage ${stage.index}: peak ${stage.peak_bytes} outside [weights, sum of terms ${sum}]`);
    }
    // The binding stage has the least headroom: on one device type, the largest peak. (Which
    // stage that is moves as the core models more terms: weights alone made it the LM-head
    // stage 7, 1F1B's in-flight activations make it stage 0.)
    // Since the allocator replay the figure is the peak reserved (fit_bytes).
    const largestFit = Math.max(...report.stages.map((stage) => stage.fit_bytes));
    assert.equal(report.stages[report.binding_stage].fit_bytes, largestFit);

    // Our own shader (shaders/stage_heat.frag) really ran.
    assert.ok(await page.evaluate(() => Module.heatStripDraws()) > 0);

    const historyBefore = await page.evaluate(() => history.length);
    const error = await page.evaluate(() => Module.setConfigValue("pp", 2));
    assert.equal(error, "");
    await waitFrames(page);
    assert.equal(await page.evaluate(() => location.hash), "#v=1&tp=2&pp=2");
    assert.equal(await page.evaluate(() => history.length), historyBefore,
                 "replaceState must not add history entries");
    const edited = await page.evaluate(() => Module.getReport());
    assert.equal(edited.stages.length, 2);

    // Invalid edits are refused with the field named, and the link is left alone.
    assert.match(await page.evaluate(() => Module.setConfigValue("tp", 0)), /^tp: /);
    assert.match(await page.evaluate(() => Module.setConfigValue("colour", 1)), /^colour: unknown field/);

    await page.screenshot({ path: join(artifacts, "browser-pp2-tp2.png") });
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });

  test("back/forward and pasted links reload the state through hashchange", async () => {
    const { context, page } = await openApp("v=1&pp=4");
    await page.evaluate(() => { location.hash = "#v=1&pp=16&tp=4"; });
    await page.waitForFunction(() => Module.getConfig().parallel.pipeline_parallel === 16, null,
                               { timeout: 30_000 });
    assert.deepEqual(layoutOf(await page.evaluate(() => Module.getConfig())),
                     { tp: 4, pp: 16, ep: 1, etp: 1 });
    await page.goBack();
    await page.waitForFunction(() => Module.getConfig().parallel.pipeline_parallel === 4, null,
                               { timeout: 30_000 });
    await context.close();
  });

  test("a bad link shows the banner naming each bad field and falls back to defaults", async () => {
    const { context, page } = await openApp("v=1&tp=0&pp=abc&future=1");
    const problems = await page.evaluate(() => Module.getLinkProblems());
    const fields = problems.map((p) => p.field);
    assert.deepEqual(fields, ["url.tp", "url.pp", "url.future"]);
    assert.match(problems[0].message, /\[1, 1024\]/);
    const config = await page.evaluate(() => Module.getConfig());
    assert.equal(config.model, "llama-3.1-8b");
    assert.deepEqual(layoutOf(config), { tp: 1, pp: 4, ep: 1, etp: 1 });
    // The bad link stays as pasted until the user edits something.
    await waitFrames(page);
    assert.equal(await page.evaluate(() => location.hash), "#v=1&tp=0&pp=abc&future=1");
    // Nothing from the link reaches the page as markup.
    assert.equal(await page.evaluate(() => document.querySelectorAll("script").length), 2);
    await page.screenshot({ path: join(artifacts, "browser-bad-link.png") });
    await context.close();
  });
});

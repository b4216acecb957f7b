// Browser tests: the real web build in headless Chromium (Debian's, driven by playwright-core).
// They wait on the frame counter the app publishes (Module.frameCount), never on a fixed sleep,
// and assert on the app's state read through Embind, not only on pixels.
//   STAGEMEM_WEB_DIR   folder holding index.html, stagemem.js, stagemem.wasm
//   STAGEMEM_ARTIFACTS folder for screenshots
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { startServer } from "../../scripts/static-server.mjs";

const webDir = process.env.STAGEMEM_WEB_DIR;
const artifacts = process.env.STAGEMEM_ARTIFACTS ?? "artifacts";
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const chromiumArgs = [
  "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-quic",
  "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

let server;
let browser;
let baseUrl;

async function openApp(fragment, { minFrames = 3 } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const consoleErrors = [];
  page.on("pageerror", (error) => consoleErrors.push(String(error)));
  await page.goto(`${baseUrl}#${fragment}`);
  // Uncaught page errors are reported through the failure box by the test, not only a timeout.
  await page.evaluate(() => window.addEventListener("error", (event) => {
    document.body.dataset.appFailed = "true";
    document.getElementById("failure").textContent = String(event.message);
  }));
  await page.waitForFunction(
    (n) => document.body.dataset.appFailed === "true" ||
           (typeof Module !== "undefined" && typeof Module.frameCount === "function" &&
            Module.frameCount() >= n),
    minFrames, { timeout: 60_000 }).catch((error) => {
    throw new Error(`${error.message}; page errors: ${consoleErrors.join(" | ")}`);
  });
  const failure = await page.evaluate(() => document.getElementById("failure").textContent);
  assert.equal(failure, "", `the page reported a failure: ${failure}`);
  return { context, page, consoleErrors };
}

// Waits until the app has drawn `count` more frames than now.
async function waitFrames(page, count = 2) {
  const start = await page.evaluate(() => Module.frameCount());
  await page.waitForFunction((n) => Module.frameCount() >= n, start + count, { timeout: 30_000 });
}

before(async () => {
  assert.ok(webDir, "STAGEMEM_WEB_DIR must point at the web build");
  mkdirSync(artifacts, { recursive: true });
  server = await startServer(webDir, 0);
  baseUrl = `http://127.0.0.1:${server.address().port}/`;
  browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs });
});

after(async () => {
  await browser?.close();
  await new Promise((done) => (server ? server.close(done) : done()));
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
    assert.deepEqual(config, { model: "llama-3.1-8b", tp: 2, pp: 8, ep: 1, etp: 1 });

    // Llama-3.1-8B, PP 8, TP 2: stage 0 holds layers 0-3 and the embedding. Per layer
    // (218,112,000 - 8,192 norm weights) / 2 + 8,192 = 109,060,096 per rank; x 4 = 436,240,384;
    // embedding 128,256 x 4,096 / 2 = 262,668,288 (128,256 is already a multiple of 256)
    // -> 698,908,672 params per rank -> 1,397,817,344 B in bf16.
    const report = await page.evaluate(() => Module.getReport());
    assert.equal(report.totalParameters, 8_030_261_248);
    assert.equal(report.stages.length, 8);
    assert.equal(report.errors.length, 0);
    assert.equal(report.stages[0].peakBytes, 1_397_817_344);
    assert.equal(report.bindingStage, 7);

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
    await page.waitForFunction(() => Module.getConfig().pp === 16, null, { timeout: 30_000 });
    assert.deepEqual(await page.evaluate(() => Module.getConfig()),
                     { model: "llama-3.1-8b", tp: 4, pp: 16, ep: 1, etp: 1 });
    await page.goBack();
    await page.waitForFunction(() => Module.getConfig().pp === 4, null, { timeout: 30_000 });
    await context.close();
  });

  test("a bad link shows the banner naming each bad field and falls back to defaults", async () => {
    const { context, page } = await openApp("v=1&tp=0&pp=abc&future=1");
    const problems = await page.evaluate(() => Module.getLinkProblems());
    const fields = problems.map((p) => p.field);
    assert.deepEqual(fields, ["url.tp", "url.pp", "url.future"]);
    assert.match(problems[0].message, /\[1, 1024\]/);
    assert.deepEqual(await page.evaluate(() => Module.getConfig()),
                     { model: "llama-3.1-8b", tp: 1, pp: 4, ep: 1, etp: 1 });
    // The bad link stays as pasted until the user edits something.
    await waitFrames(page);
    assert.equal(await page.evaluate(() => location.hash), "#v=1&tp=0&pp=abc&future=1");
    // Nothing from the link reaches the page as markup.
    assert.equal(await page.evaluate(() => document.querySelectorAll("script").length), 2);
    await page.screenshot({ path: join(artifacts, "browser-bad-link.png") });
    await context.close();
  });
});

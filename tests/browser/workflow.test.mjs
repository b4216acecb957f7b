// Browser tests of the everyday path from a wiki link, driven with real events: idle costs
// nothing; paste (a whole link anywhere, text into a field) and copy through the real clipboard;
// a dropped and a picked config.json; a bad link keeps its good fields; an invalid edit keeps the
// last report (stale) and gets a one-click fix; undo/redo; Back/Forward between loaded links;
// the first screen's verdict; the chart at PP 4, 32 and 128. Set-up and helpers: harness.mjs.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { artifacts, clickWidget, launch, openApp as openAppIn, waitFrames, waitUntil, widgetRect }
  from "./harness.mjs";

let harness;
const openApp = (fragment, options) => openAppIn(harness, fragment, options);
const clipboard = ["clipboard-read", "clipboard-write"];
const getConfig = (page) => page.evaluate(() => Module.getConfig());
const getReport = (page) => page.evaluate(() => Module.getReport());
const uiState = (page) => page.evaluate(() => Module.getUiState());
const llamaConfig = readFileSync(new URL("../cli/data/llama-3.1-8b.json", import.meta.url), "utf8");

before(async () => {
  harness = await launch();
});

after(async () => {
  await harness?.close();
});

// Main-thread CPU seconds of the page so far (Chrome DevTools Protocol Performance metrics).
async function taskSeconds(cdp) {
  const { metrics } = await cdp.send("Performance.getMetrics");
  return metrics.find((m) => m.name === "TaskDuration").value;
}

// A real Ctrl+V / Ctrl+C with the canvas focused: Chromium fires the page's paste/copy events.
async function pressShortcut(page, key) {
  await page.keyboard.down("Control");
  await page.keyboard.press(key);
  await page.keyboard.up("Control");
  await waitFrames(page, 3);
}

describe("stagemem as a user lives in it", () => {
  test("idle costs nothing: no frame is drawn while nothing changes; input wakes it", async (t) => {
    const { context, page } = await openApp("v=1&tp=2&pp=8&device=h100-80gb");
    const cdp = await context.newCDPSession(page);
    await cdp.send("Performance.enable");
    // Let the start-up input settle (the page's first events keep frames coming for 0.6 s).
    await page.waitForTimeout(1500);
    const before = await page.evaluate(() => Module.getIdleStats());
    const cpuBefore = await taskSeconds(cdp);
    await page.waitForTimeout(10_000);
    const idle = await page.evaluate(() => Module.getIdleStats());
    const cpu = (await taskSeconds(cdp)) - cpuBefore;
    const drawn = idle.framesDrawn - before.framesDrawn;
    t.diagnostic(`idle 10 s: ${drawn} frames drawn, ${idle.idleCallbacks - before.idleCallbacks} ` +
                 `animation frames that drew nothing, main-thread CPU ${(cpu * 1000).toFixed(0)} ms`);
    assert.ok(drawn <= 2, `at most 2 frames in 10 s idle, drew ${drawn}`);
    assert.ok(idle.idleCallbacks > before.idleCallbacks, "the loop still runs, drawing nothing");
    assert.ok(cpu < 1.0, `main-thread CPU ${cpu.toFixed(3)} s in 10 s idle`);
    // A mouse move wakes it: ImGui sees the move (hover) within a few frames.
    const bar = await widgetRect(page, "stage_bar_2");
    const start = await page.evaluate(() => Module.frameCount());
    await page.mouse.move(bar.x + bar.width / 2, bar.y + bar.height - 4);
    await page.waitForFunction(() => Module.getUiState().hoveredStage === 2, null, { timeout: 10_000 });
    assert.ok((await page.evaluate(() => Module.frameCount())) > start);
    await context.close();
  });

  test("a whole link pasted anywhere loads; Back returns to the previous link", async () => {
    const { context, page } = await openApp("v=1&pp=4", { permissions: clipboard });
    const historyBefore = await page.evaluate(() => history.length);
    const link = `${harness.baseUrl}#v=1&model=llama-3.1-70b&tp=8&pp=8&device=h200`;
    await page.evaluate((text) => navigator.clipboard.writeText(text), link);
    await page.mouse.click(900, 600);  // the canvas, on no text field
    await pressShortcut(page, "v");
    await waitUntil(page, async () => (await getConfig(page)).model === "llama-3.1-70b",
                    { what: "the pasted link is applied" });
    const config = await getConfig(page);
    assert.equal(config.parallel.tensor_parallel, 8);
    assert.equal(config.parallel.pipeline_parallel, 8);
    assert.equal(config.device.preset, "h200");
    assert.equal(await page.evaluate(() => location.hash), "#v=1&model=llama-3.1-70b&tp=8&pp=8&device=h200");
    assert.equal(await page.evaluate(() => history.length), historyBefore + 1, "a history entry");
    await page.goBack();
    await waitUntil(page, async () => (await getConfig(page)).model === "llama-3.1-8b",
                    { what: "Back restores the previous link" });
    assert.equal((await getConfig(page)).parallel.pipeline_parallel, 4);
    await page.goForward();
    await waitUntil(page, async () => (await getConfig(page)).model === "llama-3.1-70b",
                    { what: "Forward again" });
    await context.close();
  });

  test("paste into and copy from a text field through the real clipboard", async () => {
    const { context, page } = await openApp("v=1&pp=4", { permissions: clipboard });
    await page.evaluate(() => navigator.clipboard.writeText("16384"));
    await clickWidget(page, "field_seq");
    await pressShortcut(page, "a");
    await pressShortcut(page, "v");
    await page.keyboard.press("Enter");
    await waitUntil(page, async () => (await getConfig(page)).training.sequence_length === 16384,
                    { what: "seq = 16384 pasted into the field" });
    // Copy: select the field's text and Ctrl+C; the clipboard holds it.
    await page.evaluate(() => navigator.clipboard.writeText("before"));
    await clickWidget(page, "field_mbs");
    await pressShortcut(page, "a");
    await pressShortcut(page, "c");
    await waitUntil(page, async () => (await page.evaluate(() => navigator.clipboard.readText())) === "1",
                    { what: "the field's text copied" });
    await page.keyboard.press("Escape");
    // The field lets go of the keyboard in the next frame: until then a paste would be its own.
    await waitFrames(page, 3);
    // A Hugging Face config.json pasted anywhere becomes the custom model; the layout stays.
    const deeper = llamaConfig.replace('"num_hidden_layers": 32', '"num_hidden_layers": 40');
    await page.evaluate((text) => navigator.clipboard.writeText(text), deeper);
    await page.mouse.click(900, 600);
    await pressShortcut(page, "v");
    await waitUntil(page, async () => (await getConfig(page)).custom_model !== "",
                    { what: "the pasted config.json is the custom model" });
    const report = await getReport(page);
    assert.equal(report.stages.reduce((n, s) => n + s.layer_count, 0), 40);
    assert.equal((await getConfig(page)).parallel.pipeline_parallel, 4);
    await page.screenshot({ path: join(artifacts, "browser-pasted-hf-config.png") });
    await context.close();
  });

  test("a config.json dropped onto the page and one chosen in the file picker load", async () => {
    const { context, page } = await openApp("v=1&pp=2");
    // Drop: the page's drop event with a real File in its DataTransfer.
    const dataTransfer = await page.evaluateHandle((text) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([text], "config.json", { type: "application/json" }));
      return transfer;
    }, llamaConfig.replace('"num_hidden_layers": 32', '"num_hidden_layers": 24'));
    await page.dispatchEvent("#canvas", "dragover", { dataTransfer });
    await page.dispatchEvent("#canvas", "drop", { dataTransfer });
    await waitUntil(page, async () => (await getReport(page)).stages.reduce((n, s) => n + s.layer_count, 0) === 24,
                    { what: "the dropped config.json's 24 layers" });
    // The picker: a stagemem configuration JSON (what getConfig returns) with PP 8 and a device.
    const saved = await getConfig(page);
    saved.parallel.pipeline_parallel = 8;
    saved.custom_model = "";
    saved.device.preset = "b200";
    const [chooser] = await Promise.all([
      page.waitForEvent("filechooser", { timeout: 30_000 }),
      clickWidget(page, "open_file"),
    ]);
    await chooser.setFiles({ name: "stagemem.json", mimeType: "application/json",
                             buffer: Buffer.from(JSON.stringify(saved)) });
    await waitUntil(page, async () => (await getConfig(page)).device.preset === "b200",
                    { what: "the picked stagemem JSON" });
    const config = await getConfig(page);
    assert.equal(config.parallel.pipeline_parallel, 8);
    assert.equal(config.model, "llama-3.1-8b");
    assert.equal(config.custom_model, "");
    // A report saved with Download JSON loads its configuration back.
    const reportJson = await page.evaluate(() => Module.getReportJson());
    assert.equal(await page.evaluate(() => Module.setConfigValue("pp", 2)), "");
    await waitFrames(page, 2);
    const saved_report = await page.evaluateHandle((text) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([text], "stagemem-report.json", { type: "application/json" }));
      return transfer;
    }, reportJson);
    await page.dispatchEvent("#canvas", "drop", { dataTransfer: saved_report });
    await waitUntil(page, async () => (await getConfig(page)).parallel.pipeline_parallel === 8,
                    { what: "the dropped report's configuration" });
    // A broken file names its field and changes nothing.
    const broken = await page.evaluateHandle(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(['{"format": "stagemem-config", "parallel": {"tensor_parallel": 0}}'],
                                  "bad.json", { type: "application/json" }));
      return transfer;
    });
    await page.dispatchEvent("#canvas", "drop", { dataTransfer: broken });
    await waitUntil(page, async () => (await page.evaluate(() => Module.getLinkProblems())).length > 0,
                    { what: "the bad file's problems" });
    const problems = await page.evaluate(() => Module.getLinkProblems());
    assert.equal(problems[0].field, "json.parallel.tensor_parallel");
    assert.equal((await getConfig(page)).parallel.pipeline_parallel, 8, "nothing applied");
    await context.close();
  });

  test("a link with a bad field keeps every good one; a cross-field error gets a one-click fix", async () => {
    const { context, page } = await openApp("v=1&model=deepseek-v3&tp=2&pp=16&ep=64&mbs=abc");
    const problems = await page.evaluate(() => Module.getLinkProblems());
    assert.deepEqual(problems.map((p) => p.field), ["url.mbs"]);
    let config = await getConfig(page);
    assert.equal(config.model, "deepseek-v3");
    assert.equal(config.parallel.tensor_parallel, 2);
    assert.equal(config.parallel.pipeline_parallel, 16);
    assert.equal(config.parallel.expert_parallel, 64);
    let report = await getReport(page);
    assert.deepEqual(report.app.errors.map((e) => e.field), ["parallel.sequence_parallel"]);
    assert.equal(report.app.valid, false);
    // The GPU count is on the first screen: EP 64 with TP 2 means DP 32, 1,024 GPUs.
    assert.equal(report.app.world_size, 1024);
    await page.screenshot({ path: join(artifacts, "browser-link-needs-sp.png") });
    await clickWidget(page, "field_fix");
    await waitUntil(page, async () => (await getConfig(page)).parallel.sequence_parallel === true,
                    { what: "Enable sequence parallelism" });
    report = await getReport(page);
    assert.deepEqual(report.app.errors, []);
    assert.equal(report.stages.length, 16);
    config = await getConfig(page);
    assert.equal(config.parallel.expert_parallel, 64);
    await waitUntil(page, async () => (await page.evaluate(() => location.hash)).includes("sp=1"),
                    { what: "the link follows the fix" });
    await context.close();
  });

  test("an invalid edit keeps the last report, marked stale; Copy link copies what is on screen; undo/redo", async () => {
    const { context, page } = await openApp("v=1&model=deepseek-v3&tp=1&pp=16&ep=64&device=h200",
                                            { permissions: clipboard });
    const valid = await getReport(page);
    assert.deepEqual(valid.app.errors, []);
    // TP + on an MoE model without sequence parallelism: invalid.
    await clickWidget(page, "tp_plus");
    await waitUntil(page, async () => (await getConfig(page)).parallel.tensor_parallel === 2,
                    { what: "tp = 2" });
    const stale = await getReport(page);
    assert.equal(stale.app.stale, true);
    assert.deepEqual(stale.app.errors.map((e) => e.field), ["parallel.sequence_parallel"]);
    assert.deepEqual(stale.stages.map((s) => s.peak_bytes), valid.stages.map((s) => s.peak_bytes),
                     "the last valid report stays on screen");
    await page.screenshot({ path: join(artifacts, "browser-stale.png") });
    // Copy link: exactly the configuration on screen (tp=2), even though it is invalid.
    await clickWidget(page, "copy_link");
    await waitUntil(page, async () => (await page.evaluate(() => navigator.clipboard.readText())).includes("tp=2"),
                    { what: "the copied link has tp=2" });
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), await page.evaluate(() => location.href));
    // Ctrl+Z undoes the edit, Ctrl+Shift+Z redoes it, the Undo button undoes again.
    await page.mouse.click(900, 600);
    await pressShortcut(page, "z");
    await waitUntil(page, async () => (await getConfig(page)).parallel.tensor_parallel === 1, { what: "undo" });
    assert.equal((await getReport(page)).app.stale, false);
    await page.keyboard.down("Control");
    await page.keyboard.down("Shift");
    await page.keyboard.press("z");
    await page.keyboard.up("Shift");
    await page.keyboard.up("Control");
    await waitUntil(page, async () => (await getConfig(page)).parallel.tensor_parallel === 2, { what: "redo" });
    await clickWidget(page, "undo");
    await waitUntil(page, async () => (await getConfig(page)).parallel.tensor_parallel === 1, { what: "Undo button" });
    await clickWidget(page, "redo");
    await waitUntil(page, async () => (await getConfig(page)).parallel.tensor_parallel === 2, { what: "Redo button" });
    await context.close();
  });

  test("the first screen: a default that fits, model, device, layout, GPUs and the verdict", async () => {
    const { context, page } = await openApp("");
    // The CLI's and a link's defaults (config.h default_config) on one device.
    const config = await getConfig(page);
    assert.equal(config.model, "llama-3.1-8b");
    assert.equal(config.device.preset, "h100-80gb");
    const report = await getReport(page);
    assert.deepEqual(report.app.errors, []);
    assert.match(report.app.verdict, /^fits: stage \d+ binds at \d+\.\d of 79\.2 GiB reserved$/);
    // The check measures against the replayed peak reserved (no device rows measured).
    for (const stage of report.stages) assert.equal(stage.fit_basis, "reserved");
    assert.equal(report.app.world_size, 4);
    for (const stage of report.stages) assert.ok(stage.headroom_bytes >= 0);
    // The default is written into the link at once, so the page can be shared as it is.
    assert.equal(await page.evaluate(() => location.hash), "#v=1&device=h100-80gb");
    // GPUs per node is editable at the top, and the device and layout fields come before training.
    const perNode = await widgetRect(page, "gpus_per_node");
    assert.ok(perNode.y < 80, `GPUs per node at y ${perNode.y}`);
    const device = await widgetRect(page, "field_device");
    const tp = await widgetRect(page, "field_tp");
    const seq = await widgetRect(page, "field_seq");
    assert.ok(device.y < tp.y && tp.y < seq.y, "model, device, layout, then training");
    // Fields that do not apply to a dense Llama under Adam are hidden (no EP, no KDA, no Muon).
    for (const key of ["ep", "kda_chunk", "muon_routers", "attnres_temps"]) {
      assert.equal(await page.evaluate((k) => Module.getWidgetRect(`field_${k}`), key), null, key);
    }
    // The input part of the field (its -/+ buttons are on the right).
    await page.mouse.click(perNode.x + 12, perNode.y + perNode.height / 2);
    await waitFrames(page, 3);
    await pressShortcut(page, "a");
    await page.keyboard.type("4");
    await page.keyboard.press("Enter");
    await waitUntil(page, async () => (await uiState(page)).gpusPerNode === 4, { what: "4 GPUs per node" });
    // Frame timings are behind the debug toggle.
    assert.equal((await uiState(page)).showFrameTimes, false);
    await clickWidget(page, "frame_times");
    await waitUntil(page, async () => (await uiState(page)).showFrameTimes, { what: "frame times shown" });
    const ui = await uiState(page);
    assert.match(ui.commit, /^[0-9a-f]{7,40}$|^unknown$/);
    await page.screenshot({ path: join(artifacts, "browser-first-screen.png") });
    await context.close();
  });

  for (const pp of [4, 32, 128]) {
    test(`PP ${pp} at 1280 px: every bar drawn, none overlapping, labels thinned, a legend`, async (t) => {
      // A 128-layer dense model (the Llama-3.1-8B shapes with more layers) so that PP 128 is valid.
      const { context, page } = await openApp(`v=1&pp=${pp}&device=h200`);
      const deep = llamaConfig.replace('"num_hidden_layers": 32', '"num_hidden_layers": 128');
      await page.evaluate((text) => Module.stagememLoadFile("config.json", text), deep);
      await waitUntil(page, async () => (await getReport(page)).stages.length === pp, { what: `${pp} stages` });
      await waitFrames(page, 3);
      const report = await getReport(page);
      assert.deepEqual(report.app.errors, []);
      const ui = await uiState(page);
      assert.ok(ui.legendTerms >= 5, "a legend of the terms on the chart");
      const rects = [];
      for (let i = 0; i < pp; ++i) rects.push(await page.evaluate((n) => Module.getWidgetRect(`stage_bar_${n}`), i));
      const drawn = rects.filter((r) => r);
      if (!ui.chartScrolls) assert.equal(drawn.length, pp, "every bar visible without scrolling");
      for (let i = 1; i < rects.length; ++i) {
        if (rects[i] && rects[i - 1]) assert.ok(rects[i - 1].x + rects[i - 1].width <= rects[i].x + 0.01, `bars ${i - 1} and ${i} overlap`);
      }
      for (const r of drawn) {
        assert.ok(r.width >= 1 && r.x >= 0 && r.x + r.width <= 1280, `bar inside the window: ${JSON.stringify(r)}`);
      }
      // Labels every n-th stage: "stage N" needs ~70 px, a number ~25 px.
      if (pp === 4) assert.equal(ui.axisLabelStep, 1);
      // Labelled stages are far enough apart for their numbers (~9 px a digit at 15 px + a gap).
      const slot = rects[1] && rects[0] ? rects[1].x - rects[0].x : 1000;
      const digits = String(pp - 1).length;
      assert.ok(ui.axisLabelStep * slot >= digits * 9 + 6, `label step ${ui.axisLabelStep} x ${slot} px`);
      if (pp === 128) assert.ok(ui.axisLabelStep > 1, "PP 128 labels every few stages");
      // The tooltip over a segment never hides the bar it explains.
      const hovered = drawn.length > 1 ? 1 : 0;
      const bar = rects[hovered];
      await page.mouse.move(bar.x + bar.width / 2, bar.y + bar.height - 3);
      await waitUntil(page, async () => (await uiState(page)).hoveredTerm >= 0, { what: "segment hovered" });
      await waitFrames(page, 4);
      const tip = await widgetRect(page, "bar_tooltip");
      const overlaps = tip.x < bar.x + bar.width && bar.x < tip.x + tip.width &&
                       tip.y < bar.y + bar.height && bar.y < tip.y + tip.height;
      assert.ok(!overlaps, `tooltip ${JSON.stringify(tip)} over bar ${JSON.stringify(bar)}`);
      if (pp === 4) await page.screenshot({ path: join(artifacts, "browser-pp4-tooltip.png") });
      t.diagnostic(`PP ${pp}: ${drawn.length} bars on screen, label every ${ui.axisLabelStep}, scrolls ${ui.chartScrolls}`);
      await page.mouse.move(5, 790);
      await waitFrames(page, 3);
      await page.screenshot({ path: join(artifacts, `browser-pp${pp}-1280.png`) });
      await context.close();
    });
  }
});

describe("the sweep tab from a link", () => {
  test("axes and tab come from the link; invalid cells say why; the current cell is marked; GPUs per cell", async () => {
    const { context, page } = await openApp(
      "v=1&model=llama-3.1-70b&tp=8&pp=4&dp=2&sp=1&device=h100-80gb" +
      "&view.tab=sweep&view.x=tp:1,2,4,8,16&view.y=pp:1,2,4,8");
    await waitUntil(page, async () => (await uiState(page)).mainTab === "sweep", { what: "the sweep tab" });
    assert.deepEqual(await page.evaluate(() => Module.getLinkProblems()), []);
    await waitUntil(page, async () => (await page.evaluate(() => Module.getSweep().complete)),
                    { what: "sweep complete" });
    const sweep = await page.evaluate(() => Module.getSweep());
    assert.deepEqual(sweep.axes.map((a) => a.key), ["tp", "pp"]);
    // TP 16 does not divide Llama-3.1-70B's 8 KV heads: no cell can be valid with it, so the grid
    // leaves it out and says why (issue 22); the link keeps the values as typed.
    assert.deepEqual(sweep.axes[0].typedValues, ["1", "2", "4", "8", "16"]);
    assert.deepEqual(sweep.axes[0].values, ["1", "2", "4", "8"]);
    assert.match(sweep.axes[0].dropped,
                 /^tp: dropped 1 of 5 values that cannot be valid with this configuration: 16 \(parallel\.tp: tensor parallel size 16 must divide the attention heads \(64\) and KV heads \(8\)\)$/);
    const current = sweep.cells.filter((c) => c.current);
    assert.deepEqual(current.map((c) => [c.x, c.y]), [[3, 2]], "tp 8 x pp 4 is marked");
    for (const cell of sweep.cells) {
      const tp = Number(sweep.axes[0].values[cell.x]);
      const pp = Number(sweep.axes[1].values[cell.y]);
      assert.equal(cell.gpus, tp * pp * 2, `GPUs of tp ${tp} x pp ${pp} x dp 2`);
      if (!cell.valid) {
        assert.match(cell.label, /^invalid: \w+/);
        assert.match(cell.detail, /: /, "the tooltip has the error");
      }
    }
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "browser-sweep-tp-pp.png") });
    // An axis over mbs by default offers only sizes dividing the batch per DP rank (1024 / 2).
    assert.equal(await page.evaluate(() => Module.setSweepAxis(1, "mbs", "")), "");
    const mbs = (await page.evaluate(() => Module.getSweep())).axes[1].values.map(Number);
    assert.ok(mbs.length > 1 && mbs.every((v) => 512 % v === 0), JSON.stringify(mbs));
    await waitFrames(page, 3);
    assert.match(await page.evaluate(() => location.hash), /&view\.tab=sweep&view\.x=tp:1,2,4,8,16&view\.y=mbs:/);
    // Back to the Stages tab with a real click: the link drops view.tab.
    await clickWidget(page, "tab_stages");
    await waitUntil(page, async () => !(await page.evaluate(() => location.hash)).includes("view.tab"),
                    { what: "view.tab leaves the link" });
    await context.close();
  });
});

describe("readable from 1024 to 2560 px", () => {
  for (const width of [1024, 2560]) {
    test(`${width} px: no field label cut off, every bar inside the window`, async () => {
      const { context, page } = await openApp("v=1&model=deepseek-v3&tp=2&sp=1&pp=16&ep=64&device=h200",
                                              { viewport: { width, height: 900 } });
      // DeepSeek-V3 (MoE, MLA) shows the expert fields with the longest labels.
      await waitFrames(page, 3);
      assert.equal((await uiState(page)).truncatedLabels, 0, "labels drawn past the panel's edge");
      const report = await getReport(page);
      for (let i = 0; i < report.stages.length; ++i) {
        const r = await widgetRect(page, `stage_bar_${i}`);
        assert.ok(r.x >= 0 && r.x + r.width <= width, `bar ${i} inside ${width} px`);
      }
      await page.mouse.move(5, 890);
      await waitFrames(page, 3);
      await page.screenshot({ path: join(artifacts, `browser-width-${width}.png`) });
      await context.close();
    });
  }
});

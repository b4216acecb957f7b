// Browser tests of the generated configuration panel, the stacked per-stage view, the sweep heat
// map, the cross-check panel and the Model panel, on a production-like link. Real mouse events on
// the rectangles the app publishes (Module.getWidgetRect); assertions on the app's state through
// Embind; screenshots of each panel as artifacts. Set-up and helpers: harness.mjs.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { artifacts, clickWidget, launch, openApp as openAppIn, visibleRect, waitFrames, waitUntil, widgetRect }
  from "./harness.mjs";

let harness;
const openApp = (fragment, options) => openAppIn(harness, fragment, options);

before(async () => {
  harness = await launch();
});

after(async () => {
  await harness?.close();
});

// Kimi K3 on 8 pipeline stages with 28-way expert parallelism, full recompute, an MI355X and the
// legacy flat 82 GiB headroom (88,046,829,568 B = 82 x 2^30).
const production = "v=1&model=kimi-k3&pp=8&ep=28&gbs=896&seq=8192&recompute=full&device=mi355x" +
                   "&flat_headroom=88046829568";
const measured = "&measured=after-first-step/0=141.1GiB@torch.cuda.memory_allocated%20run%2017" +
                 "&measured=steady-state-peak/7=250GiB@nvidia-smi";

const getConfig = (page) => page.evaluate(() => Module.getConfig());
const getReport = (page) => page.evaluate(() => Module.getReport());
const uiState = (page) => page.evaluate(() => Module.getUiState());

async function showTab(page, name) {
  await clickWidget(page, `tab_${name}`);
  await waitUntil(page, async () => (await uiState(page)).mainTab === name, { what: `${name} tab` });
  await waitFrames(page, 2);
}

describe("stagemem panels on a production link", () => {
  test("the whole configuration is decoded and the published numbers agree with the report", async (t) => {
    const { context, page, consoleErrors } = await openApp(production, { minFrames: 1 });
    const firstFrameMs = await page.evaluate(() => Module.firstFrameMs);
    assert.ok(firstFrameMs > 0, "the page publishes the time of its first frame");
    t.diagnostic(`first frame ${firstFrameMs.toFixed(0)} ms after navigation (headless Chromium)`);
    await waitFrames(page, 3);

    const config = await getConfig(page);
    assert.equal(config.format, "stagemem-config");
    assert.equal(config.model, "kimi-k3");
    assert.equal(config.parallel.pipeline_parallel, 8);
    assert.equal(config.parallel.expert_parallel, 28);
    assert.equal(config.parallel.tensor_parallel, 1);
    assert.equal(config.training.global_batch, 896);
    assert.equal(config.training.sequence_length, 8192);
    assert.equal(config.training.micro_batch, 1);
    assert.equal(config.training.recompute.policy, "full");
    assert.equal(config.training.flat_headroom_bytes, 88_046_829_568);
    assert.equal(config.device.preset, "mi355x");
    assert.deepEqual(config.measurements, []);

    const report = await getReport(page);
    assert.deepEqual(report.errors, []);
    assert.deepEqual(report.app.errors, []);
    assert.equal(report.stages.length, 8);
    // MI355X: 294,912 MiB = 294,912 x 2^20 = 309,237,645,312 B (devices.cpp).
    assert.equal(report.device_bytes, 309_237_645_312);
    assert.equal(report.flat_headroom_bytes, 88_046_829_568);
    // DP is derived from EP 28 (EP x ETP must divide TP x CP x DP = DP): 28; M = 896 / (1 x 28).
    assert.equal(report.data_parallel, 28);
    assert.equal(report.micro_batches, 32);
    for (const stage of report.stages) {
      // 1F1B: stage p holds min(P - p, M) = 8 - p micro-batches at its peak.
      assert.deepEqual(stage.in_flight_per_chunk, [8 - stage.index]);
      assert.equal(stage.headroom_bytes, report.device_bytes - stage.fit_bytes);
      assert.equal(stage.non_parameter_bytes, stage.peak_bytes - stage.resident_bytes - stage.gap_bytes);
      assert.equal(stage.flat_headroom_margin_bytes, report.flat_headroom_bytes - stage.non_parameter_bytes);
      // The stacked bar drawn for the stage ends exactly at its peak.
      assert.equal(report.app.stacked_bytes[stage.index], stage.peak_bytes, `stage ${stage.index}: stacked bar`);
    }
    // The binding stage has the least headroom.
    const least = Math.min(...report.stages.map((s) => s.headroom_bytes));
    assert.equal(report.stages[report.binding_stage].headroom_bytes, least);
    // Hand-derived: 93 layers over 8 stages, the first 5 take 12 (stage 2: layers 24-35). Under
    // full recompute each layer keeps its checkpointed input per micro-batch in flight:
    // S x B x h x 2 B = 8,192 x 1 x 7,168 x 2 = 117,440,512 B, x 12 layers x 6 in flight
    // (8 - 2) = 8,455,716,864 B.
    const stage2 = report.stages[2];
    assert.deepEqual(stage2.layers, [{ first: 24, count: 12 }]);
    assert.equal(stage2.layer_count, 12);
    const checkpoint = stage2.terms.find((term) => term.name.includes("checkpointed group input"));
    assert.equal(checkpoint?.bytes, 8_455_716_864);

    await page.mouse.move(5, 790);
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "browser-stacked-bars.png") });
    // Hovering the bottom of a bar names that segment's term (a resident one).
    const bar = await widgetRect(page, "stage_bar_0");
    await page.mouse.move(bar.x + bar.width / 2, bar.y + bar.height - 3);
    await waitUntil(page, async () => (await uiState(page)).hoveredTerm >= 0, { what: "segment hovered" });
    const ui = await uiState(page);
    assert.equal(report.stages[0].terms[ui.hoveredTerm].family, "resident");
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "browser-segment-tooltip.png") });
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });

  test("a generated checkbox and an integer field edited with the real mouse and keyboard", async () => {
    const { context, page } = await openApp(production);
    // The estimate's messages under the layout fields can push the checkbox below the panel's
    // edge: scrolled into view first.
    await visibleRect(page, "field_sp");
    await clickWidget(page, "field_sp");
    await waitUntil(page, async () => (await getConfig(page)).parallel.sequence_parallel === true,
                    { what: "sequence parallel on" });
    await waitUntil(page, async () => (await page.evaluate(() => location.hash)).includes("&sp=1"),
                    { what: "link carries sp=1" });

    // Type a new sequence length into the generated integer field (scrolled into view first; the
    // estimate's messages under the layout fields may have moved the checkbox out of view).
    const sp = await visibleRect(page, "field_sp");
    await page.mouse.move(sp.x + 10, sp.y);
    // Until the field is well inside the panel: a rect that exists may still be clipped at its
    // bottom edge (the panel ends above the status bar).
    const bottom = page.viewportSize().height - 80;
    const clipped = (r) => !r || r.y + r.height > bottom;
    for (let i = 0; i < 20 && clipped(await page.evaluate(() => Module.getWidgetRect("field_seq"))); ++i) {
      await page.mouse.wheel(0, 120);
      await waitFrames(page, 2);
    }
    const seq = await widgetRect(page, "field_seq");
    await page.mouse.click(seq.x + seq.width / 2, seq.y + seq.height / 2, { delay: 100 });
    await waitFrames(page, 3);
    await page.keyboard.press("Control+A");
    await waitFrames(page, 2);
    await page.keyboard.type("16384", { delay: 50 });
    await page.keyboard.press("Enter");
    await waitUntil(page, async () => (await getConfig(page)).training.sequence_length === 16384,
                    { what: "seq = 16384" });
    await waitUntil(page, async () => (await page.evaluate(() => location.hash)).includes("seq=16384"),
                    { what: "link carries seq=16384" });
    await context.close();
  });

  test("the sweep heat map: computed on change only, hover shows a cell, a click applies it", async (t) => {
    const { context, page } = await openApp(production);
    await showTab(page, "sweep");
    await waitUntil(page, async () => (await page.evaluate(() => Module.getSweep().heatMapDraws)) > 0,
                    { what: "heat map shader ran" });
    await waitUntil(page, async () => (await page.evaluate(() => Module.getSweep().complete)),
                    { what: "sweep complete" });
    const sweep = await page.evaluate(() => Module.getSweep());
    assert.deepEqual(sweep.axes.map((a) => a.key), ["seq", "mbs"]);
    assert.deepEqual(sweep.axes[0].values, ["2048", "4096", "8192", "16384", "32768"]);
    assert.deepEqual(sweep.axes[1].values, ["1", "2", "4"]);
    assert.equal(sweep.cells.length, 15);
    assert.equal(sweep.deviceBytes, 309_237_645_312);
    // The cell of the current values (seq 8192, mbs 1) is the report itself.
    const report = await getReport(page);
    const current = sweep.cells.find((c) => c.x === 2 && c.y === 0);
    // Cells are peaks-only estimates (no allocator replay): the largest peak allocated.
    assert.equal(current.peak, Math.max(...report.stages.map((s) => s.peak_bytes)));
    assert.equal(current.headroom, report.device_bytes - current.peak);
    t.diagnostic(`one full sweep of ${sweep.cells.length} estimates: ${sweep.sweepMs.toFixed(2)} ms`);
    // Not recomputed while nothing changes.
    await waitFrames(page, 10);
    assert.equal(await page.evaluate(() => Module.getSweep().sweeps), sweep.sweeps);

    // Frame time with the heat map on screen (the mouse away from the grid).
    await waitFrames(page, 125);
    const stats = await page.evaluate(() => Module.frameTimeStats());
    t.diagnostic(`heat map visible, last ${stats.frames} frames: UI (before GL) mean ` +
                 `${stats.userInterfaceMeanMs.toFixed(3)} ms, max ${stats.userInterfaceMaxMs.toFixed(3)} ms; ` +
                 `whole frame mean ${stats.meanMs.toFixed(3)} ms, max ${stats.maxMs.toFixed(3)} ms`);
    assert.ok(stats.userInterfaceMeanMs > 0 && stats.userInterfaceMeanMs < 16, JSON.stringify(stats));

    // Hover seq 4096 x mbs 2, then click it with the real mouse.
    const target = sweep.cells.find((c) => c.x === 1 && c.y === 1);
    assert.ok(target.valid);
    const cell = await widgetRect(page, "sweep_cell_1_1");
    await page.mouse.move(cell.x + cell.width / 2, cell.y + cell.height / 2);
    await waitUntil(page, async () => (await uiState(page)).hoveredCell === 1 * 5 + 1,
                    { what: "cell hovered" });
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "browser-heat-map.png") });
    await page.mouse.down();
    await waitFrames(page, 3);
    await page.mouse.up();
    await waitUntil(page, async () => {
      const c = await getConfig(page);
      return c.training.sequence_length === 4096 && c.training.micro_batch === 2;
    }, { what: "cell's values applied" });
    await waitUntil(page, async () => {
      const hash = await page.evaluate(() => location.hash);
      // 4096 is the default sequence length: the link holds only non-default fields.
      return !hash.includes("seq=") && hash.includes("mbs=2");
    }, { what: "link follows the cell" });
    const applied = await getReport(page);
    const peaks = applied.stages.map((s) => s.peak_bytes);
    assert.equal(Math.max(...peaks), target.peak);
    assert.equal(peaks.indexOf(target.peak), target.bindingStage);
    await context.close();
  });

  test("the cross-check panel lists each measurement against the derived terms", async () => {
    const { context, page } = await openApp(production + measured);
    const report = await getReport(page);
    assert.equal(report.cross_checks.length, 2);
    const [first, second] = report.cross_checks;
    assert.equal(first.point, "after-first-step");
    assert.equal(first.stage, 0);
    // 141.1 GiB = 141.1 x 2^30 = 151,504,971,366.4 -> 151,504,971,366 B (rounded to the byte).
    assert.equal(first.measured_bytes, 151_504_971_366);
    assert.equal(first.gap_bytes, first.measured_bytes - first.derived_bytes);
    assert.ok(first.alive_terms.length > 0 && first.explanations.length > 0);
    assert.equal(second.point, "steady-state-peak");
    // A steady-state peak is compared with the stage's whole peak.
    assert.equal(second.derived_bytes, report.stages[7].peak_bytes);
    assert.ok(Math.abs(second.ratio - second.measured_bytes / second.derived_bytes) < 1e-9);
    await showTab(page, "cross_checks");
    await page.screenshot({ path: join(artifacts, "browser-cross-checks.png") });
    await context.close();
  });

  test("the Model panel lists every term stagemem can produce and filters them", async () => {
    const { context, page } = await openApp(production);
    await showTab(page, "model");
    const before = await uiState(page);
    assert.ok(before.catalogueTerms >= 20, `catalogue of ${before.catalogueTerms} terms`);
    assert.equal(before.catalogueShown, before.catalogueTerms);
    await page.screenshot({ path: join(artifacts, "browser-model-panel.png") });
    await clickWidget(page, "catalogue_filter");
    await page.keyboard.type("muon", { delay: 30 });
    await waitUntil(page, async () => (await uiState(page)).catalogueShown < before.catalogueTerms,
                    { what: "filtered" });
    const after = await uiState(page);
    assert.ok(after.catalogueShown > 0, "some terms mention Muon");
    await waitFrames(page, 2);
    await page.screenshot({ path: join(artifacts, "browser-model-filtered.png") });
    await context.close();
  });
});

// Issue 22, item 6: a typed sweep axis keeps only the values some cell can make valid and says
// which it dropped and why; GB as well as GiB (a toolbar toggle that every amount follows, kept
// in the link); unique legend names; a layout that works at 1024 x 640. Real mouse and keyboard
// events; screenshots in the artifacts folder.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { artifacts, clickWidget, launch, openApp, waitFrames, waitUntil, widgetRect } from "./harness.mjs";

let harness;
before(async () => {
  harness = await launch();
});
after(async () => {
  await harness?.close();
});

// DeepSeek-V3: 128 MLA heads, 61 layers; MoE with TP > 1 needs sequence parallelism (on).
const deepseek = "v=1&model=deepseek-v3&tp=2&pp=16&ep=64&sp=1&device=h200";

// Clicks into a text field, selects all of it and types `text`, then Enter; until `done()` (a
// loaded machine may drop the first keys before the field is active: the typing is repeated).
async function typeInto(page, widget, text, done) {
  for (let attempt = 0; attempt < 3; ++attempt) {
    await clickWidget(page, widget);
    await waitFrames(page, 3);
    await page.keyboard.press("Control+A");
    await waitFrames(page, 2);
    await page.keyboard.type(text, { delay: 40 });
    await waitFrames(page, 2);
    await page.keyboard.press("Enter");
    await waitFrames(page, 3);
    if (await done()) return;
  }
  assert.fail(`typing into ${widget} did not apply`);
}

test("a typed TP axis keeps the values that can be valid and names the dropped ones", async (t) => {
  const { context, page } = await openApp(harness, deepseek);
  await clickWidget(page, "tab_sweep");
  await waitUntil(page, async () => (await page.evaluate(() => Module.getUiState())).mainTab === "sweep",
                  { what: "sweep tab" });
  // The columns axis sweeps TP (the field picked through the page API), its values typed.
  assert.equal(await page.evaluate(() => Module.setSweepAxis(0, "tp", "1")), "");
  await waitFrames(page, 3);
  const typed = Array.from({ length: 16 }, (_, i) => i + 1).join(",");
  await typeInto(page, "sweep_x_values", typed,
                 async () => (await page.evaluate(() => Module.getSweep())).axes[0].typedValues.length === 16);
  await waitUntil(page, async () => (await page.evaluate(() => Module.getSweep())).complete,
                  { frames: 600, what: "grid complete" });
  const sweep = await page.evaluate(() => Module.getSweep());
  const x = sweep.axes[0];
  assert.equal(x.key, "tp");
  assert.deepEqual(x.typedValues, typed.split(","), "the link keeps the values as typed");
  // 128 heads: TP 1, 2, 4, 8, 16 divide them; the other 11 values cannot be valid.
  assert.deepEqual(x.values, ["1", "2", "4", "8", "16"]);
  assert.equal(sweep.columns, 5);
  assert.equal(x.droppedCount, 11);
  assert.equal(x.dropped,
               "tp: dropped 11 of 16 values that cannot be valid with this configuration: " +
               "3, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15 (parallel.tp: tensor parallel size 3 must " +
               "divide the MLA heads (128))");
  // The grid holds only kept values: every column has a valid cell.
  for (let c = 0; c < sweep.columns; ++c) {
    assert.ok(sweep.cells.some((cell) => cell.x === c && cell.valid), `column ${c} has a valid cell`);
  }
  // The CLI says the same of the same values (plan/sweep.h: one function), from the page's link.
  const link = await page.evaluate(() => location.hash);
  const cli = process.env.STAGEMEM_CLI;
  assert.ok(cli && existsSync(cli), `STAGEMEM_CLI must name the native CLI (got ${cli})`);
  const run = spawnSync(cli, ["sweep", "--url", link, "--tp", typed, "--valid-only", "--format", "csv"],
                        { encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stderr.trim(),
               "warning: --tp: left out 11 of 16 values that cannot be valid with this configuration: " +
               x.dropped.slice(x.dropped.indexOf("configuration: ") + "configuration: ".length));
  assert.deepEqual(run.stdout.trim().split("\n").slice(1).map((row) => row.split(",")[0]),
                   x.values, "the CLI's grid has the app's TP values");
  assert.match(link, /view\.x=tp:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16(&|$)/, "the link carries the typed values");
  t.diagnostic(`${sweep.cells.filter((c) => c.valid).length} of ${sweep.cells.length} cells valid`);
  await waitFrames(page, 2);
  await page.screenshot({ path: join(artifacts, "browser-sweep-dropped-values.png") });
  await context.close();
});

test("GB as well as GiB: the toggle switches every amount and the link keeps it", async (t) => {
  const { context, page } = await openApp(harness, "v=1&model=llama-3.1-70b&tp=8&pp=4&dp=2&sp=1" +
                                          "&seq=8192&optimizer=distributed-adam&device=h100-80gb");
  const before = await page.evaluate(() => Module.getUiState());
  assert.equal(before.unit, "gib");
  const report = await page.evaluate(() => Module.getReport());
  const peak0 = report.stages[0].peak_bytes;
  assert.equal(before.stagePeakLabels[0], `${(peak0 / 2 ** 30).toFixed(2)} GiB`);
  await clickWidget(page, "unit_gb");
  await waitUntil(page, async () => (await page.evaluate(() => Module.getUiState())).unit === "gb",
                  { what: "GB shown" });
  const after = await page.evaluate(() => Module.getUiState());
  // The same bytes in decimal units: peak / 10^9 with two decimals.
  assert.equal(after.stagePeakLabels[0], `${(peak0 / 1e9).toFixed(2)} GB`);
  assert.match(after.deviceLabel, /^h100-80gb: 85\.03 GB$/);  // 85,027,979,264 B
  assert.ok(after.stageHeadroomLabels.every((h) => h.endsWith(" GB")));
  const verdict = (await page.evaluate(() => Module.getReport())).app.verdict;
  assert.match(verdict, /^fits: stage \d binds at [0-9.]+ of 85\.0 GB reserved$/);
  // The Markdown copy follows the toggle; JSON stays in bytes.
  const markdown = await page.evaluate(() => Module.getMarkdownTable());
  assert.match(markdown, /\(GB = 10\^9 bytes\)/);
  assert.ok(!markdown.includes("GiB"), "no GiB left in the Markdown");
  assert.equal(JSON.parse(await page.evaluate(() => Module.getReportJson())).stages[0].peak_bytes, peak0);
  // The link keeps the unit; opening it shows GB.
  await waitFrames(page, 2);
  const hash = await page.evaluate(() => location.hash);
  assert.match(hash, /&view\.units=gb/);
  await page.screenshot({ path: join(artifacts, "browser-units-gb.png") });
  // The sweep's cells in GB too.
  await clickWidget(page, "tab_sweep");
  await waitUntil(page, async () => (await page.evaluate(() => Module.getSweep())).complete,
                  { frames: 600, what: "grid complete" });
  const sweep = await page.evaluate(() => Module.getSweep());
  assert.ok(sweep.cells.filter((c) => c.valid).every((c) => / GB$/.test(c.label)), "cells in GB");
  await context.close();
  const reopened = await openApp(harness, hash.slice(1));
  assert.equal((await reopened.page.evaluate(() => Module.getUiState())).unit, "gb");
  // Back to GiB with a click; an older link without view.units shows GiB.
  await clickWidget(reopened.page, "unit_gib");
  await waitUntil(reopened.page, async () => (await reopened.page.evaluate(() => Module.getUiState())).unit === "gib",
                  { what: "GiB shown" });
  await reopened.context.close();
  const old = await openApp(harness, "v=1&model=llama-3.1-70b&tp=8&pp=4");
  assert.equal((await old.page.evaluate(() => Module.getUiState())).unit, "gib");
  assert.deepEqual(await old.page.evaluate(() => Module.getLinkProblems()), []);
  await old.context.close();
  t.diagnostic(`stage 0: ${before.stagePeakLabels[0]} = ${after.stagePeakLabels[0]}`);
});

test("legend entries have unique names, a per-stage number named once", async () => {
  const { context, page } = await openApp(harness, "v=1&model=llama-3.1-70b&tp=8&pp=4&dp=2&sp=1" +
                                          "&seq=8192&optimizer=distributed-adam&device=h100-80gb");
  const ui = await page.evaluate(() => Module.getUiState());
  assert.equal(new Set(ui.legendNames).size, ui.legendNames.length, ui.legendNames.join(" | "));
  // Stage 0 keeps 4 distinct weight shapes, the last stage (with the LM head) 5: one entry.
  const dummy = ui.legendNames.filter((n) => n.startsWith("TE dummy weight-gradient buffers"));
  assert.deepEqual(dummy, ["TE dummy weight-gradient buffers (gradient-accumulation fusion, 4 or 5 " +
                           "distinct weight shapes)"]);
  await context.close();
});

test("1024 x 640: the chart keeps a useful height, the table and the configuration stay on screen", async (t) => {
  const link = "v=1&model=llama-3.1-70b&tp=8&pp=4&dp=2&sp=1&seq=8192&optimizer=distributed-adam" +
               "&device=h100-80gb";
  for (const [width, height] of [[1024, 640], [1920, 1080]]) {
    const { context, page } = await openApp(harness, link, { viewport: { width, height } });
    await waitFrames(page, 4);
    const chart = await widgetRect(page, "stages_chart");
    const table = await widgetRect(page, "stages_summary");
    const main = await widgetRect(page, "main_panel");
    const config = await widgetRect(page, "config_panel");
    const tp = await widgetRect(page, "field_tp");
    const bar = await widgetRect(page, "stage_bar_0");
    t.diagnostic(`${width}x${height}: chart ${chart.height.toFixed(0)} px (bar area ` +
                 `${bar.height.toFixed(0)} px), table ${table.y.toFixed(0)}-${(table.y + table.height).toFixed(0)}, ` +
                 `main panel bottom ${(main.y + main.height).toFixed(0)}, config ${config.width.toFixed(0)} px wide`);
    assert.ok(chart.height >= 240, `chart ${chart.height} px tall`);
    // Every stage's row of the table is on screen, inside the main panel.
    assert.ok(table.y + table.height <= main.y + main.height + 1, "the per-stage table is on screen");
    assert.ok(table.height >= 5 * 18, "the table's header and 4 rows");
    // The configuration beside it, wide enough for its fields, the TP field on screen.
    assert.ok(config.width >= 280 && config.x + config.width <= main.x + 1);
    assert.ok(tp.y >= config.y && tp.y + tp.height <= config.y + config.height);
    await page.screenshot({ path: join(artifacts, `browser-layout-${width}x${height}.png`) });
    // The bars can still be clicked: a click on stage 1 selects it.
    await clickWidget(page, "stage_bar_1");
    assert.equal((await page.evaluate(() => Module.getUiState())).selectedStage, 1);
    await context.close();
  }
});

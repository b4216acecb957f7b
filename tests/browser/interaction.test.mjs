// Browser tests of the app driven like a user: real mouse events on the widgets' published
// rectangles (Module.getWidgetRect), the clipboard, a download, hover tooltips, hi-DPI, a narrow
// window and the keyboard. Set-up and helpers: harness.mjs.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { artifacts, clickWidget, launch, openApp as openAppIn, waitFrames, waitUntil, widgetRect }
  from "./harness.mjs";

let harness;
const openApp = (fragment, options) => openAppIn(harness, fragment, options);
const clipboard = ["clipboard-read", "clipboard-write"];

before(async () => {
  harness = await launch();
});

after(async () => {
  await harness?.close();
});

const readClipboard = (page) => page.evaluate(() => navigator.clipboard.readText());
const groupDigits = (n) => n.toLocaleString("en-US");

describe("stagemem driven with real mouse and keyboard events", () => {
  test("Copy link puts the page's link on the clipboard", async () => {
    const { context, page, consoleErrors } = await openApp("v=1&tp=2&pp=8", { permissions: clipboard });
    await page.evaluate(() => navigator.clipboard.writeText("before"));
    await clickWidget(page, "copy_link");
    const href = await page.evaluate(() => location.href);
    assert.match(href, /#v=1&tp=2&pp=8$/);
    await waitUntil(page, async () => (await readClipboard(page)) === href, { what: "clipboard = location.href" });
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });

  test("the PP + button edits the configuration and the link follows", async () => {
    const { context, page } = await openApp("v=1&tp=2&pp=1");
    await clickWidget(page, "pp_plus");
    await waitUntil(page, async () => (await page.evaluate(() => Module.getConfig().parallel.pipeline_parallel)) === 2,
                    { what: "pp = 2" });
    await waitFrames(page);
    assert.equal(await page.evaluate(() => location.hash), "#v=1&tp=2&pp=2");
    // One click is one step: the button repeats only when held past ImGui's repeat delay.
    await waitFrames(page, 10);
    assert.equal(await page.evaluate(() => Module.getConfig().parallel.pipeline_parallel), 2);
    await context.close();
  });

  test("Copy as Markdown copies the summary, one row per stage and the page's link", async () => {
    const { context, page } = await openApp("v=1&tp=2&pp=8&device=h100-80gb", { permissions: clipboard });
    await page.evaluate(() => navigator.clipboard.writeText("before"));
    await clickWidget(page, "copy_markdown");
    const expected = await page.evaluate(() => Module.getMarkdownTable());
    await waitUntil(page, async () => (await readClipboard(page)) === expected,
                    { what: "clipboard = Markdown text" });
    const report = await page.evaluate(() => Module.getReport());
    assert.match(expected, /^- Model: llama-3\.1-8b, 8,030,261,248 parameters$/m);
    assert.match(expected, /^- Parallel layout: TP 2 x PP 8 x CP 1 x DP 1 = 16 GPUs/m);
    assert.match(expected, /^- GPUs: 16$/m);
    assert.match(expected, /^- Device: h100-80gb \(79\.19 GiB per GPU\)$/m);
    assert.ok(expected.includes(`- Verdict: **${report.app.verdict}**`), expected);
    const rows = expected.split("\n").filter((line) => line.startsWith("|"));
    assert.equal(rows.length, 2 + report.stages.length, "header, separator and one row per stage");
    assert.equal(rows[0], "| stage | layers | peak allocated | peak reserved | headroom | fits | binding phase " +
                          "| largest terms |");
    report.stages.forEach((stage, i) => {
      const cells = rows[2 + i].split(" | ");
      assert.ok(cells[0].startsWith(`| ${stage.index}`));
      // One first-last range per virtual chunk, joined by "," (vocabulary.h), as the CLI prints.
      assert.equal(cells[1], stage.layers.map((l) => `${l.first}-${l.first + l.count - 1}`).join(","));
      // Peak reserved from the allocator replay, in the unit of the peak.
      assert.match(cells[3], /^\d+\.\d\d GiB$/);
      assert.equal(cells[5], stage.headroom_bytes >= 0 ? "yes" : "no");
      assert.equal(cells[6], stage.binding_phase, "the binding phase as the JSON spells it");
      assert.equal(cells[7].split("; ").length, 3, "the three largest terms");
    });
    assert.match(rows[2 + report.binding_stage], /\(binding\)/);
    const href = await page.evaluate(() => location.href);
    assert.ok(expected.includes(`[Open this configuration in stagemem](<${href}>)`), "the page's link");
    await context.close();
  });

  test("Download JSON saves the report with every stage's exact bytes", async () => {
    const { context, page } = await openApp("v=1&tp=2&pp=8");
    const [download] = await Promise.all([
      page.waitForEvent("download", { timeout: 30_000 }),
      clickWidget(page, "download_json"),
    ]);
    assert.equal(download.suggestedFilename(), "stagemem-report.json");
    const saved = JSON.parse(readFileSync(await download.path(), "utf8"));
    const report = await page.evaluate(() => Module.getReport());
    // The one report schema (docs/report-schema.md), written by the same core function as
    // `stagemem report --json`.
    assert.equal(saved.schema_version, 1);
    assert.equal(saved.link, "#v=1&tp=2&pp=8");
    // Module.getReport() is the same document, parsed, with the app's state beside it.
    const { app, ...document } = report;
    assert.deepEqual(document, saved);
    assert.deepEqual(app.errors, []);
    assert.equal(app.stale, false);
    for (const stage of saved.stages) {
      assert.ok(stage.terms.length > 0);
      const live = stage.terms.filter((t) => t.counts_in_peak).reduce((total, t) => total + t.bytes, 0);
      assert.equal(live, stage.peak_bytes, `stage ${stage.index}: the live terms sum to the peak`);
      for (const term of stage.terms) assert.match(term.tag, /^(DERIVED|MEASURED|NOT MEASURED|DOCUMENTED)$/);
    }
    await context.close();
  });

  test("hovering a bar shows its terms; clicking it opens the stage's table", async () => {
    const { context, page } = await openApp("v=1&tp=2&pp=8");
    const bar = await widgetRect(page, "stage_bar_3");
    await page.mouse.move(bar.x + bar.width / 2, bar.y + bar.height * 0.8);
    await waitUntil(page, async () => (await page.evaluate(() => Module.getUiState().hoveredStage)) === 3,
                    { what: "bar 3 hovered" });
    await waitFrames(page, 3);  // the tooltip window settles its size over a frame or two
    await page.screenshot({ path: join(artifacts, "browser-tooltip.png") });
    await clickWidget(page, "stage_bar_3");
    assert.equal(await page.evaluate(() => Module.getUiState().selectedStage), 3);
    await page.mouse.move(5, 5);  // away from the bars: no tooltip over the table
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "browser-stage-table.png") });
    await context.close();
  });

  test("at devicePixelRatio 2 the canvas has twice the CSS size in pixels and clicks still land", async () => {
    const { context, page } = await openApp("v=1&tp=2&pp=1", { deviceScaleFactor: 2 });
    const canvas = await page.evaluate(() => {
      const c = document.getElementById("canvas");
      return { width: c.width, height: c.height, cssWidth: c.clientWidth, cssHeight: c.clientHeight,
               ratio: devicePixelRatio };
    });
    assert.equal(canvas.ratio, 2);
    assert.equal(canvas.width, 2 * canvas.cssWidth);
    assert.equal(canvas.height, 2 * canvas.cssHeight);
    const ui = await page.evaluate(() => Module.getUiState());
    assert.equal(ui.uiScale, 2);
    assert.deepEqual(ui.fonts, ["DejaVu Sans, 30px", "DejaVu Sans Mono, 28px"]);
    await clickWidget(page, "pp_plus");
    await waitUntil(page, async () => (await page.evaluate(() => Module.getConfig().parallel.pipeline_parallel)) === 2,
                    { what: "pp = 2 at ratio 2" });
    await page.screenshot({ path: join(artifacts, "browser-dpr2.png") });
    await context.close();
  });

  test("the default font is DejaVu Sans at ratio 1; a narrow window stacks the panels", async () => {
    const { context, page } = await openApp("v=1&tp=2&pp=8");
    let ui = await page.evaluate(() => Module.getUiState());
    assert.deepEqual(ui.fonts, ["DejaVu Sans, 15px", "DejaVu Sans Mono, 14px"]);
    assert.equal(ui.stackedLayout, false);
    const configWide = await widgetRect(page, "pp_plus");
    await page.setViewportSize({ width: 700, height: 900 });
    await waitUntil(page, async () => (await page.evaluate(() => Module.getUiState().stackedLayout)),
                    { what: "stacked layout below 900 CSS px" });
    await waitFrames(page, 2);
    // Stacked: the chart is under the configuration, so the first bar starts below the PP field.
    const pp = await widgetRect(page, "pp_plus");
    const bar = await widgetRect(page, "stage_bar_0");
    assert.ok(bar.y > pp.y + pp.height, `bar at ${bar.y} must be under PP at ${pp.y}`);
    assert.ok(pp.x + pp.width <= 700 && configWide.x >= 0);
    await page.screenshot({ path: join(artifacts, "browser-narrow.png") });
    await context.close();
  });

  test("the canvas has the keyboard focus on load and keys drive ImGui", async () => {
    const { context, page } = await openApp("v=1&tp=2&pp=8", { permissions: clipboard });
    assert.equal(await page.evaluate(() => document.activeElement?.id), "canvas");
    await page.evaluate(() => navigator.clipboard.writeText("before"));
    // Tab moves ImGui's keyboard focus to the first widget ("Copy link"); Space presses it.
    await page.keyboard.press("Tab");
    await waitFrames(page, 3);
    await page.keyboard.down("Space");
    await waitFrames(page, 3);
    await page.keyboard.up("Space");
    const href = await page.evaluate(() => location.href);
    await waitUntil(page, async () => (await readClipboard(page)) === href,
                    { what: "clipboard = location.href after Tab, Space" });
    await context.close();
  });

  test("the frame function's CPU time is published", async (t) => {
    const { context, page } = await openApp("v=1&tp=2&pp=8", { minFrames: 130 });
    const stats = await page.evaluate(() => Module.frameTimeStats());
    assert.equal(stats.frames, 120, "a rolling window of the last 120 frames");
    assert.ok(stats.meanMs > 0 && stats.maxMs >= stats.meanMs, JSON.stringify(stats));
    assert.ok(stats.userInterfaceMeanMs > 0 && stats.userInterfaceMeanMs <= stats.meanMs &&
              stats.userInterfaceMaxMs >= stats.userInterfaceMeanMs, JSON.stringify(stats));
    t.diagnostic(`frame function CPU time, headless Chromium (SwiftShader), last ${stats.frames} frames: ` +
                 `mean ${stats.meanMs.toFixed(3)} ms, max ${stats.maxMs.toFixed(3)} ms; before GL ` +
                 `submission: mean ${stats.userInterfaceMeanMs.toFixed(3)} ms, ` +
                 `max ${stats.userInterfaceMaxMs.toFixed(3)} ms`);
    await context.close();
  });
});

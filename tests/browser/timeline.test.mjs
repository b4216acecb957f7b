// Issue 11: the Timeline tab draws one stage's memory over one training step (timeline.h), pass by
// pass, stacked by family, the peak marked. The test opens the tab with real clicks, hovers the
// chart with the mouse (the peak column, then the first column), checks the app state against
// the report (the peak event's live bytes are the stage's peak), and takes a screenshot.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { artifacts, clickWidget, launch, openApp, waitFrames, waitUntil, widgetRect } from "./harness.mjs";

let harness;
before(async () => {
  harness = await launch();
});
after(async () => {
  await harness?.close();
});

// Llama-3.1-70B on 64 GPUs, PP 4 x VPP 2, M = 8 (gbs 16 / DP 2), no recompute: 2 x 8 x 2 + 1 =
// 33 events per stage; stage 0 binds in the forward/backward phase.
const link = "v=1&model=llama-3.1-70b&tp=8&pp=4&vpp=2&dp=2&sp=1&seq=8192&gbs=16" +
  "&optimizer=distributed-adam&device=h100-80gb";

test("the timeline tab charts a stage's step; hovering a pass names it and its live bytes", async () => {
  const { context, page, consoleErrors } = await openApp(harness, link);
  await clickWidget(page, "tab_timeline");
  await waitUntil(page, async () => (await page.evaluate(() => Module.getUiState())).mainTab === "timeline",
                  { what: "timeline tab" });
  await waitFrames(page, 3);
  const report = await page.evaluate(() => Module.getReport());
  let timeline = await page.evaluate(() => Module.getTimeline());
  // The binding stage is shown first; every pass of the step and the optimizer step are events.
  assert.equal(timeline.stage, report.binding_stage);
  assert.equal(report.micro_batches, 8);
  assert.equal(timeline.chunks, 2);
  assert.equal(timeline.events.length, 2 * 8 * 2 + 1);
  assert.equal(timeline.events.at(-1).phase, "optimizer-step");
  // The peak event is the stage's peak, and no event is above it.
  const stage = report.stages[timeline.stage];
  assert.equal(timeline.peakBytes, stage.peak_bytes);
  assert.equal(timeline.events[timeline.peakEvent].liveBytes, stage.peak_bytes);
  assert.ok(timeline.events.every((e) => e.liveBytes <= stage.peak_bytes));
  assert.match(timeline.peakName, new RegExp(`^stage ${timeline.stage}, (forward|backward) of micro-batch \\d+ on chunk [01]`));

  // Hover the peak's column with the mouse: the tooltip's event is the peak.
  const chart = await widgetRect(page, "timeline_chart");
  const n = timeline.events.length;
  // The plot starts after the y-axis labels: move right from the chart's left edge until a column
  // is under the mouse, then step to the wanted column (columns are equal, up to the right edge).
  const columnX = async (event) => {
    for (let x = chart.x + 1; x < chart.x + chart.width; x += 2) {
      await page.mouse.move(x, chart.y + chart.height * 0.9);
      await waitFrames(page, 2);
      const t = await page.evaluate(() => Module.getTimeline());
      if (t.hoveredEvent >= 0) {
        const width = (chart.x + chart.width - x) / (n - t.hoveredEvent);
        return x + (event - t.hoveredEvent + 0.5) * width;
      }
    }
    assert.fail("no column under the mouse anywhere on the chart");
  };
  const peakX = await columnX(timeline.peakEvent);
  await page.mouse.move(peakX, chart.y + chart.height * 0.9);
  await waitUntil(page, async () =>
    (await page.evaluate(() => Module.getTimeline())).hoveredEvent === timeline.peakEvent,
    { what: "the peak column hovered" });
  await waitFrames(page, 20);  // the tooltip appears after ImGui's hover delay
  timeline = await page.evaluate(() => Module.getTimeline());
  assert.equal(timeline.hoveredLiveBytes, stage.peak_bytes);
  assert.equal(timeline.hoveredName, timeline.peakName);
  await page.screenshot({ path: join(artifacts, "browser-timeline.png") });

  // The first column is the first forward of micro-batch 0 on chunk 0.
  const firstX = await columnX(0);
  await page.mouse.move(firstX, chart.y + chart.height * 0.9);
  await waitUntil(page, async () => (await page.evaluate(() => Module.getTimeline())).hoveredEvent === 0,
                  { what: "the first column hovered" });
  timeline = await page.evaluate(() => Module.getTimeline());
  assert.match(timeline.hoveredName, new RegExp(`^stage ${timeline.stage}, forward of micro-batch 0 on chunk 0`));
  assert.ok(timeline.hoveredLiveBytes < stage.peak_bytes);
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

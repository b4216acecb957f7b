// Issue 22, item 5: the outputs a user reads. Real mouse, keyboard and clipboard events only:
//  - Copy as Markdown states schedule, recompute, precision and optimizer, and its link pasted
//    back (Ctrl+V) gives the same configuration;
//  - the Plan tab: an honest empty state before any search, a safety margin typed into its input
//    (the 80 % rule) applied by the search, the plot's axis within the searched range, and the
//    applied row recognised as the current configuration;
//  - the Timeline headline names what makes the peak (the stored activations of the micro-batches
//    in flight, the transient at that moment, the resident set).
// Screenshots (plan-margin.png, plan-applied.png, timeline-headline.png) go to the artifacts.
import { after, before, describe, test } from "node:test";
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

const clipboard = { permissions: ["clipboard-read", "clipboard-write"] };
const readClipboard = (page) => page.evaluate(() => navigator.clipboard.readText());

async function pasteText(page, text) {
  await page.evaluate((t) => navigator.clipboard.writeText(t), text);
  await page.mouse.click(900, 700);  // the canvas, on no text field
  await page.keyboard.down("Control");
  await page.keyboard.press("v");
  await page.keyboard.up("Control");
  await waitFrames(page, 3);
}

// A real click into a text input, its text replaced by typing.
async function typeInto(page, widget, text) {
  const rect = await widgetRect(page, widget);
  await page.mouse.click(rect.x + rect.width / 2, rect.y + rect.height / 2);
  await waitFrames(page, 2);
  await page.keyboard.press("Control+a");
  await page.keyboard.press("Backspace");
  await page.keyboard.type(text, { delay: 30 });
  await page.keyboard.press("Enter");
  await waitFrames(page, 3);
}

describe("the outputs a user reads", () => {
  test("Copy as Markdown states what changes memory; its link pasted back is the same configuration",
       async () => {
    const fragment = "v=1&model=llama-3.1-8b&tp=2&sp=1&pp=4&vpp=2&dp=2&seq=8192&mbs=2&gbs=64" +
      "&recompute=selective&recompute_modules=core_attn,layernorm&grads=bf16" +
      "&optimizer=distributed-adam&dropout=1&device=h100-80gb";
    const { context, page, consoleErrors } = await openApp(harness, fragment, clipboard);
    const config = await page.evaluate(() => Module.getConfig());
    await clickWidget(page, "copy_markdown");
    await waitUntil(page, async () => (await readClipboard(page)).includes("stagemem"),
                    { what: "the Markdown on the clipboard" });
    const markdown = await readClipboard(page);
    // M = 64 / (2 x 2) = 16 micro-batches per step.
    for (const line of [
      "- Training: sequence 8192, micro-batch 2, global batch 64 (16 micro-batches per step)\n",
      "- Schedule: interleaved 1F1B (VPP 2)\n",
      "- Recompute: selective (core\\_attn, layernorm)\n",
      "- Precision: weights bf16, expert weights bf16, gradients bf16, FP8 recipe none\n",
      "- Optimizer: distributed-adam (master weights fp32, moments fp32)\n",
      "- Other settings (link keys, where they differ from the defaults): dropout=1\n"]) {
      assert.ok(markdown.includes(line), `${line} missing from:\n${markdown}`);
    }
    const link = markdown.match(/\[Open this configuration in stagemem\]\(<([^>]+)>\)/)?.[1];
    assert.ok(link, `no link in:\n${markdown}`);
    await context.close();

    // A reader of the wiki page pastes the link into a fresh page: the same configuration.
    const fresh = await openApp(harness, "v=1", clipboard);
    await pasteText(fresh.page, link);
    await waitUntil(fresh.page, async () =>
      JSON.stringify(await fresh.page.evaluate(() => Module.getConfig())) === JSON.stringify(config),
                    { what: "the pasted link's configuration" });
    assert.deepEqual(consoleErrors, []);
    await fresh.context.close();
  });

  test("Plan tab: empty state, a typed margin, its axis within the search, its row recognised",
       async () => {
    // Llama-3.1-8B with Adam on H100 80GB, gbs 32, 2 to 64 GPUs.
    const link = "v=1&model=llama-3.1-8b&gbs=32&device=h100-80gb" +
      "&plan_min=2&plan_max=64&plan_pp=1,2,4&plan_mbs=1,2";
    const { context, page, consoleErrors } = await openApp(harness, link);
    await clickWidget(page, "tab_plan");
    await waitUntil(page, async () => (await page.evaluate(() => Module.getUiState())).mainTab === "plan",
                    { what: "plan tab" });
    await waitFrames(page, 3);
    // Before any search: no progress bar (drawn full it said a search had finished), a sentence.
    let plan = await page.evaluate(() => Module.getPlan());
    assert.equal(plan.hasResult, false);
    assert.equal(plan.progressBarDrawn, false);
    assert.equal(plan.status, "no search yet: set the bounds and press Search");
    await page.screenshot({ path: join(artifacts, "plan-empty.png") });

    // The 80 % rule typed into the margin input: the link carries it (20%25).
    await typeInto(page, "plan_margin", "20%");
    plan = await page.evaluate(() => Module.getPlan());
    assert.equal(plan.margin, "20%");
    assert.equal(plan.inputError, "");
    await waitUntil(page, async () => (await page.evaluate(() => location.hash)).includes("plan_margin=20%25"),
                    { what: "the margin in the link" });
    await clickWidget(page, "plan_search");
    await waitUntil(page, async () => (await page.evaluate(() => Module.getPlan())).hasResult,
                    { frames: 3000, what: "the search result" });
    await waitFrames(page, 3);
    plan = await page.evaluate(() => Module.getPlan());
    // 20 % of 85,027,979,264 B, rounded up: 17,005,595,853 B kept free; every row peaks at or
    // below 68,022,383,411 B.
    assert.equal(plan.deviceBytes, 85027979264);
    assert.equal(plan.marginBytes, 17005595853);
    assert.ok(plan.frontier.length > 0);
    for (const e of plan.frontier) {
      assert.ok(e.peakBytes <= 68022383411, `${e.gpus} GPUs peak ${e.peakBytes}`);
      assert.equal(e.spareBytes, e.headroomBytes - plan.marginBytes);
      assert.ok(e.gpus >= 2 && e.gpus <= 64);
    }
    // The axis spans the searched range, 2 to 64 GPUs.
    assert.equal(plan.axisLowGpus, 2);
    assert.equal(plan.axisHighGpus, 64);
    assert.equal(plan.progressBarDrawn, false);
    assert.match(plan.status, /^searched [0-9,]+ configurations in [0-9]+ ms/);
    await page.screenshot({ path: join(artifacts, "plan-margin.png") });

    // Apply the first row: the tab marks it current instead of saying the configuration changed.
    await clickWidget(page, "plan_first_row");
    await waitUntil(page, async () => (await page.evaluate(() => Module.getPlan())).currentRow === 0,
                    { what: "the applied row recognised" });
    plan = await page.evaluate(() => Module.getPlan());
    assert.equal(plan.changedNote, false);
    const applied = await page.evaluate(() => Module.getConfig());
    assert.equal(applied.parallel.tensor_parallel * applied.parallel.pipeline_parallel *
                 (applied.parallel.data_parallel ?? 1), plan.frontier[0].gpus);
    await page.screenshot({ path: join(artifacts, "plan-applied.png") });
    // Another edit: no row is current any more, and the tab says so.
    await clickWidget(page, "tp_plus");
    await waitUntil(page, async () => (await page.evaluate(() => Module.getPlan())).changedNote,
                    { what: "the change noted" });
    assert.equal((await page.evaluate(() => Module.getPlan())).currentRow, -1);
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });

  test("Timeline headline names the stored activations in flight, the transient and the rest",
       async () => {
    // Llama-3.1-70B, PP 4 x VPP 2, M = 8: the binding stage holds several micro-batch chunks.
    const link = "v=1&model=llama-3.1-70b&tp=8&pp=4&vpp=2&dp=2&sp=1&seq=8192&gbs=16" +
      "&optimizer=distributed-adam&device=h100-80gb";
    const { context, page, consoleErrors } = await openApp(harness, link);
    await clickWidget(page, "tab_timeline");
    await waitUntil(page, async () => (await page.evaluate(() => Module.getTimeline())).peakHeadline,
                    { what: "the timeline headline" });
    await waitFrames(page, 3);
    const report = await page.evaluate(() => Module.getReport());
    const timeline = await page.evaluate(() => Module.getTimeline());
    const stage = report.stages[timeline.stage];
    const gib = (b) => `${(b / 2 ** 30).toFixed(2)} GiB`;
    const inFlight = stage.in_flight_per_chunk.reduce((a, b) => a + b, 0);
    assert.equal(stage.binding_phase, "forward-backward");
    assert.ok(timeline.peakHeadline.startsWith(
      `Peak ${gib(stage.peak_bytes)} = ${gib(stage.stored_activation_bytes)} stored activations of ` +
      `${inFlight} micro-batch chunks in flight (${stage.in_flight_per_chunk.join(" + ")} on 2 chunks)`),
              timeline.peakHeadline);
    if (stage.co_live_transient) {
      assert.ok(timeline.peakHeadline.includes(
        ` + ${gib(stage.co_live_transient_bytes)} transient ${stage.co_live_transient}`), timeline.peakHeadline);
    }
    // Then the moment, the transient named once (peakName names it again at its end).
    const moment = stage.co_live_transient ? timeline.peakName.replace(`, ${stage.co_live_transient}`, "")
                                           : timeline.peakName;
    assert.ok(timeline.peakHeadline.endsWith(` + ${gib(stage.resident_bytes)} resident; at ${moment}`),
              timeline.peakHeadline);
    // The parts are the peak: activations + transient + resident + gaps.
    assert.equal(stage.stored_activation_bytes + stage.co_live_transient_bytes + stage.resident_bytes +
                 stage.gap_bytes, stage.peak_bytes);
    await page.screenshot({ path: join(artifacts, "timeline-headline.png") });
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });
});

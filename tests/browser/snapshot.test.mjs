// Issue 15 items 2-4 in the browser: a PyTorch allocator snapshot (the pickles of
// scripts/make_test_snapshots.py, worked numbers in tests/core/test_snapshot.cpp) dropped on the
// page with a real DataTransfer drop event, or chosen with the Snapshot tab's file button, is read
// in the page (no request leaves it), compared with the derived terms of the stage (the same core
// functions as `stagemem snapshot`), its replayed live-bytes curve drawn over the stage's step
// timeline, and the link carries its summary (never the file): reopening the link shows the same
// comparison. A bad file gives the decoder's error in the UI.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { artifacts, clickWidget, launch, openApp, waitFrames, waitUntil, widgetRect } from "./harness.mjs";

const MiB = 2 ** 20;
const snapshots = new URL("../core/data/snapshots/", import.meta.url);
const bytesOf = (name) => [...readFileSync(new URL(name, snapshots))];

// Llama-3.1-8B on PP 4 (the CLI test's configuration), H100 80 GB, 16 micro-batches: 33 passes.
const link = "v=1&model=llama-3.1-8b&pp=4&gbs=16&device=h100-80gb";

let harness;
before(async () => {
  harness = await launch();
});
after(async () => {
  await harness?.close();
});

// Every request the page makes from now on (a snapshot must never leave the page).
function watchRequests(page) {
  const urls = [];
  page.on("request", (request) => urls.push(request.url()));
  return urls;
}

// A real drop event on the canvas, carrying the file in a DataTransfer (what a user's drag gives).
async function dropFile(page, name, bytes) {
  await page.evaluate(({ name, bytes }) => {
    const file = new File([new Uint8Array(bytes)], name, { type: "application/octet-stream" });
    const data = new DataTransfer();
    data.items.add(file);
    const canvas = document.getElementById("canvas");
    const at = { clientX: 700, clientY: 400, bubbles: true, cancelable: true, dataTransfer: data };
    canvas.dispatchEvent(new DragEvent("dragenter", at));
    canvas.dispatchEvent(new DragEvent("dragover", at));
    canvas.dispatchEvent(new DragEvent("drop", at));
  }, { name, bytes });
}

const snapshotState = (page) => page.evaluate(() => Module.getSnapshot());

// The per-bucket comparison as plain values (to compare a file's with a link's).
const comparison = (s) => ({
  rows: s.rows.map((r) => [r.key, r.measuredBytes, r.derivedBytes, r.match, r.status]),
  verdicts: s.verdicts.map((v) => [v.title, v.buckets]),
  peak: [s.peak.liveBytes, s.peak.event, s.peak.size, s.peak.bucket, s.peak.where, s.peak.comparison],
  lazy: s.lazyStateNote,
  stage: s.stage,
  file: s.file,
});

test("a dropped snapshot is read in the page, compared with the stage, drawn over its timeline, and its link reopens it", async () => {
  const { context, page, consoleErrors } = await openApp(harness, link);
  const requests = watchRequests(page);
  await dropFile(page, "after_step.pickle", bytesOf("after_step.pickle"));
  await waitUntil(page, async () => (await snapshotState(page)).loaded, { what: "the dropped snapshot is loaded" });
  await waitFrames(page, 3);
  const s = await snapshotState(page);
  const report = await page.evaluate(() => Module.getReport());
  assert.equal(s.file, "after_step.pickle");
  assert.equal(s.fromLink, false);
  assert.equal(s.fileBytes, bytesOf("after_step.pickle").length);
  assert.equal((await page.evaluate(() => Module.getUiState())).mainTab, "snapshot");
  // Compared with the stage the timeline shows first: the binding stage.
  assert.equal(s.stage, report.binding_stage);
  // test_snapshot.cpp's worked numbers: params 1 MiB + grads 2 MiB; master + 2 Adam moments 6 MiB;
  // 2 layers x (256 KiB attention + 512 KiB MLP) = 1.5 MiB; 1,000 B without frames; the
  // all-gather buffer was freed before the snapshot; 24 MiB reserved; 11,011,048 B active.
  const measured = Object.fromEntries(s.rows.map((r) => [r.key, r.measuredBytes]));
  assert.deepEqual(measured, {
    "parameter-gradient-buffers": 3 * MiB, "optimizer-state": 6 * MiB, "activations": 1.5 * MiB,
    "all-gather-buffers": 0, "moe-dispatch-buffers": 0, "other": 1000,
  });
  assert.equal(s.reservedBytes, 24 * MiB);
  assert.equal(s.activeBytes, 11_011_048);
  assert.equal(s.optimizerStateSeen, true);
  assert.equal(s.lazyStateNote, "");
  // Derived: each row is the sum of the stage's terms it names (from the report the app shows).
  const stage = report.stages[s.stage];
  for (const row of s.rows) {
    const sum = stage.terms.filter((t) => row.derivedTerms.includes(t.name)).reduce((a, t) => a + t.bytes, 0);
    assert.equal(row.derivedBytes, sum, row.key);
    assert.equal(row.gapBytes, row.measuredBytes - row.derivedBytes, row.key);
  }
  // A toy snapshot against an 8B model: every measured bucket differs, nothing matches.
  const verdict = Object.fromEntries(s.verdicts.map((v) => [v.title, v.buckets]));
  assert.equal(verdict["matches (to the byte)"], "-");
  assert.match(verdict["differs"], /parameter and gradient buffers, optimizer state, activations/);
  // The measured peak: the all-gather alloc at event 21, 15,205,376 B, against the derived peak.
  assert.equal(s.peak.found, true);
  assert.equal(s.peak.event, 21);
  assert.equal(s.peak.liveBytes, 15_205_376);
  assert.equal(s.peak.bucket, "all-gather buffers");
  assert.equal(s.peak.derivedBytes, stage.peak_bytes);
  assert.equal(s.peak.gapBytes, 15_205_376 - stage.peak_bytes);
  assert.match(s.peak.comparison, /^measured peak 15,205,376 B \(14\.5 MiB\) \(event 21 of 24 on device 0, all-gather buffers\) vs derived peak [\d,]+ B \([\d.]+ GiB\) at stage \d, .*: gap \(measured - derived\) -/);
  // The snapshot's segments next to those the allocator replay holds when the stage's reserved
  // peaks (test_snapshot.cpp: 10 large segments of 2 MiB and one of 4 MiB = 24 MiB), by pool and
  // size, each count on one row; the replay's add up to the report's peak reserved.
  const seg = s.segments;
  assert.equal(seg.measured, true);
  assert.equal(seg.derived, true);
  assert.equal(seg.measuredSegments, 11);
  assert.equal(seg.measuredReservedBytes, 24 * MiB);
  assert.equal(seg.derivedReservedBytes, stage.peak_reserved_bytes);
  assert.equal(seg.derivedSegments, stage.allocator.segments_at_reserved_peak.count);
  assert.equal(seg.bySize.reduce((a, r) => a + r.measuredCount, 0), 11);
  assert.equal(seg.bySize.reduce((a, r) => a + r.derivedCount, 0), seg.derivedSegments);
  assert.equal(seg.bySize.reduce((a, r) => a + r.derivedCount * r.bytes, 0), stage.peak_reserved_bytes);
  assert.deepEqual(seg.bySize.filter((r) => r.measuredCount > 0).map((r) => [r.pool, r.bytes, r.measuredCount]),
                   [["large", 4 * MiB, 1], ["large", 2 * MiB, 10]]);
  assert.match(seg.text, /^segments: 11 in the snapshot \(reserved 25,165,824 B \(24\.0 MiB\)\) vs \d+ held by the allocator replay when reserved peaks \(/);
  // Scrolled with the wheel to the segments table at the tab's end, to look at.
  await page.mouse.move(700, 500);
  await page.mouse.wheel(0, 3000);
  await waitFrames(page, 4);
  await page.screenshot({ path: join(artifacts, "snapshot-segments.png") });
  // Read in the page: not one request since the drop.
  assert.deepEqual(requests, []);

  // The link carries the summary as readable measurement entries, never the file.
  const hash = decodeURIComponent(await page.evaluate(() => location.hash));
  assert.match(hash, new RegExp(`&snapshot=after-first-step/${s.stage}=6MiB@optimizer-state\\|after_step\\.pickle`));
  assert.match(hash, new RegExp(`&snapshot=steady-state-peak/${s.stage}=15205376@peak:0:21:24:all-gather-buffers\\|after_step\\.pickle\\|`));
  assert.ok(hash.length < 3000, `the link is ${hash.length} characters`);

  // The measured curve over the derived timeline of the same stage (real clicks on the tab).
  await clickWidget(page, "tab_timeline");
  await waitUntil(page, async () => (await page.evaluate(() => Module.getTimeline())).measured.drawn,
                  { what: "the measured curve is drawn over the timeline" });
  await waitFrames(page, 3);
  const timeline = await page.evaluate(() => Module.getTimeline());
  assert.equal(timeline.stage, s.stage);
  // 24 trace events, fewer than the chart's pixels: one vertex each.
  assert.equal(timeline.measured.points, 24);
  // 14.5 MiB against a derived axis of tens of GiB: its own axis, labelled.
  assert.equal(timeline.measured.ownScale, true);
  assert.ok(timeline.measured.axisTopBytes > 15_205_376);
  assert.match(timeline.measured.legend, /^measured live bytes: after_step\.pickle, device 0/);
  assert.match(timeline.measured.axisNote, /24 recorded allocator events .* not aligned in time/);
  const chart = await widgetRect(page, "timeline_chart");
  assert.ok(timeline.measured.peakX > chart.x && timeline.measured.peakX < chart.x + chart.width);
  assert.ok(timeline.measured.peakY >= chart.y && timeline.measured.peakY < chart.y + chart.height);
  // Event 21 of 24 sits at (21 + 0.5) / 24 of the plot's width: right of the chart's middle.
  assert.ok(timeline.measured.peakX > chart.x + chart.width * 0.6);
  await page.screenshot({ path: join(artifacts, "snapshot-measured-over-derived.png") });

  // Reopen the link in a fresh browser context: the same comparison, without the file.
  const fragment = (await page.evaluate(() => location.hash)).slice(1);
  const fromFile = comparison(s);
  const { context: second, page: reopened, consoleErrors: reopenedErrors } = await openApp(harness, fragment);
  await waitFrames(reopened, 3);
  const again = await snapshotState(reopened);
  assert.equal(again.loaded, true);
  assert.equal(again.fromLink, true);
  assert.equal(again.fileBytes, 0);
  assert.deepEqual(again.curves, []);
  assert.deepEqual(comparison(again), fromFile);
  // The link carries the segment sizes: the reopened tab compares the same segments.
  assert.equal(again.segments.measured, true);
  assert.deepEqual(again.segments.bySize, s.segments.bySize);
  assert.equal(again.segments.text, s.segments.text);
  assert.match(hash, new RegExp(`&snapshot=after-first-step/${s.stage}=2MiB@segments:large:10\\|after_step\\.pickle`));
  assert.deepEqual(await reopened.evaluate(() => Module.getLinkProblems()), []);
  // Its timeline shows the measured peak's level (the curve stays in the file).
  assert.equal((await reopened.evaluate(() => Module.getUiState())).mainTab, "timeline");
  await waitUntil(reopened, async () => (await reopened.evaluate(() => Module.getTimeline())).measured.drawn,
                  { what: "the reopened link's measured peak is drawn" });
  await waitFrames(reopened, 3);
  const reopenedTimeline = await reopened.evaluate(() => Module.getTimeline());
  assert.equal(reopenedTimeline.measured.fromLink, true);
  assert.equal(reopenedTimeline.measured.points, 0);
  // The peak's dot sits where the file's curve put it: event 21 of 24 travels in the link.
  assert.ok(Math.abs(reopenedTimeline.measured.peakX - timeline.measured.peakX) < 0.5);
  assert.ok(Math.abs(reopenedTimeline.measured.peakY - timeline.measured.peakY) < 0.5);
  await reopened.screenshot({ path: join(artifacts, "snapshot-from-link-timeline.png") });
  assert.deepEqual(consoleErrors, []);
  assert.deepEqual(reopenedErrors, []);
  await second.close();
  await context.close();
});

test("the Snapshot tab's file button opens a picker; a snapshot before the first step names the lazy state", async () => {
  const { context, page, consoleErrors } = await openApp(harness, link + "&view.tab=snapshot");
  await waitFrames(page, 3);
  const requests = watchRequests(page);
  const chooser = page.waitForEvent("filechooser", { timeout: 10_000 });
  await clickWidget(page, "snapshot_open");
  const picker = await chooser;
  assert.equal(await picker.element().getAttribute("accept"), ".pickle,.pkl");
  await picker.setFiles(fileURLToPath(new URL("before_step.pickle", snapshots)));
  await waitUntil(page, async () => (await snapshotState(page)).loaded, { what: "the chosen snapshot is loaded" });
  await waitFrames(page, 3);
  const s = await snapshotState(page);
  assert.equal(s.file, "before_step.pickle");
  assert.equal(s.optimizerStateSeen, false);
  assert.match(s.lazyStateNote, /lazily in their first step\(\)/);
  const optimizer = s.rows.find((r) => r.key === "optimizer-state");
  assert.equal(optimizer.measuredBytes, 0);
  assert.equal(optimizer.match, "derived only");
  assert.match(s.verdicts.find((v) => v.title === "derived, not in the snapshot").buckets, /optimizer state/);
  // The last of 7 allocs (event 13) peaks: 3 MiB + 1.5 MiB + 1024 B, no frames.
  assert.equal(s.peak.liveBytes, 4_719_616);
  assert.equal(s.peak.where, "");
  // Its link says the reading precedes the first step.
  const hash = decodeURIComponent(await page.evaluate(() => location.hash));
  assert.match(hash, /&snapshot=after-optimizer-init\/\d+=0@optimizer-state\|before_step\.pickle/);
  assert.deepEqual(requests, []);
  await page.screenshot({ path: join(artifacts, "snapshot-tab-before-step.png") });
  assert.deepEqual(consoleErrors, []);
  await context.close();
});

test("a file that is not a snapshot gives the decoder's error in the UI and changes nothing", async () => {
  const { context, page } = await openApp(harness, link);
  // A pickle that imports (GLOBAL): refused by the reader, nothing executed.
  await dropFile(page, "refused_global.pickle", bytesOf("refused_global.pickle"));
  await waitUntil(page, async () => (await snapshotState(page)).error !== "", { what: "the decoder's error is shown" });
  await waitFrames(page, 3);
  const s = await snapshotState(page);
  assert.equal(s.loaded, false);
  assert.equal(s.errorFile, "refused_global.pickle");
  assert.match(s.error, /^pickle: byte \d+: opcode GLOBAL/);
  const problems = await page.evaluate(() => Module.getLinkProblems());
  assert.equal(problems.length, 1);
  assert.equal(problems[0].field, "refused_global.pickle");
  assert.equal(problems[0].message, s.error);
  assert.equal((await page.evaluate(() => Module.getUiState())).mainTab, "snapshot");
  assert.doesNotMatch(decodeURIComponent(await page.evaluate(() => location.hash)), /snapshot=/);
  // A truncated snapshot names the byte where it ends.
  await dropFile(page, "cut.pickle", bytesOf("after_step.pickle").slice(0, 100));
  await waitUntil(page, async () => (await snapshotState(page)).errorFile === "cut.pickle", { what: "the cut file's error" });
  assert.match((await snapshotState(page)).error, /^pickle: byte \d+/);
  await context.close();
});

test("a dropped file over its kind's limit is refused by its size, before the page reads it", async () => {
  const { context, page } = await openApp(harness, link);
  const before = await page.evaluate(() => location.hash);
  // 64 MiB + 1 byte of zeros named .json: a text file, whose limit is a memory log's 64 MiB
  // (src/app/load_input.h file_limit, the native reader's limit for the same file).
  await page.evaluate(() => {
    const file = new File([new ArrayBuffer(64 * 1024 * 1024 + 1)], "big.json");
    const data = new DataTransfer();
    data.items.add(file);
    const canvas = document.getElementById("canvas");
    const at = { clientX: 700, clientY: 400, bubbles: true, cancelable: true, dataTransfer: data };
    canvas.dispatchEvent(new DragEvent("drop", at));
  });
  await waitUntil(page, async () => (await page.evaluate(() => Module.getLinkProblems())).length > 0,
                  { what: "the refusal in the banner" });
  const problems = await page.evaluate(() => Module.getLinkProblems());
  assert.equal(problems.length, 1);
  assert.equal(problems[0].field, "big.json");
  assert.equal(problems[0].message,
               "'big.json' is 67108865 bytes (64.0 MiB), larger than the limit of 67108864 bytes " +
               "(64 MiB): not read");
  assert.equal(await page.evaluate(() => location.hash), before);  // nothing loaded
  await context.close();
});

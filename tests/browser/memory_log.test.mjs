// Issue 15: Megatron's memory report lines pasted anywhere on the page (a real Ctrl+V through the
// clipboard) become one cross-check per rank and figure on the rank's stage; the Cross-checks tab
// opens with a one-line verdict first and the link carries the readings (never the log), each
// rank's once in the compact reading= form; a link written before that form still opens.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { artifacts, launch, openApp, waitFrames, waitUntil } from "./harness.mjs";

let harness;
const log = readFileSync(new URL("../cli/data/megatron_memory.log", import.meta.url), "utf8");

before(async () => {
  harness = await launch();
});
after(async () => {
  await harness?.close();
});

test("pasted Megatron memory report lines cross-check every rank on its stage", async () => {
  const { context, page } = await openApp(
      harness, "v=1&model=llama-3.1-8b&tp=2&sp=1&pp=2&dp=2&gbs=16&device=h100-80gb",
      { permissions: ["clipboard-read", "clipboard-write"] });
  await page.evaluate((text) => navigator.clipboard.writeText(text), log);
  await page.mouse.click(900, 600);  // the canvas, on no text field
  await page.keyboard.down("Control");
  await page.keyboard.press("v");
  await page.keyboard.up("Control");
  await waitUntil(page, async () => (await page.evaluate(() => Module.getReport())).cross_checks.length > 0,
                  { what: "the pasted log's readings are cross-checked" });
  const report = await page.evaluate(() => Module.getReport());
  // 4 ranks x 4 figures (allocated, max allocated, reserved, max reserved).
  assert.equal(report.cross_checks.length, 16);
  const ranks = [...new Set(report.cross_checks.map((c) => c.rank))];
  assert.deepEqual(ranks, [0, 1, 4, 5]);
  for (const c of report.cross_checks) assert.equal(c.stage, c.rank >= 4 ? 1 : 0, `rank ${c.rank}`);
  const peak = report.cross_checks.find((c) => c.rank === 4 && c.figure === "max-allocated");
  assert.equal(peak.point, "steady-state-peak");
  assert.equal(peak.measured_bytes, 47000 * 2 ** 20);  // Megatron's MB is MiB
  assert.equal(peak.derived_bytes, report.stages[1].peak_bytes);
  assert.equal(peak.gap_bytes, peak.measured_bytes - peak.derived_bytes);
  await waitFrames(page, 3);
  assert.equal((await page.evaluate(() => Module.getUiState())).mainTab, "cross_checks");
  // The verdict first: the binding peak reading (the largest max allocated, rank 1's 52010 MiB
  // = 50.79 GiB on stage 0) against the derived peak, the gap as a share of the measured figure.
  const top = report.cross_checks.find((c) => c.rank === 1 && c.figure === "max-allocated");
  const gap = Math.abs(top.gap_bytes) / top.measured_bytes * 100;
  const verdict = report.app.crossCheckVerdict;
  assert.equal(verdict,
               `measured 50.8 GiB max allocated on stage 0 (rank 1, after 2 iterations) vs derived ` +
               `${(top.derived_bytes / 2 ** 30).toFixed(1)} GiB: derived is ${gap.toFixed(1)} % ` +
               `${top.gap_bytes > 0 ? "under" : "over"} (15 more readings below)`);
  // "(after 2 iterations)": allocated is read between steps, max allocated covers both steps.
  assert.ok(report.cross_checks.every((c) => c.iteration === 2));
  // The link holds each rank's reading once, compactly (reading=), not its source per figure.
  const hash = decodeURIComponent(await page.evaluate(() => location.hash));
  assert.match(hash, /&reading=r4\/s1\/i2\/l8\/c0\.0\.0\.0=39500MiB,47000MiB,50000MiB,50000MiB@the clipboard(&|$)/);
  assert.equal(hash.split("&reading=").length - 1, 4);
  assert.ok(!hash.includes("measured="), hash);
  await page.screenshot({ path: join(artifacts, "memory-log-cross-checks.png") });
  const config = await page.evaluate(() => Module.getConfig());
  await context.close();

  // The compact link opens the same readings; so does a link written before it (measured=).
  const reopened = await openApp(harness, hash.slice(1));
  assert.deepEqual(await reopened.page.evaluate(() => Module.getConfig()), config);
  await reopened.context.close();
  const oldLink = "v=1&model=llama-3.1-8b&tp=2&sp=1&pp=2&dp=2&gbs=16&device=h100-80gb" +
    "&measured=max-allocated:steady-state-peak/1/r4=47000MiB@Megatron%20memory%20report,%20the%20" +
    "clipboard%20line%208:%20[Rank%204]%20(after%202%20iterations),%20TP%200%20CP%200%20DP%200%20EP%200";
  const old = await openApp(harness, oldLink);
  const oldConfig = await old.page.evaluate(() => Module.getConfig());
  assert.equal(oldConfig.measurements.length, 1);
  assert.equal(oldConfig.measurements[0].bytes, 47000 * 2 ** 20);
  assert.equal(oldConfig.measurements[0].iteration, undefined);
  assert.deepEqual(await old.page.evaluate(() => Module.getLinkProblems()), []);
  await old.context.close();
});

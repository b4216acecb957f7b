// Issue 15: Megatron's memory report lines pasted anywhere on the page (a real Ctrl+V through the
// clipboard) become one cross-check per rank and figure on the rank's stage; the Cross-checks tab
// opens and the link carries the readings (never the log).
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
  // The link holds the readings as measured= entries with their rank and figure.
  const hash = decodeURIComponent(await page.evaluate(() => location.hash));
  assert.match(hash, /measured=max-allocated:steady-state-peak\/1\/r4=47000MiB@Megatron memory report, the clipboard line 8/);
  await page.screenshot({ path: join(artifacts, "memory-log-cross-checks.png") });
  await context.close();
});

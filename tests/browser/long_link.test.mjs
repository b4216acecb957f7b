// Issue 14: a link over the decoder's 16 KiB limit changes nothing on screen: the configuration
// the user had stays, and the banner names the link's length and the limit.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launch, openApp, waitFrames } from "./harness.mjs";

let harness;
before(async () => {
  harness = await launch();
});
after(async () => {
  await harness?.close();
});

test("an over-long pasted link keeps the configuration on screen and says why", async () => {
  const { context, page } = await openApp(harness, "v=1&model=llama-3.1-8b&tp=2&pp=2&device=h100-80gb");
  const before = await page.evaluate(() => Module.getConfig());
  assert.equal(before.parallel.pipeline_parallel, 2);
  const long = "v=1&pp=8&" + "x".repeat(20000) + "=1";
  await page.evaluate((f) => Module.stagememApplyFragment(f), long);
  await waitFrames(page, 3);
  const after = await page.evaluate(() => Module.getConfig());
  assert.deepEqual(after, before, "nothing of the long link was applied");
  const problems = await page.evaluate(() => Module.getLinkProblems());
  assert.equal(problems.length, 1);
  assert.equal(problems[0].field, "url");
  assert.match(problems[0].message, /20\d{3} characters long; the limit is 16384/);
  await context.close();
});

// Browser test of the Plan tab: the plan inputs arrive with the link (plan_* keys), Search runs
// the time-sliced search with a progress bar while frames keep coming, the frontier table appears,
// and clicking its first row applies that configuration (the link follows). The sharding axis
// (plan_sharding) searches as `stagemem plan --sharding` does. Screenshots as artifacts
// (plan-tab.png, plan-sharding.png). Set-up and helpers: harness.mjs.
//   STAGEMEM_CLI   the native CLI (its `plan --json` is the reference for the sharding axis)
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { artifacts, clickWidget, launch, openApp, runCli, waitFrames, waitUntil }
  from "./harness.mjs";

let harness;
before(async () => {
  harness = await launch();
});
after(async () => {
  await harness?.close();
});

// kimi-k3 on MI355X (seq 8192, gbs 896, distributed Muon) over a part of the production space.
const link = "v=1&model=kimi-k3&seq=8192&gbs=896&optimizer=distributed-muon&device=mi355x" +
             "&plan_tp=1,2,4,8&plan_pp=4,8,16&plan_vpp=1,2&plan_mbs=1";

describe("the Plan tab", () => {
  test("searches without stalling frames, shows the frontier and applies a row", async (t) => {
    const { context, page, consoleErrors } = await openApp(harness, link);
    await clickWidget(page, "tab_plan");
    await waitUntil(page, async () => (await page.evaluate(() => Module.getUiState())).mainTab === "plan",
                    { what: "plan tab" });
    // The plan inputs came with the link and stay in it.
    assert.match(await page.evaluate(() => location.hash), /plan_tp=1,2,4,8&plan_pp=4,8,16/);
    const before = await page.evaluate(() => Module.getConfig());
    // The frame-time window holds 120 frames: let the start-up frames leave it first.
    await waitFrames(page, 125);
    const idle = await page.evaluate(() => Module.frameTimeStats());
    t.diagnostic(`longest frame before GL submission before the search: ${idle.userInterfaceMaxMs.toFixed(1)} ms`);
    await clickWidget(page, "plan_search");
    // Frames keep coming while it searches (9 ms of search per frame, plan_tab.h): the CPU part
    // of a frame (events, panels and the search slice, before GL submission) stays well under
    // 16 ms on average. The maximum is reported, not asserted: on a shared, loaded machine the
    // scheduler alone can stretch any frame (the same outliers show natively, search or not).
    let worst = 0, worstMean = 0;
    await waitUntil(page, async () => {
      const stats = await page.evaluate(() => Module.frameTimeStats());
      worst = Math.max(worst, stats.userInterfaceMaxMs);
      worstMean = Math.max(worstMean, stats.userInterfaceMeanMs);
      return page.evaluate(() => Module.getWidgetRect("plan_first_row") !== null);
    }, { frames: 3000, what: "the frontier table" });
    t.diagnostic(`frames before GL submission during the search: mean up to ${worstMean.toFixed(1)} ms, ` +
                 `longest ${worst.toFixed(1)} ms`);
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "plan-tab.png") });
    assert.ok(worstMean < 16, `frames took ${worstMean.toFixed(1)} ms on average before GL submission`);
    await clickWidget(page, "plan_first_row");
    await waitUntil(page, async () => {
      const config = await page.evaluate(() => Module.getConfig());
      return config.parallel.tensor_parallel !== before.parallel.tensor_parallel ||
             config.parallel.pipeline_parallel !== before.parallel.pipeline_parallel;
    }, { what: "the applied configuration" });
    const applied = await page.evaluate(() => Module.getConfig());
    await waitUntil(page, async () => {
      const hash = await page.evaluate(() => location.hash);
      return hash.includes(`&tp=${applied.parallel.tensor_parallel}&`) &&
             hash.includes(`&dp=${applied.parallel.data_parallel}&`) && hash.includes("&plan_tp=");
    }, { what: "the link follows the applied configuration and keeps the plan inputs" });
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });

  test("searches the sharding strategies as an axis, as `stagemem plan --sharding` does",
       async () => {
    // Llama 3.1 70B on H100 80GB at TP 8, PP 1, full recompute, the distributed optimizer: ZeRO-1
    // against ZeRO-3 (Megatron-FSDP, optim_grads_params).
    const search = "v=1&model=llama-3.1-70b&device=h100-80gb&seq=4096&gbs=64" +
                   "&optimizer=distributed-adam";
    const planKeys = "&plan_tp=8&plan_pp=1&plan_mbs=1&plan_recompute=full" +
                     "&plan_sharding=optim,optim_grads_params";
    const getPlan = (page) => page.evaluate(() => Module.getPlan());
    const { context, page, consoleErrors } = await openApp(harness, search + planKeys);
    try {
      await clickWidget(page, "tab_plan");
      const inputs = await getPlan(page);
      assert.equal(inputs.sharding, "optim,optim_grads_params");
      assert.equal(inputs.inputError, "");
      await clickWidget(page, "plan_search");
      await waitUntil(page, async () => (await getPlan(page)).hasResult,
                      { frames: 3000, what: "the plan's result" });
      const plan = await getPlan(page);
      // At each GPU count ZeRO-3 (more headroom) and ZeRO-1 are both on the frontier.
      const strategies = [...new Set(plan.frontier.map((e) => e.sharding))].sort();
      assert.deepEqual(strategies, ["optim", "optim_grads_params"]);
      const cli = JSON.parse(runCli(["plan", "--url", search, "--tp", "8", "--pp", "1",
                                     "--mbs", "1", "--recompute", "full",
                                     "--sharding", "optim,optim_grads_params", "--json"]));
      assert.ok(cli.frontier.length > 0, "the CLI's frontier is not empty");
      assert.equal(plan.minimumGpus, cli.minimum.gpus);
      assert.deepEqual(plan.frontier.map((e) => [e.gpus, e.sharding, e.peakBytes]),
                       cli.frontier.map((e) => [e.gpus, e.sharding, e.peak_bytes]));
      assert.match(await page.evaluate(() => location.hash),
                   /plan_sharding=optim,optim_grads_params/);
      await page.mouse.move(1200, 75);  // no tooltip in the screenshot
      await waitFrames(page, 3);
      await page.screenshot({ path: join(artifacts, "plan-sharding.png") });
      assert.deepEqual(consoleErrors, []);
    } finally {
      await context.close();
    }
    // A strategy the field table does not know is refused, naming the input, when the link loads.
    const bad = await openApp(harness, search + "&plan_sharding=zero9");
    try {
      await clickWidget(bad.page, "tab_plan");
      const refused = await getPlan(bad.page);
      assert.equal(refused.sharding, "zero9");
      assert.match(refused.inputError, /^sharding: 'zero9' is not a known name/);
    } finally {
      await bad.context.close();
    }
  });
});

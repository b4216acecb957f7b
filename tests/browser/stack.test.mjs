// Issue 23, item 1: the software stack in the browser. Typing a stack into its field moves the
// kernel options that are version questions (they follow the stack), an option picked from its
// list is the user's (set here) until "follow the stack" is clicked, and the link carries the
// stack and only the explicit options: the CLI reads the same link to the same stack section of
// the report. Real mouse and keyboard events; a screenshot in the artifacts folder.
//   STAGEMEM_CLI   the native CLI, for the answer the page must match
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { artifacts, clickWidget, launch, openApp, runCli, visibleRect, waitFrames, waitUntil,
  widgetRect }
  from "./harness.mjs";

let harness;
before(async () => {
  harness = await launch();
});
after(async () => {
  await harness?.close();
});

// Qwen3-30B-A3B: 48 MoE layers, so the MoE unpermute option applies.
const qwen = "v=1&model=qwen3-30b-a3b&pp=4&ep=8&dp=8&gbs=64&device=h100-80gb";


const kernel = (report, key) => report.stack.kernels.find((k) => k.key === key);

test("a typed stack moves the options that follow it; a picked one is the user's", async () => {
  const { context, page } = await openApp(harness, qwen);
  try {
    let report = await page.evaluate(() => Module.getReport());
    assert.equal(report.stack.releases, "");
    assert.deepEqual(kernel(report, "moe_unpermute"),
                     { key: "moe_unpermute", value: "probs-in-activation", origin: "stack" });
    // Type Megatron-core 0.12 and an A100 into the stack field.
    const field = await visibleRect(page, "field_stack");
    await page.mouse.click(field.x + 12, field.y + field.height / 2, { delay: 100 });
    await waitFrames(page, 3);
    await page.keyboard.type("megatron-core=0.12,arch=sm80", { delay: 30 });
    await page.keyboard.press("Enter");
    await waitUntil(page, async () =>
      (await page.evaluate(() => Module.getReport())).stack.releases === "megatron-core=0.12,arch=sm80",
      { what: "the typed stack" });
    report = await page.evaluate(() => Module.getReport());
    assert.deepEqual(kernel(report, "moe_unpermute"),
                     { key: "moe_unpermute", value: "legacy-unpermute-with-probs", origin: "stack" });
    assert.deepEqual(kernel(report, "gemm_workspaces"),
                     { key: "gemm_workspaces", value: "sm80", origin: "stack" });
    const rule = report.stack.rules.find((r) => r.rule === "moe-probs-in-activation");
    assert.equal(rule.holds, false);
    assert.equal(rule.from, "0.13");
    // The legacy unpermute keeps the combine input: a term of that name appears.
    assert.ok(report.stages[0].terms.some((t) => t.name.includes("expert outputs before probability weighting")));
    let link = await page.evaluate(() => location.hash);
    assert.match(link, /stack=megatron-core=0\.12,arch=sm80/);
    assert.doesNotMatch(link, /moe_unpermute|gemm_workspaces/, "options that follow the stack stay out");
    // Pick probs-in-activation from the option's list: now the user's, kept in the link.
    const option = await visibleRect(page, "field_moe_unpermute");
    await page.mouse.click(option.x + option.width / 2, option.y + option.height / 2, { delay: 100 });
    await waitFrames(page, 3);
    const entry = await widgetRect(page, "option_moe_unpermute_probs-in-activation");
    await page.mouse.click(entry.x + entry.width / 2, entry.y + entry.height / 2, { delay: 100 });
    await waitUntil(page, async () =>
      kernel(await page.evaluate(() => Module.getReport()), "moe_unpermute").origin === "explicit",
      { what: "the picked option" });
    report = await page.evaluate(() => Module.getReport());
    assert.equal(kernel(report, "moe_unpermute").value, "probs-in-activation");
    link = await page.evaluate(() => location.hash);
    assert.match(link, /moe_unpermute=probs-in-activation/);
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "stack-explicit-option.png") });
    // The CLI reads the page's link to the same stack section.
    assert.deepEqual(JSON.parse(runCli(["report", "--url", link, "--format", "json"])).stack,
                     report.stack);
    // "follow the stack" gives the option back to the stack.
    await visibleRect(page, "option_follow_stack_moe_unpermute");
    await clickWidget(page, "option_follow_stack_moe_unpermute");
    await waitUntil(page, async () =>
      kernel(await page.evaluate(() => Module.getReport()), "moe_unpermute").origin === "stack",
      { what: "follow the stack" });
    report = await page.evaluate(() => Module.getReport());
    assert.equal(kernel(report, "moe_unpermute").value, "legacy-unpermute-with-probs");
    assert.doesNotMatch(await page.evaluate(() => location.hash), /moe_unpermute/);
  } finally {
    await context.close();
  }
});

test("a stack that does not parse names the pair and the known names", async () => {
  const { context, page } = await openApp(harness, qwen + "&stack=jax=0.4");
  try {
    const problems = await page.evaluate(() => Module.getLinkProblems());
    const text = JSON.stringify(problems);
    assert.match(text, /jax=0\.4/);
    assert.match(text, /megatron-core, te, torch, compile, flash-attn, fla, arch/);
  } finally {
    await context.close();
  }
});

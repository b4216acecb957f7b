// Issue 24 in the browser: "what did fp8 change?" on one screen. "Compare with bf16" pins the bf16
// twin of the configuration on screen (config/low_precision_rules.h bf16_twin: no quantised
// recipe, bf16 weights) as the baseline and opens the Compare tab; the page's comparison is what
// `stagemem diff --versus-bf16` prints, and the link carries the twin (base=). For a configuration
// that computes in bf16 the button is disabled and says why. The low-precision options sit under
// fp8_recipe in the Precision group. Real mouse events; screenshots in the artifacts folder.
//   STAGEMEM_CLI   the native CLI (its `diff --versus-bf16` is the reference)
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { artifacts, clickWidget, launch, openApp as openAppIn, runCli, visibleRect, waitFrames,
  waitUntil, widgetRect, withoutApp }
  from "./harness.mjs";

let harness;
const openApp = (fragment, options) => openAppIn(harness, fragment, options);
const getConfig = (page) => page.evaluate(() => Module.getConfig());
const getReport = (page) => page.evaluate(() => Module.getReport());
const getComparison = (page) => page.evaluate(() => Module.getComparison());
const uiState = (page) => page.evaluate(() => Module.getUiState());
const rectOf = (page, name) => page.evaluate((n) => Module.getWidgetRect(n), name);

// Llama 3.1 8B on one stage, per-tensor (current) fp8 scaling; and the same in bf16. (The links
// the app writes leave out the defaults: "#v=1&pp=1&fp8_recipe=tensor".)
const bf16 = "v=1&model=llama-3.1-8b&pp=1&gbs=1024";
const fp8 = `${bf16}&fp8_recipe=tensor`;
// fc2's saved input: one byte per value in fp8 (its column-wise copy) instead of bf16's two, plus
// one fp32 scale_inv per layer-micro-batch alive.
const swigluOutput = "dense MLP: SwiGLU output (fc2 input)";
const encoded = (link) => runCli(["url", "encode", "--url", link]).trim();

before(async () => {
  harness = await launch();
});

after(async () => {
  await harness?.close();
});

// The mouse away from every widget (no tooltip in a screenshot).
async function mouseAway(page) {
  await page.mouse.move(1200, 75);
  await waitFrames(page, 3);
}

describe("Compare with bf16", () => {
  test("pins the bf16 twin, opens Compare, and agrees with `stagemem diff --versus-bf16`",
       async () => {
    const { context, page } = await openApp(fp8);
    try {
      assert.equal((await uiState(page)).bf16ComparisonUnavailable, "", "offered for fp8");
      assert.equal(await getComparison(page), null, "nothing pinned before the click");
      await clickWidget(page, "bf16_baseline");
      await waitUntil(page, async () => (await getComparison(page)) !== null,
                      { what: "the bf16 twin pinned" });
      await waitUntil(page, async () => (await uiState(page)).mainTab === "compare",
                      { what: "the Compare tab opened" });
      assert.equal((await getReport(page)).app.toolbar_message, "Pinned the bf16 twin as A");
      // The configuration on screen is unchanged (B); the baseline (A) is its bf16 twin.
      assert.equal((await getConfig(page)).precision.fp8_recipe, "tensor");
      const comparison = await getComparison(page);
      assert.deepEqual(comparison.settings_changed, [{ field: "fp8_recipe", a: "none", b: "tensor" }]);
      assert.equal(comparison.a.link, encoded(bf16));
      assert.equal(comparison.b.link, encoded(fp8));
      assert.match(comparison.app.changes, /fp8_recipe none → tensor/);

      // The SwiGLU output (fc2's saved input) halves: 1 B per value instead of 2, plus a 4 B
      // scale_inv for each of the 32 layer-micro-batches alive.
      const stage = comparison.stages[0];
      const swiglu = stage.terms.filter((t) => t.name === swigluOutput);
      assert.equal(swiglu.length, 1, `one term named ${swigluOutput}: ${stage.terms.map((t) => t.name)}`);
      const [term] = swiglu;
      assert.equal(term.a_bytes, 3_758_096_384);
      assert.equal(term.b_bytes, term.a_bytes / 2 + 4 * 32, `${term.a_bytes} -> ${term.b_bytes}`);
      assert.equal(term.delta_bytes, term.b_bytes - term.a_bytes);
      assert.ok(term.b_counts_in_peak);

      // The page's numbers and words are the CLI's.
      const fromCli = JSON.parse(runCli(["diff", "--versus-bf16", "--url", fp8, "--format", "json"]));
      assert.deepEqual(withoutApp(comparison), fromCli);

      // The link carries the twin as the baseline: `stagemem diff LINK` reads the same comparison.
      await waitUntil(page, async () => (await page.evaluate(() => location.hash)).includes("&base="),
                      { what: "base= in the link" });
      const link = await page.evaluate(() => location.href);
      assert.match(link, /&base=v=1%26pp=1(&|$)/, "the twin: the link without fp8_recipe");
      assert.equal(comparison.app.baselineLink, link.slice(link.indexOf("base=")).split("&")[0]);
      assert.deepEqual(JSON.parse(runCli(["diff", link, "--json"])), fromCli);

      // The tab's own button is there too, enabled, beside the comparison.
      const own = await widgetRect(page, "compare_bf16");
      assert.ok(own.width > 0);
      await mouseAway(page);
      await page.screenshot({ path: join(artifacts, "fp8-compare-with-bf16.png") });

      // A new page from the link opens the same comparison on the Compare tab.
      const restored = await openApp(link.slice(link.indexOf("#") + 1));
      try {
        await waitUntil(restored.page, async () => (await getComparison(restored.page)) !== null,
                        { what: "the comparison restored from the link" });
        assert.deepEqual(withoutApp(await getComparison(restored.page)), fromCli);
        await waitUntil(restored.page, async () => (await uiState(restored.page)).mainTab === "compare",
                        { what: "a link with base= opens the Compare tab" });
      } finally {
        await restored.context.close();
      }
    } finally {
      await context.close();
    }
  });

  test("the Compare tab's button pins the twin of a delayed-scaling configuration", async () => {
    const delayed = `${bf16}&fp8_recipe=delayed&fp8_amax_history_len=1024`;
    const { context, page } = await openApp(delayed);
    try {
      await clickWidget(page, "tab_compare");
      await waitUntil(page, async () => (await uiState(page)).mainTab === "compare",
                      { what: "Compare tab" });
      await clickWidget(page, "compare_bf16");
      await waitUntil(page, async () => (await getComparison(page)) !== null,
                      { what: "the bf16 twin pinned from the Compare tab" });
      const comparison = await getComparison(page);
      assert.deepEqual(comparison.settings_changed.map((s) => s.field).sort(),
                       ["fp8_amax_history_len", "fp8_recipe"]);
      // Delayed scaling's amax histories exist in B only.
      const amax = comparison.stages[0].terms.find((t) => t.name.includes("amax histor"));
      assert.ok(amax, "an amax history term");
      assert.equal(amax.a_bytes, 0);
      assert.ok(amax.b_bytes > 0);
      const fromCli = JSON.parse(runCli(["diff", "--versus-bf16", "--url", delayed, "--json"]));
      assert.deepEqual(withoutApp(comparison), fromCli);
    } finally {
      await context.close();
    }
  });

  test("is disabled for a bf16 configuration, and says why", async () => {
    const { context, page } = await openApp(bf16);
    try {
      const why = (await uiState(page)).bf16ComparisonUnavailable;
      assert.match(why, /^Nothing here is in low precision/);
      // A real click on the disabled toolbar button pins nothing.
      await clickWidget(page, "bf16_baseline");
      await waitFrames(page, 3);
      assert.equal(await getComparison(page), null);
      assert.equal((await uiState(page)).mainTab, "stages");
      // Its tooltip says why (a disabled button keeps its tooltip).
      const button = await widgetRect(page, "bf16_baseline");
      await page.mouse.move(button.x + button.width / 2, button.y + button.height / 2);
      await waitFrames(page, 40);
      await page.screenshot({ path: join(artifacts, "fp8-bf16-button-disabled.png") });
      // The Compare tab's is disabled too.
      await clickWidget(page, "tab_compare");
      await waitUntil(page, async () => (await uiState(page)).mainTab === "compare",
                      { what: "Compare tab" });
      await clickWidget(page, "compare_bf16");
      await waitFrames(page, 3);
      assert.equal(await getComparison(page), null);
      assert.doesNotMatch(await page.evaluate(() => location.hash), /base=/);
      // A recipe set, it is offered.
      assert.equal(await page.evaluate(() => Module.setConfigValue("fp8_recipe", "tensor")), "");
      await waitUntil(page, async () => (await uiState(page)).bf16ComparisonUnavailable === "",
                      { what: "offered once a recipe is set" });
    } finally {
      await context.close();
    }
  });

  test("the low-precision options sit under fp8_recipe in the Precision group", async () => {
    const { context, page } = await openApp(fp8);
    try {
      // The Precision group starts closed: open it with a click on its header.
      assert.equal(await rectOf(page, "field_fp8_recipe"), null, "the Precision group closed");
      await visibleRect(page, "option_group_precision");
      await clickWidget(page, "option_group_precision");
      // Its fields are published from the next frame on (drawn, perhaps scrolled out of view).
      await waitFrames(page, 3);
      await visibleRect(page, "field_fp8_recipe");
      // Every field's top, read in one frame once the last one is in view (no scrolling between).
      const tops = async (keys) => {
        await visibleRect(page, `field_${keys[keys.length - 1]}`);
        const out = [];
        for (const key of keys) {
          const rect = await rectOf(page, `field_${key}`);
          assert.ok(rect, `field_${key} drawn`);
          out.push(rect.y);
        }
        return out;
      };
      const increasing = (values, what) => {
        for (let i = 1; i < values.length; ++i) assert.ok(values[i - 1] < values[i], `${what}: ${values}`);
      };
      // Per-tensor scaling keeps no amax history: that option shows under delayed scaling only.
      increasing(await tops(["grad_accum_fusion", "fp8_recipe", "bf16_layers_at_start",
                             "bf16_layers_at_end", "fp8_attention"]), "the Precision group's order");
      assert.equal(await rectOf(page, "field_fp8_amax_history_len"), null);
      // The recipe list offers the new recipes; pick delayed with the mouse.
      const field = await visibleRect(page, "field_fp8_recipe");
      await page.mouse.click(field.x + field.width / 2, field.y + field.height / 2, { delay: 100 });
      await waitFrames(page, 3);
      for (const name of ["none", "tensor", "mxfp8", "block", "delayed", "nvfp4"]) {
        assert.ok(await rectOf(page, `option_fp8_recipe_${name}`), `the list offers ${name}`);
      }
      await page.screenshot({ path: join(artifacts, "fp8-recipe-list.png") });
      const delayed = await widgetRect(page, "option_fp8_recipe_delayed");
      await page.mouse.click(delayed.x + delayed.width / 2, delayed.y + delayed.height / 2,
                             { delay: 100 });
      await waitUntil(page, async () => (await getConfig(page)).precision.fp8_recipe === "delayed",
                      { what: "delayed picked" });
      await waitFrames(page, 3);
      // The amax history length appears right under the recipe.
      increasing(await tops(["fp8_recipe", "fp8_amax_history_len", "bf16_layers_at_start",
                             "fp8_attention"]), "with delayed scaling");
      assert.match(await page.evaluate(() => location.hash), /fp8_recipe=delayed/);
      await mouseAway(page);
      await page.screenshot({ path: join(artifacts, "fp8-precision-group.png") });
    } finally {
      await context.close();
    }
  });

  test("the Plan tab searches the recipe as an axis, as `stagemem plan --fp8-recipe` does",
       async () => {
    const search = "v=1&model=llama-3.1-8b&seq=8192&gbs=64&device=h100-80gb";
    const planKeys = "&plan_tp=1,2&plan_pp=1,2&plan_vpp=1&plan_mbs=1&plan_recipes=none,tensor";
    const { context, page, consoleErrors } = await openApp(search + planKeys);
    try {
      await clickWidget(page, "tab_plan");
      assert.equal((await page.evaluate(() => Module.getPlan())).recipes, "none,tensor");
      await clickWidget(page, "plan_search");
      await waitUntil(page, async () => (await page.evaluate(() => Module.getPlan())).hasResult,
                      { frames: 3000, what: "the plan's result" });
      const plan = await page.evaluate(() => Module.getPlan());
      const recipes = new Set(plan.frontier.map((e) => e.fp8Recipe));
      assert.ok([...recipes].every((r) => r === "none" || r === "tensor"), [...recipes].join());
      assert.ok(recipes.has("tensor"), "a tensor-scaled configuration is on the frontier");
      const cli = JSON.parse(runCli(["plan", "--url", search, "--tp", "1,2", "--pp", "1,2",
                                     "--vpp", "1", "--mbs", "1", "--fp8-recipe", "none,tensorwise",
                                     "--json"]));
      assert.equal(plan.minimumGpus, cli.minimum.gpus);
      assert.deepEqual(plan.frontier.map((e) => [e.gpus, e.fp8Recipe, e.peakBytes]),
                       cli.frontier.map((e) => [e.gpus, e.fp8_recipe, e.peak_bytes]));
      assert.match(await page.evaluate(() => location.hash), /plan_recipes=none,tensor/);
      await mouseAway(page);
      await page.screenshot({ path: join(artifacts, "fp8-plan-recipes.png") });
      assert.deepEqual(consoleErrors, []);
    } finally {
      await context.close();
    }
    // A recipe the field table does not know is refused with its allowed names.
    const bad = await openApp(search + "&plan_recipes=fp6");
    try {
      await clickWidget(bad.page, "tab_plan");
      await waitUntil(bad.page, async () =>
        (await bad.page.evaluate(() => Module.getPlan())).inputError.includes("fp6"),
                      { what: "the refused recipe" });
      assert.match((await bad.page.evaluate(() => Module.getPlan())).inputError,
                   /fp8 recipes: 'fp6' is not a known name/);
    } finally {
      await bad.context.close();
    }
  });
});

// Browser tests of issue 22's defaults and fix-its, driven with real mouse, keyboard and clipboard
// events: the page starts from the CLI's defaults, so "DeepSeek-V3 on 1,024 H200s" typed into it
// gives the CLI's answer; a typed world size derives DP; every cross-field error with an obvious
// repair has a button saying exactly what it changes, and clicking it repairs the error; a
// Hugging Face config.json pasted or dropped onto a layout made for another model lands on the
// nearest valid layout, names each change and what it kept, and is estimated at once; -/+ step
// through valid values only and typed numbers apply on Enter or when the field is left; an
// unrecognised paste says so; the device list shows capacities.
//   STAGEMEM_CLI   the native CLI, for the answer the page must match
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { artifacts, clickWidget, launch, openApp as openAppIn, visibleRect, waitFrames, waitUntil, widgetRect }
  from "./harness.mjs";

let harness;
const openApp = (fragment, options) => openAppIn(harness, fragment, options);
const clipboard = ["clipboard-read", "clipboard-write"];
const getConfig = (page) => page.evaluate(() => Module.getConfig());
const getReport = (page) => page.evaluate(() => Module.getReport());
const qwen30b = readFileSync(new URL("../../src/core/model/presets/qwen3-30b-a3b.json", import.meta.url), "utf8");
const qwen235b = readFileSync(new URL("../../src/core/model/presets/qwen3-235b-a22b.json", import.meta.url), "utf8");

before(async () => {
  harness = await launch();
});

after(async () => {
  await harness?.close();
});

async function pressShortcut(page, key) {
  await page.keyboard.down("Control");
  await page.keyboard.press(key);
  await page.keyboard.up("Control");
  await waitFrames(page, 3);
}


// Types `text` into an integer field (its input part, left of the -/+ buttons) and presses Enter.
async function typeInto(page, key, text) {
  const rect = await visibleRect(page, `field_${key}`);
  await page.mouse.click(rect.x + 12, rect.y + rect.height / 2, { delay: 100 });
  await waitFrames(page, 3);
  await pressShortcut(page, "a");
  await page.keyboard.type(text, { delay: 30 });
  await page.keyboard.press("Enter");
  await waitFrames(page, 3);
}

// Opens a list (model, device, a choice) with a click and clicks its entry `name`.
async function pick(page, key, name) {
  const rect = await visibleRect(page, `field_${key}`);
  await page.mouse.click(rect.x + rect.width / 2, rect.y + rect.height / 2, { delay: 100 });
  await waitFrames(page, 3);
  const option = await widgetRect(page, `option_${key}_${name}`);
  await page.mouse.click(option.x + option.width / 2, option.y + option.height / 2, { delay: 100 });
  await waitFrames(page, 3);
}

async function pasteOnCanvas(page, text) {
  await page.evaluate((t) => navigator.clipboard.writeText(t), text);
  await page.mouse.click(1000, 650);  // the chart area, on no text field
  await pressShortcut(page, "v");
}

const valid = async (page) => {
  const report = await getReport(page);
  return report.app.valid && !report.app.stale && report.app.errors.length === 0;
};

describe("one set of defaults, fix-its and steppers", () => {
  test("DeepSeek-V3 on 1,024 H200s typed into the default page gives the CLI's answer", async () => {
    const cli = process.env.STAGEMEM_CLI;
    assert.ok(cli && existsSync(cli), `STAGEMEM_CLI must name the native CLI (got ${cli})`);
    const { context, page, consoleErrors } = await openApp("");
    // The page starts from the CLI's and a link's defaults, on one device, and says so.
    let config = await getConfig(page);
    assert.equal(config.model, "llama-3.1-8b");
    assert.equal(config.parallel.pipeline_parallel, 4);
    assert.equal(config.training.sequence_length, 4096);
    assert.equal(config.optimizer.kind, "adam");
    assert.equal(config.device.preset, "h100-80gb");
    assert.equal(await page.evaluate(() => location.hash), "#v=1&device=h100-80gb");
    let report = await getReport(page);
    assert.equal(report.app.settings, "seq 4,096 | mbs 1, gbs 1,024 (1,024 micro-batches) | " +
                 "recompute none | adam (not distributed) | bf16 weights, fp32 grads | 1f1b");
    await page.screenshot({ path: join(artifacts, "fixits-default-page.png") });

    await pick(page, "model", "deepseek-v3");
    await waitUntil(page, async () => (await getConfig(page)).model === "deepseek-v3", { what: "DeepSeek-V3 picked" });
    // Nothing but the model and the device differs from the defaults: nothing was kept to name.
    assert.equal((await getReport(page)).app.kept, "");
    await typeInto(page, "tp", "2");
    await waitUntil(page, async () => (await getConfig(page)).parallel.tensor_parallel === 2, { what: "TP 2" });
    // MoE with TP 2 needs sequence parallelism: the error's one-click fix.
    report = await getReport(page);
    assert.deepEqual(report.app.fixes, ["Enable sequence parallelism"]);
    await clickWidget(page, "field_fix");
    await waitUntil(page, async () => (await getConfig(page)).parallel.sequence_parallel, { what: "SP on" });
    await typeInto(page, "pp", "16");
    await typeInto(page, "ep", "64");
    await typeInto(page, "world", "1,024");
    await pick(page, "device", "h200");
    await waitUntil(page, async () => (await getConfig(page)).device.preset === "h200", { what: "H200 picked" });
    await waitUntil(page, () => valid(page), { what: "a valid report" });
    config = await getConfig(page);
    assert.equal(config.parallel.tensor_parallel, 2);
    assert.equal(config.parallel.pipeline_parallel, 16);
    assert.equal(config.parallel.expert_parallel, 64);
    assert.equal(config.parallel.world_size, 1024);
    assert.equal(config.parallel.data_parallel, 0, "DP derived from the world size");
    report = await getReport(page);
    assert.equal(report.app.world_size, 1024);
    assert.equal(report.app.expert_dp, 1);  // TP 2 x DP 32 / EP 64

    const run = spawnSync(cli, ["check", "--preset", "deepseek-v3", "--tp", "2", "--sp", "--pp", "16",
                                "--ep", "64", "--device", "h200", "--json"],
                          { encoding: "utf8", maxBuffer: 1 << 28 });
    assert.ok(run.status === 0 || run.status === 1, `stagemem check: ${run.stderr}`);
    const fromCli = JSON.parse(run.stdout);
    assert.equal(report.binding_stage, fromCli.binding_stage);
    assert.equal(report.stages.length, fromCli.stages.length);
    for (let i = 0; i < report.stages.length; ++i) {
      assert.equal(report.stages[i].peak_bytes, fromCli.stages[i].peak_bytes, `stage ${i} peak`);
      // The allocator replay gives the same bytes in wasm32 as natively.
      assert.equal(report.stages[i].peak_reserved_bytes, fromCli.stages[i].peak_reserved_bytes,
                   `stage ${i} peak reserved`);
    }
    const peak = report.stages[report.binding_stage].peak_bytes;
    assert.equal(peak, fromCli.stages[fromCli.binding_stage].peak_bytes);
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "fixits-summary-line.png") });
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });

  test("a typed world size derives DP; EP beyond the stage offers DP; never 'expert DP 0'", async () => {
    const { context, page } = await openApp("v=1&model=deepseek-v3&tp=2&sp=1&pp=16&dp=2&device=h200");
    assert.ok(await valid(page));
    await typeInto(page, "ep", "64");
    await waitUntil(page, async () => (await getConfig(page)).parallel.expert_parallel === 64, { what: "EP 64" });
    let report = await getReport(page);
    assert.deepEqual(report.app.errors.map((e) => e.field), ["parallel.ep"]);
    assert.equal(report.app.expert_dp, 0);
    assert.deepEqual(report.app.fixes, ["Set DP to 32 (TP x CP x DP = 64 ranks hold EP 64 x ETP 1)"]);
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "fixits-ep-needs-dp.png") });
    await clickWidget(page, "field_fix");
    await waitUntil(page, () => valid(page), { what: "the DP fix" });
    assert.equal((await getConfig(page)).parallel.data_parallel, 32);
    assert.equal((await getReport(page)).app.expert_dp, 1);
    // DP is explicit now; typing a world size replaces it: DP = 2,048 / (TP 2 x PP 16) = 64.
    await typeInto(page, "world", "2,048");
    await waitUntil(page, async () => (await getConfig(page)).parallel.world_size === 2048, { what: "2,048 GPUs" });
    await waitUntil(page, () => valid(page), { what: "no world-size error" });
    const config = await getConfig(page);
    assert.equal(config.parallel.data_parallel, 0);
    report = await getReport(page);
    assert.equal(report.app.world_size, 2048);
    assert.equal(report.app.expert_dp, 2);
    await context.close();
  });

  test("each fix-it button says what it changes and repairs its error", async () => {
    const cases = [
      ["v=1&model=qwen3-30b-a3b&tp=8&sp=1", "Set TP to 4 (divides 4 KV heads)",
       (c) => c.parallel.tensor_parallel === 4, "fixits-tp.png"],
      ["v=1&model=deepseek-v3&ep=48", "Set EP to 32 (divides 256 routed experts)",
       (c) => c.parallel.expert_parallel === 32],
      ["v=1&model=deepseek-v3&tp=2&sp=1&pp=16&ep=64&dp=2&world=1024",
       "Set DP to 32 (1,024 GPUs / (TP 2 x PP 16 x CP 1))",
       (c) => c.parallel.data_parallel === 0 && c.parallel.world_size === 1024, "fixits-world-dp.png"],
      ["v=1&model=deepseek-v3&tp=2&sp=1&pp=16&ep=64&world=1000",
       "Set world size to 1,024 (a multiple of TP 2 x PP 16 x CP 1 = 32 whose DP holds EP 64 x ETP 1)",
       (c) => c.parallel.world_size === 1024],
      ["v=1&model=mixtral-8x7b&etp=3", "Set ETP to 2 (divides the expert intermediate size 14,336)",
       (c) => c.parallel.expert_tensor_parallel === 2],
      ["v=1&pp=40", "Set PP to 32 (at most the model's 32 layers)", (c) => c.parallel.pipeline_parallel === 32],
      ["v=1&vpp=16", "Set VPP to 8 (PP x VPP within the model's 32 layers)", (c) => c.parallel.virtual_stages === 8],
      ["v=1&dp=3", "Set gbs to 1,026 (a multiple of mbs 1 x DP 3 = 3)", (c) => c.training.global_batch === 1026],
      ["v=1&vpp=2&gbs=6", "Set gbs to 8 (M = 8 micro-batches, a multiple of PP 4 for the interleaved schedule)",
       (c) => c.training.global_batch === 8],
      ["v=1&tp=8&sp=1&seq=4100", "Turn sequence parallelism off", (c) => !c.parallel.sequence_parallel],
      ["v=1&model=qwen3-30b-a3b&tp=4&sp=1&seq=4098", "Set seq to 4,100 (a multiple of TP = 4)",
       (c) => c.training.sequence_length === 4100],
      ["v=1&model=qwen3-30b-a3b&tp=4", "Enable sequence parallelism", (c) => c.parallel.sequence_parallel],
      ["v=1&recompute=full&recompute_layers=40", "Set recompute layers to 32 (the model's 32 layers)",
       (c) => c.training.recompute.layers === 32],
    ];
    for (const [fragment, label, repaired, screenshot] of cases) {
      const { context, page } = await openApp(`${fragment}&device=h200`);
      const report = await getReport(page);
      assert.equal(report.app.errors.length, 1, `${fragment}: ${JSON.stringify(report.app.errors)}`);
      assert.deepEqual(report.app.fixes, [label], fragment);
      if (screenshot) {
        await waitFrames(page, 3);
        await page.screenshot({ path: join(artifacts, screenshot) });
      }
      await clickWidget(page, "field_fix");
      await waitUntil(page, async () => repaired(await getConfig(page)), { what: `${label} applied` });
      await waitUntil(page, () => valid(page), { what: `${fragment} valid after "${label}"` });
      await context.close();
    }
  });

  test("a Qwen3 config pasted onto a TP 8 page is estimated at once, the change named", async () => {
    const { context, page } = await openApp(
        "v=1&model=llama-3.1-70b&tp=8&pp=4&dp=2&sp=1&seq=8192&optimizer=distributed-adam&device=h100-80gb",
        { permissions: clipboard });
    // As saved by transformers: the repository id in _name_or_path names it.
    const saved = qwen30b.replace("{", '{\n  "_name_or_path": "Qwen/Qwen3-30B-A3B",');
    await pasteOnCanvas(page, saved);
    await waitUntil(page, async () => (await getConfig(page)).custom_model !== "", { what: "the pasted config.json" });
    // At once: the first report after the paste is valid (TP 4 divides 4 KV heads), never stale.
    const report = await getReport(page);
    assert.deepEqual(report.app.errors, []);
    assert.equal(report.app.stale, false);
    const config = await getConfig(page);
    assert.equal(config.parallel.tensor_parallel, 4);
    assert.match(config.custom_model, /^name:Qwen3-30B-A3B;/);
    assert.equal(report.app.model_changed, "Changed for Qwen3-30B-A3B: TP 8 -> 4 (divides 4 KV heads)");
    assert.match(report.app.toolbar_message,
                 /^Loaded the clipboard as the custom model Qwen3-30B-A3B; changed TP 8 -> 4 \(divides 4 KV heads\)$/);
    // What carried over from the Llama page unchanged and changes memory is named.
    assert.equal(report.app.kept, "dp=2, sp=1, seq=8192, optimizer=distributed-adam");
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "fixits-qwen3-pasted.png") });
    // Reset: the defaults with this model and device (what the CLI gives for them).
    await clickWidget(page, "model_reset");
    await waitUntil(page, async () => (await getConfig(page)).training.sequence_length === 4096, { what: "reset" });
    const reset = await getConfig(page);
    assert.equal(reset.optimizer.kind, "adam");
    assert.equal(reset.parallel.tensor_parallel, 1);
    assert.equal(reset.parallel.data_parallel, 0);
    assert.match(reset.custom_model, /^name:Qwen3-30B-A3B;/);
    assert.equal(reset.device.preset, "h100-80gb");
    assert.equal((await getReport(page)).app.kept, "");
    await context.close();

    // Dropped as a file without _name_or_path: the file's name names it (not "qwen3_moe").
    const dropped = await openApp("v=1&model=llama-3.1-70b&tp=8&pp=4&sp=1&device=h200");
    const dataTransfer = await dropped.page.evaluateHandle((text) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([text], "qwen3-235b-a22b.json", { type: "application/json" }));
      return transfer;
    }, qwen235b);
    await dropped.page.dispatchEvent("#canvas", "dragover", { dataTransfer });
    await dropped.page.dispatchEvent("#canvas", "drop", { dataTransfer });
    await waitUntil(dropped.page, async () => (await getConfig(dropped.page)).custom_model !== "",
                    { what: "the dropped config.json" });
    assert.match((await getConfig(dropped.page)).custom_model, /^name:qwen3-235b-a22b;/);
    assert.ok(await valid(dropped.page));
    assert.equal((await getReport(dropped.page)).app.model_changed,
                 "Changed for qwen3-235b-a22b: TP 8 -> 4 (divides 4 KV heads)");
    await dropped.context.close();
  });

  test("-/+ step through valid values; typed numbers apply on Enter or when the field is left", async () => {
    const { context, page } = await openApp("v=1&model=llama-3.1-70b&tp=8&pp=4&device=h100-80gb");
    // 64 heads, 8 KV heads, MLP width 28,672 = 2^12 x 7: TP 8 -> 4 -> 2 -> 1, never 7, 6, 5, 3.
    for (const expected of [4, 2, 1]) {
      await clickWidget(page, "tp_minus");
      await waitUntil(page, async () => (await getConfig(page)).parallel.tensor_parallel === expected,
                      { what: `TP ${expected}` });
    }
    await clickWidget(page, "tp_plus");
    await waitUntil(page, async () => (await getConfig(page)).parallel.tensor_parallel === 2, { what: "TP back to 2" });
    // Typing "16" goes through "1": nothing is applied before Enter.
    const pp = await visibleRect(page, "field_pp");
    await page.mouse.click(pp.x + 12, pp.y + pp.height / 2, { delay: 100 });
    await waitFrames(page, 3);
    await pressShortcut(page, "a");
    await page.keyboard.type("1");
    await waitFrames(page, 4);
    assert.equal((await getConfig(page)).parallel.pipeline_parallel, 4, "not applied per keystroke");
    await page.keyboard.type("6");
    await page.keyboard.press("Enter");
    await waitUntil(page, async () => (await getConfig(page)).parallel.pipeline_parallel === 16, { what: "PP 16 on Enter" });
    // Leaving the field applies it too.
    await page.mouse.click(pp.x + 12, pp.y + pp.height / 2, { delay: 100 });
    await waitFrames(page, 3);
    await pressShortcut(page, "a");
    await page.keyboard.type("8");
    await waitFrames(page, 3);
    assert.equal((await getConfig(page)).parallel.pipeline_parallel, 16);
    await page.mouse.click(1000, 650);
    await waitUntil(page, async () => (await getConfig(page)).parallel.pipeline_parallel === 8, { what: "PP 8 on focus loss" });
    // Outside the field's range [1, 1024] it is refused, not clamped (the field says why).
    await typeInto(page, "pp", "2000");
    assert.equal((await getConfig(page)).parallel.pipeline_parallel, 8);
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "fixits-typed-refused.png") });
    // Within it but beyond the model's 80 layers: applied, and the error offers the repair.
    await typeInto(page, "pp", "81");
    await waitUntil(page, async () => (await getConfig(page)).parallel.pipeline_parallel === 81, { what: "PP 81" });
    assert.deepEqual((await getReport(page)).app.fixes, ["Set PP to 80 (at most the model's 80 layers)"]);
    await clickWidget(page, "field_fix");
    await waitUntil(page, async () => (await getConfig(page)).parallel.pipeline_parallel === 80, { what: "PP 80" });
    await context.close();

    // EP of DeepSeek-V3 steps through divisors of its 256 experts.
    const moe = await openApp("v=1&model=deepseek-v3&ep=64&device=h200");
    await clickWidget(moe.page, "ep_plus");
    await waitUntil(moe.page, async () => (await getConfig(moe.page)).parallel.expert_parallel === 128, { what: "EP 128" });
    await clickWidget(moe.page, "ep_minus");
    await clickWidget(moe.page, "ep_minus");
    await waitUntil(moe.page, async () => (await getConfig(moe.page)).parallel.expert_parallel === 32, { what: "EP 32" });
    await moe.context.close();
  });

  test("an unrecognised paste says so; the device list shows capacities", async () => {
    const { context, page } = await openApp("", { permissions: clipboard });
    const before = await getConfig(page);
    await pasteOnCanvas(page, "hello team, the run OOMs at step 3");
    await waitUntil(page, async () => (await page.evaluate(() => Module.getLinkProblems())).length > 0,
                    { what: "the banner names the paste" });
    const problems = await page.evaluate(() => Module.getLinkProblems());
    assert.equal(problems[0].field, "the clipboard");
    assert.equal(problems[0].message, "\"hello team, the run OOMs at step 3\" is not a stagemem link " +
                 "(v=1&...), a stagemem JSON, a Hugging Face config.json or Megatron memory report lines");
    assert.deepEqual(await getConfig(page), before, "nothing changed");
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "fixits-unrecognised-paste.png") });
    // The device list: each entry with its capacity ("h200 (139.8 GiB)", drawn; the screenshot).
    const device = await visibleRect(page, "field_device");
    await page.mouse.click(device.x + device.width / 2, device.y + device.height / 2, { delay: 100 });
    await waitFrames(page, 3);
    for (const name of ["h100-80gb", "h200", "b200", "mi300x", "mi355x"]) {
      assert.ok(await page.evaluate((n) => Module.getWidgetRect(`option_device_${n}`), name), name);
    }
    await page.screenshot({ path: join(artifacts, "fixits-device-picker.png") });
    const h200 = await widgetRect(page, "option_device_h200");
    await page.mouse.click(h200.x + h200.width / 2, h200.y + h200.height / 2, { delay: 100 });
    await waitUntil(page, async () => (await getConfig(page)).device.preset === "h200", { what: "h200 picked" });
    assert.match((await getReport(page)).app.verdict, / of 139\.8 GiB/);
    await context.close();
  });
});

describe("Megatron DDP's gradient buckets (issue 26)", () => {
  test("overlap_grad_reduce clicked and ddp_bucket_size typed move rank 0's optimizer shards, as the CLI's", async () => {
    const cli = process.env.STAGEMEM_CLI;
    assert.ok(cli && existsSync(cli), `STAGEMEM_CLI must name the native CLI (got ${cli})`);
    const { context, page, consoleErrors } = await openApp("#v=1&model=qwen3-30b-a3b&pp=4&ep=16&dp=16&optimizer=distributed-adam");
    const before = await getReport(page);
    assert.ok(before.stages[0].allocator.resident_tensors > 0, "the resident terms are replayed tensor by tensor");
    // The sharding group starts closed: opened with a click on its header, then the checkbox.
    await visibleRect(page, "option_group_sharding");
    await clickWidget(page, "option_group_sharding");
    await waitFrames(page, 3);
    const box = await visibleRect(page, "field_overlap_grad_reduce");
    await page.mouse.click(box.x + box.height / 2, box.y + box.height / 2, { delay: 100 });
    await waitFrames(page, 3);
    await typeInto(page, "ddp_bucket_size", "1000000");
    await waitUntil(page, async () => (await getConfig(page)).sharding?.ddp_bucket_size === 1000000);
    const config = await getConfig(page);
    assert.equal(config.sharding.overlap_grad_reduce, true);
    await waitUntil(page, () => valid(page));
    await page.screenshot({ path: join(artifacts, "ddp-buckets.png") });
    const after = await getReport(page);
    // Buckets exist only on pipeline rank 0: its shards (and so its tensors) move, the others not.
    assert.notEqual(after.stages[0].allocator.resident_tensors, before.stages[0].allocator.resident_tensors);
    assert.equal(after.stages[1].allocator.resident_tensors, before.stages[1].allocator.resident_tensors);
    const fromCli = JSON.parse(spawnSync(cli, ["report", "--url",
      "v=1&model=qwen3-30b-a3b&pp=4&ep=16&dp=16&optimizer=distributed-adam&overlap_grad_reduce=1&ddp_bucket_size=1000000", "--json"],
      { encoding: "utf8" }).stdout);
    for (let i = 0; i < after.stages.length; ++i) {
      assert.equal(after.stages[i].peak_reserved_bytes, fromCli.stages[i].peak_reserved_bytes, `stage ${i}`);
      assert.equal(after.stages[i].allocator.resident_tensors, fromCli.stages[i].allocator.resident_tensors);
    }
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });
});

describe("Garbage collection under a per-process memory fraction (issue 26)", () => {
  test("the fraction and threshold typed into the allocator group collect cached segments, as the CLI's", async () => {
    const cli = process.env.STAGEMEM_CLI;
    assert.ok(cli && existsSync(cli), `STAGEMEM_CLI must name the native CLI (got ${cli})`);
    const link = "v=1&model=llama-3.1-8b&pp=4&gbs=64&device=h100-80gb";
    const { context, page, consoleErrors } = await openApp("#" + link);
    const before = await getReport(page);
    assert.equal(before.stages[0].allocator.segments_released_by_gc, 0);
    // The allocator group starts closed: opened with a click on its header, then both fields typed.
    await visibleRect(page, "option_group_allocator");
    await clickWidget(page, "option_group_allocator");
    await waitFrames(page, 3);
    await typeInto(page, "per_process_memory_fraction", "0.75");
    await waitUntil(page, async () => (await getConfig(page)).allocator?.per_process_memory_fraction === 0.75);
    await typeInto(page, "garbage_collection_threshold", "0.5");
    await waitUntil(page, async () => (await getConfig(page)).allocator?.garbage_collection_threshold === 0.5);
    await waitUntil(page, () => valid(page));
    await page.screenshot({ path: join(artifacts, "allocator-gc.png") });
    const after = await getReport(page);
    // setMemoryFraction: floor(0.75 x 85,027,979,264 B) is what the allocator may reserve.
    assert.equal(after.stages[0].allocator.device_limit_bytes, 63770984448);
    const fromCli = JSON.parse(spawnSync(cli, ["report", "--url",
      link + "&per_process_memory_fraction=0.75&garbage_collection_threshold=0.5", "--json"],
      { encoding: "utf8" }).stdout);
    for (let i = 0; i < after.stages.length; ++i) {
      assert.ok(after.stages[i].allocator.segments_released_by_gc > 0, `stage ${i} collects`);
      assert.equal(after.stages[i].allocator.segments_released_by_gc,
                   fromCli.stages[i].allocator.segments_released_by_gc, `stage ${i}`);
      assert.equal(after.stages[i].peak_reserved_bytes, fromCli.stages[i].peak_reserved_bytes);
    }
    assert.ok(after.stages[0].peak_reserved_bytes < before.stages[0].peak_reserved_bytes);
    assert.deepEqual(consoleErrors, []);
    await context.close();
  });
});

// One report schema: the app's Download JSON (Module.getReportJson, the same writer the toolbar
// uses) is byte-identical to `stagemem report --json` of the native CLI for the same link.
//   STAGEMEM_CLI   the native CLI (scripts/test.sh builds it in the native-asan preset first)
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { launch, openApp } from "./harness.mjs";

let harness;
before(async () => {
  harness = await launch();
});
after(async () => {
  await harness?.close();
});

test("the app and the CLI write byte-identical report JSON for the same configuration", async () => {
  const cli = process.env.STAGEMEM_CLI;
  assert.ok(cli && existsSync(cli), `STAGEMEM_CLI must name the native CLI (got ${cli})`);
  for (const fragment of [
    "v=1&model=kimi-k3&pp=8&ep=28&seq=8192&gbs=896&recompute=full&optimizer=distributed-muon&device=mi355x",
    "v=1&model=deepseek-v3&tp=2&sp=1&pp=16&ep=64&device=h200&gap=runtime-context=512MiB@nvidia-smi%2C%20idle",
  ]) {
    const { context, page } = await openApp(harness, fragment);
    const fromApp = await page.evaluate(() => Module.getReportJson());
    const fromCli = execFileSync(cli, ["report", "--json", "--url", `#${fragment}`], {
      encoding: "utf8", maxBuffer: 1 << 28,
    });
    const parsed = JSON.parse(fromApp);
    assert.equal(parsed.schema_version, 1);
    assert.ok(parsed.stages.length > 0, `${fragment}: the app computed a report`);
    for (const stage of parsed.stages) {
      const live = stage.terms.filter((t) => t.counts_in_peak).reduce((sum, t) => sum + t.bytes, 0);
      assert.equal(live, stage.peak_bytes, `stage ${stage.index}: live terms sum to the peak`);
    }
    assert.equal(fromApp, fromCli, `${fragment}: app and CLI JSON differ`);
    await context.close();
  }
});

// Link -> JSON -> link: `url decode` writes a configuration that `--config` reads back to the
// same link, and `report --url` and `report --config` print the same report.
// Usage: node check_url_round_trip.mjs STAGEMEM HF_CONFIG.json
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import assert from "node:assert/strict";

const cli = process.argv[2];
const run = (...args) => execFileSync(cli, args, { encoding: "utf8", maxBuffer: 1 << 28 });
const dir = mkdtempSync(join(tmpdir(), "stagemem-"));
const flag_sets = [
  ["--preset", "kimi-k3", "--production-layout", "--seq", "8192", "--gbs", "896", "--device", "h200",
   "--measured", "after-first-step/0=141.1GiB@torch.cuda.memory_allocated, run 17",
   "--gap", "runtime-context=512MiB@nvidia-smi"],
  ["--preset", "deepseek-v3", "--tp", "2", "--sp", "--pp", "16", "--ep", "8",
   "--layout-string", "Et*3|(tt|)*29,m|L", "--optimizer", "distributed-muon", "--no-muon-routers"],
  ["--hf-config", process.argv[3], "--pp", "2"],
  // A Megatron memory log's readings: each rank's figures as one compact reading= key.
  ["--preset", "llama-3.1-8b", "--tp", "2", "--sp", "--pp", "2", "--dp", "2", "--gbs", "16",
   "--memory-log", join(dirname(process.argv[3]), "megatron_memory.log")],
];
for (const flags of flag_sets) {
  const link = run("url", "encode", ...flags).trim();
  assert.ok(link.startsWith("#v=1&"), link);
  if (flags.includes("--memory-log")) {
    // 4 ranks x 4 figures: 4 reading= keys, no source text repeated per figure.
    assert.equal(link.split("&reading=").length - 1, 4, link);
    assert.ok(!link.includes("&measured=") && !link.includes("Megatron"), link);
  }
  const json = run("url", "decode", `https://wiki.example/stagemem/${link}`);
  const file = join(dir, "config.json");
  writeFileSync(file, json);
  assert.equal(run("url", "encode", "--config", file).trim(), link, "link -> JSON -> link");
  assert.equal(run("report", "--config", file, "--json"), run("report", "--url", link, "--json"),
               "the same report from the link and from its JSON");
  console.log(`${link.length} characters: ${link.slice(0, 80)}...`);
}

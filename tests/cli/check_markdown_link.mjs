// The Markdown a wiki page gets (`report --format markdown`, the app's Copy as Markdown) carries
// the link of its configuration: pasted back (`report --url`), it gives the same configuration
// and the same report, byte for byte, as the flags it came from.
// Usage: node check_markdown_link.mjs STAGEMEM
import { execFileSync } from "node:child_process";
import assert from "node:assert/strict";

const cli = process.argv[2];
const run = (...args) => execFileSync(cli, args, { encoding: "utf8", maxBuffer: 1 << 28 });
const flag_sets = [
  ["--preset", "deepseek-v3", "--tp", "2", "--sp", "--pp", "16", "--ep", "64", "--dp", "32",
   "--seq", "4096", "--gbs", "1024", "--recompute", "selective", "--recompute-modules",
   "core_attn,moe_act", "--weights", "fp8-block", "--fp8-recipe", "block",
   "--optimizer", "distributed-adam", "--device", "h200"],
  ["--pp", "4", "--vpp", "2", "--dp", "4", "--seq", "8192", "--mbs", "2", "--gbs", "64",
   "--recompute", "full", "--recompute-method", "block", "--recompute-layers", "2",
   "--grads", "bf16", "--dropout", "--kda-backend", "eager", "--device", "h100-80gb"],
];
for (const flags of flag_sets) {
  const markdown = run("report", "--format", "markdown", ...flags);
  const found = markdown.match(/Configuration \(stagemem link fragment\): `([^`]+)`/);
  assert.ok(found, `no link in:\n${markdown}`);
  const link = found[1];
  for (const line of ["- Schedule: ", "- Recompute: ", "- Precision: ", "- Optimizer: ",
                      "- Training: sequence "]) {
    assert.ok(markdown.includes(line), `${line} missing`);
  }
  assert.equal(run("report", "--url", link, "--json"), run("report", ...flags, "--json"),
               "the link in the Markdown gives the same report as the flags");
  assert.equal(run("url", "encode", "--url", link).trim(), run("url", "encode", ...flags).trim(),
               "the same configuration");
  console.log(`${link.length} characters: ${link.slice(0, 90)}...`);
}

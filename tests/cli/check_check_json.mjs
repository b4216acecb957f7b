// `stagemem check --json` is the check's verdict plus the whole report document
// (docs/report-schema.md, "The check"): its `report` is exactly what `stagemem report --json`
// writes for the same flags, and its verdict fields agree with it.
// Usage: node check_check_json.mjs STAGEMEM
import { spawnSync } from "node:child_process";
import assert from "node:assert/strict";

const cli = process.argv[2];
const run = (args) => spawnSync(cli, args, { encoding: "utf8", maxBuffer: 1 << 28 });

// Llama-3.1-8B at PP 2 x VPP 2 on an H200 fits (exit 0); on 1 GB nothing fits (exit 1).
for (const [flags, exit] of [[["--device", "h200", "--pp", "2", "--vpp", "2", "--gbs", "8"], 0],
                             [["--device-bytes", "1000000000"], 1]]) {
  const check = run(["check", "--json", ...flags]);
  assert.equal(check.status, exit, `check ${flags.join(" ")}: exit ${check.status}\n${check.stderr}`);
  const report = run(["report", "--json", ...flags]);
  assert.equal(report.status, 0, report.stderr);
  const c = JSON.parse(check.stdout);
  const r = JSON.parse(report.stdout);
  assert.equal(c.schema_version, r.schema_version);
  assert.equal(c.kind, "check");
  assert.deepEqual(c.report, r, "check's report is report --json's document");
  assert.equal(c.model, r.model);
  assert.deepEqual(c.device, { name: r.device.name, bytes: r.device.bytes });
  assert.equal(c.binding_stage, r.binding_stage);
  assert.equal(c.fits, r.stages.every((s) => s.headroom_bytes >= 0));
  assert.equal(c.fits, exit === 0);
  assert.equal(c.stages.length, r.stages.length);
  c.stages.forEach((s, i) => {
    const full = r.stages[i];
    assert.equal(s.index, full.index);
    // The layers as text: one first-last range per virtual chunk, joined by ",".
    assert.equal(s.layers, full.layers.map((l) => `${l.first}-${l.first + l.count - 1}`).join(","));
    assert.equal(s.peak_bytes, full.peak_bytes);
    assert.equal(s.headroom_bytes, full.headroom_bytes);
    assert.equal(s.fits, full.headroom_bytes >= 0);
    // The five largest terms that count in the peak, largest first.
    const largest = full.terms.filter((t) => t.counts_in_peak && t.bytes > 0)
      .sort((a, b) => b.bytes - a.bytes).slice(0, 5);
    assert.deepEqual(s.largest_terms.map((t) => t.bytes), largest.map((t) => t.bytes));
    for (const t of s.largest_terms) assert.ok(full.terms.some((u) => u.name === t.name && u.family === t.family));
  });
  if (flags.includes("--vpp")) assert.equal(c.stages[0].layers, "0-7,16-23");
}
console.log("check --json: the verdict and report --json's document agree");

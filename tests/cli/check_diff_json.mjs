// `stagemem diff A B --json` (docs/report-schema.md, "The diff") agrees with `stagemem report
// --json` of each side: every stage's peaks, every term's bytes of A and of B, the differences
// B - A, and both sides' binding stages; a JSON file, a link and flag groups all name a side.
// Usage: node check_diff_json.mjs STAGEMEM
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";

const cli = process.argv[2];
const run = (args) => spawnSync(cli, args, { encoding: "utf8", maxBuffer: 1 << 28 });
const json = (args) => {
  const r = run(args);
  assert.equal(r.status, 0, `${args.join(" ")}: exit ${r.status}\n${r.stderr}`);
  return JSON.parse(r.stdout);
};

// A side as a JSON file (`url decode` writes one), B as a link.
const dir = mkdtempSync(join(tmpdir(), "stagemem-diff-"));
const aFile = join(dir, "a.json");
const decoded = run(["url", "decode", "#v=1&model=mixtral-8x7b&pp=4&ep=8&device=h100-80gb"]);
assert.equal(decoded.status, 0, decoded.stderr);
writeFileSync(aFile, decoded.stdout);
const bLink = "#v=1&model=mixtral-8x7b&pp=2&ep=8&tp=2&sp=1&device=h100-80gb";

const cases = [
  { diff: ["diff", aFile, bLink, "--json"], a: ["--config", aFile], b: ["--url", bLink] },
  // Flag groups: B's flags apply over A's configuration.
  { diff: ["diff", "--preset", "deepseek-v3", "--tp", "2", "--sp", "--pp", "16", "--ep", "64",
           "--device", "h200", "--", "--tp", "4", "--format", "json"],
    a: ["--preset", "deepseek-v3", "--tp", "2", "--sp", "--pp", "16", "--ep", "64", "--device", "h200"],
    b: ["--preset", "deepseek-v3", "--tp", "4", "--sp", "--pp", "16", "--ep", "64", "--device", "h200"] },
];
for (const c of cases) {
  const d = json(c.diff);
  const a = json(["report", "--json", ...c.a]);
  const b = json(["report", "--json", ...c.b]);
  assert.equal(d.kind, "diff");
  assert.equal(d.schema_version, a.schema_version);
  assert.equal(d.a.binding_stage, a.binding_stage);
  assert.equal(d.b.binding_stage, b.binding_stage);
  assert.equal(d.a.binding_peak_bytes, a.stages[a.binding_stage].peak_bytes);
  assert.equal(d.b.binding_peak_bytes, b.stages[b.binding_stage].peak_bytes);
  assert.equal(d.binding_peak_delta_bytes, d.b.binding_peak_bytes - d.a.binding_peak_bytes);
  assert.equal(d.a.fits, a.stages.every((s) => s.headroom_bytes >= 0));
  assert.equal(d.stages.length, Math.max(a.stages.length, b.stages.length));
  d.stages.forEach((s, i) => {
    const sa = a.stages[i];
    const sb = b.stages[i];
    assert.equal(s.a_peak_bytes, sa ? sa.peak_bytes : 0);
    assert.equal(s.b_peak_bytes, sb ? sb.peak_bytes : 0);
    assert.equal(s.peak_delta_bytes, s.b_peak_bytes - s.a_peak_bytes);
    // Each side's reserved and device figures are its report's (null where unknown or absent).
    assert.equal(s.a_peak_reserved_bytes, sa ? sa.peak_reserved_bytes : null);
    assert.equal(s.b_peak_reserved_bytes, sb ? sb.peak_reserved_bytes : null);
    assert.equal(s.a_device_peak_bytes, sa ? sa.device_peak_bytes : null);
    assert.equal(s.b_device_peak_bytes, sb ? sb.device_peak_bytes : null);
    // Every term of each side exactly once, with its bytes.
    const aTerms = s.terms.filter((t) => t.a_name !== null);
    const bTerms = s.terms.filter((t) => t.b_name !== null);
    assert.deepEqual(aTerms.map((t) => [t.a_name, t.a_bytes]), (sa ? sa.terms : []).map((t) => [t.name, t.bytes]));
    assert.deepEqual(bTerms.map((t) => [t.b_name, t.b_bytes]).sort(),
                     (sb ? sb.terms : []).map((t) => [t.name, t.bytes]).sort());
    for (const t of s.terms) assert.equal(t.delta_bytes, t.b_bytes - t.a_bytes);
    assert.equal(s.changed_terms, s.terms.filter((t) => t.delta_bytes !== 0).length);
  });
  assert.ok(d.settings_changed.length > 0);
}
console.log("diff --json: both sides agree with report --json; differences are B - A");

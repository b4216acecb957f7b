// Runs `stagemem report --json ...` and checks the documented shape of its output:
// stages[] {index, layers, terms[] {name, family, bytes, formula, tag, allocated_at}, peak_bytes},
// binding_stage, device_bytes. Usage: node check_report_json.mjs STAGEMEM [report flags...]
import { execFileSync } from "node:child_process";
import assert from "node:assert/strict";

const [cli, ...flags] = process.argv.slice(2);
const report = JSON.parse(execFileSync(cli, ["report", "--json", ...flags], { encoding: "utf8", maxBuffer: 1 << 28 }));
assert.equal(report.device_bytes, 150109945856, "device_bytes of the h200 preset");
assert.ok(Array.isArray(report.stages) && report.stages.length === 4, "four stages at the default PP 4");
for (const stage of report.stages) {
  for (const key of ["index", "layers", "terms", "peak_bytes"]) assert.ok(key in stage, `stage has ${key}`);
  assert.ok(Number.isInteger(stage.peak_bytes) && stage.peak_bytes > 0);
  for (const term of stage.terms) {
    for (const key of ["name", "family", "bytes", "formula", "tag", "allocated_at"]) {
      assert.ok(key in term, `term ${term.name} has ${key}`);
    }
    assert.ok(Number.isInteger(term.bytes) && term.bytes >= 0, `term ${term.name} has integer bytes`);
  }
}
assert.ok(Number.isInteger(report.binding_stage) && report.binding_stage >= 0 && report.binding_stage < 4);
const peaks = report.stages.map((s) => s.peak_bytes);
assert.equal(report.stages[report.binding_stage].peak_bytes, Math.max(...peaks), "binding stage has the largest peak");
console.log(`report --json: ${report.stages.length} stages, binding stage ${report.binding_stage}`);

// Feeds a hostile corpus of user text (measurement and gap sources: HTML, pipes, formula
// prefixes, quotes, backslashes, Markdown links) through every output format of `report` and
// `sweep` (text, markdown, csv, json) and checks that none of it survives unescaped:
//   markdown: no raw < > " ' outside our own <br>, every '|' inside a row either a cell
//             separator (same count as the header) or backslash-escaped, no raw "<img";
//   csv:      parses as RFC 4180 with the header's column count; no text cell starts a formula
//             (= + - @ tab CR) unless it is a number stagemem computed;
//   json:     parses, and the sources read back exactly as given;
//   text:     no control characters besides line breaks.
// Text with line breaks or control characters cannot get in at all: exit 2 naming the field.
// Usage: node check_hostile_outputs.mjs STAGEMEM
import { spawnSync } from "node:child_process";
import assert from "node:assert/strict";

const cli = process.argv[2];
const sources = [
  "<img src=x onerror=alert(1)>",
  "a|b|c",
  "=cmd|' /C calc'!A0",
  "+1+1",
  "-2+3",
  "@SUM(A1)",
  "say \"hi\", 'x'",
  "back\\|slash",
  "[x](javascript:alert(1))",
  "&lt;script&gt;",
  "`code` *bold* _it_",
];
// One gap per kind and three measurements, so every source is in the output at least once.
const gapKinds = ["runtime-context", "communication-buffers", "allocator-fragmentation",
                  "math-library-workspaces"];
const hostileFlags = [];
sources.forEach((source, i) => {
  if (i < gapKinds.length) hostileFlags.push("--gap", `${gapKinds[i]}/${i % 2}=${i + 1}MiB@${source}`);
  else hostileFlags.push("--measured", `after-first-step/${i % 2}=${i}GiB@${source}`);
});
const base = ["--preset", "llama-3.1-8b", "--pp", "2", "--device", "h200"];

function run(args) {
  const r = spawnSync(cli, args, { encoding: "utf8", maxBuffer: 1 << 28 });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

function checkMarkdown(what, out) {
  assert.ok(!out.includes("<img"), `${what}: raw <img survived`);
  const rows = out.split("\n").filter((line) => line.startsWith("|"));
  assert.ok(rows.length > 2, `${what}: a table`);
  const separators = (line) => {
    let n = 0;
    for (let i = 0; i < line.length; ++i) {
      if (line[i] !== "|") continue;
      let slashes = 0;
      while (i - 1 - slashes >= 0 && line[i - 1 - slashes] === "\\") ++slashes;
      if (slashes % 2 === 0) ++n;
    }
    return n;
  };
  const columns = separators(rows[0]);
  for (const row of rows) {
    assert.equal(separators(row), columns, `${what}: row keeps ${columns - 1} cells: ${row}`);
    const raw = row.replaceAll("<br>", "");
    assert.ok(!/[<>"']/.test(raw), `${what}: raw HTML-significant character in ${row}`);
  }
}

// RFC 4180, whole document: rows of fields.
function parseCsv(text) {
  const rows = [];
  let row = [], field = "", i = 0, quoted = false;
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i += 2; continue; }
      if (c === '"') { quoted = false; ++i; continue; }
      field += c; ++i; continue;
    }
    if (c === '"') {
      assert.equal(field, "", "a quote only opens a field");
      quoted = true; ++i; continue;
    }
    if (c === ",") { row.push(field); field = ""; ++i; continue; }
    if (c === "\n") { row.push(field); rows.push(row); row = []; field = ""; ++i; continue; }
    field += c; ++i;
  }
  assert.ok(!quoted, "an unterminated quoted field");
  if (field !== "" || row.length) { row.push(field); rows.push(row); }
  return rows;
}

function checkCsv(what, out) {
  const rows = parseCsv(out);
  assert.ok(rows.length > 1, `${what}: rows`);
  for (const row of rows) {
    assert.equal(row.length, rows[0].length, `${what}: ${rows[0].length} columns in ${row}`);
    for (const cell of row) {
      const start = cell.trimStart()[0];
      if (start === undefined || cell === "-" || /^-?[0-9]+(\.[0-9]+)?$/.test(cell)) continue;
      assert.ok(!"=+-@\t\r".includes(start), `${what}: cell starts a formula: ${cell}`);
    }
  }
  return rows;
}

function checkText(what, out) {
  assert.ok(!/[\x00-\x09\x0b-\x1f\x7f]/.test(out), `${what}: a control character in text output`);
}

let checked = 0;
// report: every format.
{
  const text = run(["report", ...base, ...hostileFlags]);
  assert.equal(text.status, 0, text.err);
  checkText("report text", text.out);
  for (const s of sources) assert.ok(text.out.includes(s), `report text shows ${s} as written`);
  const md = run(["report", ...base, ...hostileFlags, "--format", "markdown"]);
  assert.equal(md.status, 0, md.err);
  checkMarkdown("report markdown", md.out);
  const csv = run(["report", ...base, ...hostileFlags, "--format", "csv"]);
  assert.equal(csv.status, 0, csv.err);
  const rows = checkCsv("report csv", csv.out);
  // The gap sources are in the formula cells; read back they are exactly what was given.
  for (const s of sources.slice(0, gapKinds.length))
    assert.ok(rows.some((r) => r.some((cell) => cell.includes(`(${s})`))), `report csv keeps ${s}`);
  const json = run(["report", ...base, ...hostileFlags, "--json"]);
  assert.equal(json.status, 0, json.err);
  const report = JSON.parse(json.out);
  const sourcesInJson = report.cross_checks.map((c) => c.source);
  for (const s of sources.slice(gapKinds.length)) assert.ok(sourcesInJson.includes(s), `json keeps ${s}`);
  const formulas = report.stages.flatMap((st) => st.terms.map((t) => t.formula)).join("\n");
  for (const s of sources.slice(0, gapKinds.length)) assert.ok(formulas.includes(s), `json formula keeps ${s}`);
  checked += 4;
}
// sweep: every format, with an invalid point so the error column carries text.
{
  const sweep = ["sweep", ...base, "--seq", "4096,8192", "--tp", "1,3", ...hostileFlags];
  const text = run(sweep);
  assert.equal(text.status, 0, text.err);
  checkText("sweep text", text.out);
  const md = run([...sweep, "--format", "markdown"]);
  assert.equal(md.status, 0, md.err);
  checkMarkdown("sweep markdown", md.out);
  const csv = run([...sweep, "--format", "csv"]);
  assert.equal(csv.status, 0, csv.err);
  checkCsv("sweep csv", csv.out);
  const json = run([...sweep, "--json"]);
  assert.equal(json.status, 0, json.err);
  const parsed = JSON.parse(json.out);
  assert.equal(parsed.points.length, 4);
  assert.ok(parsed.points.some((p) => !p.valid && typeof p.error === "string"));
  checked += 4;
}
// Line breaks and control characters never get in: exit 2 naming the flag.
for (const bad of ["two\nlines", "tab\there", "esc\x1b[31m", "cr\rhere"]) {
  const r = run(["report", ...base, "--gap", `runtime-context=1MiB@${bad}`]);
  assert.equal(r.status, 2, `a source with a control character is refused: ${JSON.stringify(bad)}`);
  assert.match(r.err, /--gap\.source/);
  checked += 1;
}
console.log(`hostile outputs: ${checked} outputs checked, ${sources.length} hostile sources, none survived`);

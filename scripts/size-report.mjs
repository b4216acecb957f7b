// What stagemem.wasm is made of, and what changed between two web builds (scripts/size-report.sh
// runs this with the emsdk on PATH):
//   node scripts/size-report.mjs [--top N] NEW_BUILD [OLD_BUILD]
// A build is a web build folder (out/build/web: stagemem.wasm under src/web, or src/app before
// src/web existed) or the folder holding stagemem.wasm itself. Function names come from the
// symbol map the link writes beside it (emcc --emit-symbol-map: stagemem.js.symbols); without
// one, functions are listed by index only. Each function is attributed to the object file that
// defines it (emnm, the emsdk's llvm-nm, over the build's archives and the app's objects);
// functions found in none of them are Emscripten's system libraries (libc, libc++, libc++abi,
// embind, dlmalloc). Data: the data section's size and gzip size, and the objects with the most
// data (llvm-objdump -h: their DATA sections before linking, so data the linker drops is counted).
// Sizes are bytes: "raw" as stored in the wasm, "gzip" as gzip -9 compresses that part alone
// (parts compress together a little better than alone, so gzip columns do not add up exactly).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";

function usage(message) {
  if (message) console.error(`error: ${message}`);
  console.error("usage: node scripts/size-report.mjs [--top N] NEW_BUILD [OLD_BUILD]");
  process.exit(2);
}

// gzip -9 -n, the tool scripts/build-site.sh writes the .gz copies with (zlib's level 9 differs
// from it by a few bytes in a thousand).
const gzipSize = (bytes) => execFileSync("gzip", ["-9", "-n", "-c"], { input: bytes, maxBuffer: 64 << 20 }).length;

// ---- the wasm binary ----------------------------------------------------------------------

function readU32(bytes, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[at.pos++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (!(byte & 0x80)) return value;
  }
}

function skipName(bytes, at) {
  const length = readU32(bytes, at);
  const name = Buffer.from(bytes.subarray(at.pos, at.pos + length)).toString("utf8");
  at.pos += length;
  return name;
}

function skipLimits(bytes, at) {
  const flags = bytes[at.pos++];
  readU32(bytes, at);
  if (flags & 1) readU32(bytes, at);
}

// A constant expression (a data segment's offset): i32.const or global.get, then end.
function skipConstExpr(bytes, at) {
  for (;;) {
    const opcode = bytes[at.pos++];
    if (opcode === 0x0b) return;
    if (opcode === 0x41 || opcode === 0x23 || opcode === 0x42) readU32(bytes, at);
    else throw new Error(`unexpected opcode 0x${opcode.toString(16)} in a data segment offset`);
  }
}

const sectionNames = ["custom", "type", "import", "function", "table", "memory", "global", "export",
                      "start", "element", "code", "data", "datacount", "tag"];

function parseWasm(bytes) {
  if (bytes.readUInt32LE(0) !== 0x6d736100) throw new Error("not a wasm file");
  const sections = [];
  const functions = [];  // {index, size} of each body, index in the function index space
  const segments = [];   // sizes of the data segments
  let importedFunctions = 0;
  const at = { pos: 8 };
  while (at.pos < bytes.length) {
    const id = bytes[at.pos++];
    const size = readU32(bytes, at);
    const start = at.pos;
    const end = start + size;
    let name = sectionNames[id] ?? `section ${id}`;
    if (id === 0) name = `custom "${skipName(bytes, { pos: start })}"`;
    sections.push({ name, size: end - start, gzip: gzipSize(bytes.subarray(start, end)) });
    const inner = { pos: start };
    if (id === 2) {
      for (let n = readU32(bytes, inner); n > 0; --n) {
        skipName(bytes, inner);
        skipName(bytes, inner);
        const kind = bytes[inner.pos++];
        if (kind === 0) {
          readU32(bytes, inner);
          ++importedFunctions;
        } else if (kind === 1) {
          ++inner.pos;
          skipLimits(bytes, inner);
        } else if (kind === 2) {
          skipLimits(bytes, inner);
        } else if (kind === 3) {
          inner.pos += 2;
        } else {
          readU32(bytes, inner);
        }
      }
    } else if (id === 10) {
      const count = readU32(bytes, inner);
      for (let i = 0; i < count; ++i) {
        const bodyStart = inner.pos;
        const bodySize = readU32(bytes, inner);
        inner.pos += bodySize;
        functions.push({ index: importedFunctions + i, size: inner.pos - bodyStart,
                         body: bytes.subarray(bodyStart, inner.pos) });
      }
    } else if (id === 11) {
      for (let n = readU32(bytes, inner); n > 0; --n) {
        const flags = readU32(bytes, inner);
        if (flags === 2) readU32(bytes, inner);
        if (flags !== 1) skipConstExpr(bytes, inner);
        const length = readU32(bytes, inner);
        inner.pos += length;
        segments.push(length);
      }
    }
    at.pos = end;
  }
  return { sections, functions, segments, importedFunctions };
}

// ---- names and origins --------------------------------------------------------------------

// wasm-opt --print-function-map writes "index:name" with some characters as \xx hex escapes.
function readSymbolMap(path) {
  const names = new Map();
  if (!existsSync(path)) return names;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(colon + 1).replace(/\\([0-9a-fA-F]{2})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)));
    names.set(Number(line.slice(0, colon)), name);
  }
  return names;
}

function findFiles(dir, accept, found = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) findFiles(path, accept, found);
    else if (accept(entry.name, path)) found.push(path);
  }
  return found;
}

// The objects the web app links: the libraries' and the app's own, as CMake compiles them
// (.../CMakeFiles/<target>.dir/<path>.o), each with a short origin ("core/estimate/estimate.cpp").
const targets = { stagemem_core: "core", stagemem_app_ui: "app", stagemem_io: "io", imgui: "imgui",
                  stagemem_app: "web" };
function appObjects(buildDir) {
  if (!buildDir) return [];
  return findFiles(buildDir, (name) => name.endsWith(".o"))
    .map((path) => {
      const match = /CMakeFiles\/([^/]+)\.dir\/(.*)\.o$/.exec(path);
      if (!match || !targets[match[1]]) return null;
      const file = match[2].replace(/^(__\/)+/, "").replace(/^third_party\/imgui\//, "");
      return { path, origin: `${targets[match[1]]}/${file}` };
    })
    .filter(Boolean)
    .sort((a, b) => a.origin.localeCompare(b.origin));
}

// Runs one of the emsdk's tools over all objects at once; its output has a "PATH:" line (emnm)
// or "PATH:\tfile format wasm" line (llvm-objdump) before each object's part.
function perObject(tool, options, objects) {
  const text = execFileSync(tool, [...options, ...objects.map((o) => o.path)],
                            { encoding: "utf8", maxBuffer: 512 << 20, stdio: ["ignore", "pipe", "inherit"] });
  const byPath = new Map(objects.map((o) => [o.path, o]));
  const parts = [];
  let current = null;
  for (const line of text.split("\n")) {
    const header = /^(.*\.o):(\s+file format .*)?$/.exec(line);
    if (header && byPath.has(header[1])) {
      current = { object: byPath.get(header[1]), lines: [] };
      parts.push(current);
    } else if (current) {
      current.lines.push(line);
    }
  }
  return parts;
}

// Name -> origin of each function the objects define (emnm -C: demangled like the symbol map;
// an inline function defined in several objects goes to the first), and each object's data
// bytes (llvm-objdump -h: its DATA section; before linking, so data nothing uses is counted).
function readObjectSymbols(buildDir) {
  const functionOrigins = new Map();
  const objectData = [];
  const objects = appObjects(buildDir);
  if (objects.length === 0) return { functionOrigins, objectData };
  for (const { object, lines } of perObject("emnm", ["--defined-only", "-C"], objects)) {
    for (const line of lines) {
      const fields = /^[0-9a-f]+\s+([A-Za-z])\s+(.*)$/.exec(line);
      if (fields && /[TtWw]/.test(fields[1]) && !functionOrigins.has(fields[2])) {
        functionOrigins.set(fields[2], object.origin);
      }
    }
  }
  for (const { object, lines } of perObject("llvm-objdump", ["-h"], objects)) {
    for (const line of lines) {
      const fields = /^\s*\d+\s+DATA\s+([0-9a-f]+)\s/.exec(line);
      if (fields) objectData.push({ origin: object.origin, size: parseInt(fields[1], 16) });
    }
  }
  return { functionOrigins, objectData };
}

// Groups for the summary: the core by folder, the app, the page, Dear ImGui, system libraries.
function groupOf(origin) {
  if (!origin) return "system libraries (libc, libc++, embind, malloc)";
  if (origin.startsWith("(")) return origin;
  // Coarse groups that mean the same in every build (the core's folders and the app/web split
  // came later): the core, the app with its page, Dear ImGui, the bounded reader.
  const [library] = origin.split("/");
  return { core: "core (src/core)", app: "app and page (src/app, src/web)", web: "app and page (src/app, src/web)",
           imgui: "Dear ImGui", io: "io (src/io)" }[library] ?? library;
}

// ---- one build ----------------------------------------------------------------------------

function locate(build) {
  const dir = resolve(build);
  for (const candidate of [dir, join(dir, "src", "web"), join(dir, "src", "app")]) {
    if (existsSync(join(candidate, "stagemem.wasm"))) return { buildDir: candidate === dir ? null : dir, appDir: candidate };
  }
  usage(`${build}: no stagemem.wasm in it, src/web or src/app`);
}

function loadBuild(build) {
  const { buildDir, appDir } = locate(build);
  const wasm = readFileSync(join(appDir, "stagemem.wasm"));
  const js = existsSync(join(appDir, "stagemem.js")) ? readFileSync(join(appDir, "stagemem.js")) : null;
  const parsed = parseWasm(wasm);
  const names = readSymbolMap(join(appDir, "stagemem.js.symbols"));
  const { functionOrigins, objectData } = readObjectSymbols(buildDir);
  // Without the build's objects nothing can be attributed: every function is "unattributed".
  const unattributed = functionOrigins.size === 0;
  const functions = parsed.functions.map((f) => {
    const name = names.get(f.index) ?? `function #${f.index}`;
    const origin = unattributed ? "(unattributed: no build objects)" : functionOrigins.get(name) ?? null;
    return { name, size: f.size, origin, body: f.body };
  });
  return {
    label: build, appDir, wasm, js, ...parsed, functions, objectData, named: names.size > 0,
    wasmGzip: gzipSize(wasm), jsGzip: js ? gzipSize(js) : NaN,
  };
}

// gzip of a group of functions' bodies together: what they add to the download, about.
function groupSizes(build) {
  const groups = new Map();
  for (const f of build.functions) {
    const key = groupOf(f.origin);
    const group = groups.get(key) ?? { raw: 0, bodies: [] };
    group.raw += f.size;
    group.bodies.push(f.body);
    groups.set(key, group);
  }
  for (const group of groups.values()) group.gzip = gzipSize(Buffer.concat(group.bodies));
  return groups;
}

// ---- printing -----------------------------------------------------------------------------

const number = (v) => (Number.isFinite(v) ? v.toLocaleString("en-US") : "-");
const signed = (v) => (Number.isFinite(v) ? (v > 0 ? "+" : "") + v.toLocaleString("en-US") : "-");
const column = (text, width) => String(text).padStart(width);

function printTable(title, header, rows) {
  console.log(`\n${title}`);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => (i === cells.length - 1 ? String(c) : column(c, widths[i]))).join("  ");
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}

const args = process.argv.slice(2);
let top = 25;
const builds = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--top") {
    top = Number(args[++i]);
    if (!Number.isInteger(top) || top < 1 || top > 1000) usage("--top: an integer in [1, 1000]");
  } else if (args[i].startsWith("--")) {
    usage(`unknown option ${args[i]}`);
  } else {
    builds.push(args[i]);
  }
}
if (builds.length < 1 || builds.length > 2) usage("give one or two builds");
const current = loadBuild(builds[0]);
const previous = builds[1] ? loadBuild(builds[1]) : null;
for (const b of [current, previous].filter(Boolean)) {
  if (!b.named) console.log(`note: ${b.appDir} has no stagemem.js.symbols (link with --emit-symbol-map): functions by index`);
}

const two = (get) => (previous ? [number(get(previous)), number(get(current)), signed(get(current) - get(previous))]
                               : [number(get(current))]);
const columns = previous ? ["old", "new", "change"] : ["bytes"];
console.log(`stagemem size report: new ${current.appDir}${previous ? `, old ${previous.appDir}` : ""}`);

printTable("Files", ["file", ...columns], [
  ["stagemem.wasm raw", ...two((b) => b.wasm.length)],
  ["stagemem.wasm gzip -9", ...two((b) => b.wasmGzip)],
  ["stagemem.js raw", ...two((b) => b.js?.length ?? NaN)],
  ["stagemem.js gzip -9", ...two((b) => b.jsGzip)],
  ["functions (bodies)", ...two((b) => b.functions.length)],
  ["data segments", ...two((b) => b.segments.length)],
]);

const sectionNamesAll = [...new Set([...(previous?.sections ?? []), ...current.sections].map((s) => s.name))];
const sectionOf = (b, name, key) => b.sections.filter((s) => s.name === name).reduce((sum, s) => sum + s[key], 0);
printTable("Sections (raw, and gzip -9 of the section alone)", ["section", ...columns.map((c) => `${c} raw`),
           ...columns.map((c) => `${c} gzip`)],
           sectionNamesAll.map((name) => [name, ...two((b) => sectionOf(b, name, "size")),
                                          ...two((b) => sectionOf(b, name, "gzip"))]));

const groupsNew = groupSizes(current);
const groupsOld = previous ? groupSizes(previous) : new Map();
const groupKeys = [...new Set([...groupsOld.keys(), ...groupsNew.keys()])]
  .sort((a, b) => (groupsNew.get(b)?.raw ?? 0) - (groupsNew.get(a)?.raw ?? 0));
const groupValue = (map, key, field) => map.get(key)?.[field] ?? 0;
printTable("Code by origin (function bodies; gzip -9 of the group's bodies together)",
           ["origin", ...columns.map((c) => `${c} raw`), ...columns.map((c) => `${c} gzip`)],
           groupKeys.map((key) => [key,
             ...(previous ? [number(groupValue(groupsOld, key, "raw")), number(groupValue(groupsNew, key, "raw")),
                             signed(groupValue(groupsNew, key, "raw") - groupValue(groupsOld, key, "raw"))]
                          : [number(groupValue(groupsNew, key, "raw"))]),
             ...(previous ? [number(groupValue(groupsOld, key, "gzip")), number(groupValue(groupsNew, key, "gzip")),
                             signed(groupValue(groupsNew, key, "gzip") - groupValue(groupsOld, key, "gzip"))]
                          : [number(groupValue(groupsNew, key, "gzip"))])]));

// By object file: where a group's change comes from.
// Keyed by group and file name, so that a file moved between folders (src/core/estimate.cpp ->
// src/core/estimate/estimate.cpp, src/app -> src/web) lines up with itself.
const objectKey = (origin) => {
  if (!origin) return "(system libraries)";
  if (origin.startsWith("(")) return origin;
  const group = { core: "core", app: "app", web: "app", imgui: "imgui", io: "io" }[origin.split("/")[0]] ?? origin.split("/")[0];
  return `${group}: ${basename(origin)}`;
};
const byOrigin = (b) => {
  const map = new Map();
  for (const f of b.functions) map.set(objectKey(f.origin), (map.get(objectKey(f.origin)) ?? 0) + f.size);
  return map;
};
const originsNew = byOrigin(current);
if (previous) {
  const originsOld = byOrigin(previous);
  const changes = [...new Set([...originsOld.keys(), ...originsNew.keys()])]
    .map((key) => ({ key, old: originsOld.get(key) ?? 0, now: originsNew.get(key) ?? 0 }))
    .filter((c) => c.old !== c.now)
    .sort((a, b) => Math.abs(b.now - b.old) - Math.abs(a.now - a.old))
    .slice(0, top);
  printTable(`Code by source file: the ${top} largest changes (raw bytes; a renamed file shows as - and +)`,
             ["object", "old", "new", "change"],
             changes.map((c) => [c.key, number(c.old), number(c.now), signed(c.now - c.old)]));
} else {
  printTable(`Code by source file: the ${top} largest`, ["object", "raw"],
             [...originsNew].sort((a, b) => b[1] - a[1]).slice(0, top).map(([key, size]) => [key, number(size)]));
}

const shortName = (name) => (name.length > 110 ? `${name.slice(0, 107)}...` : name);
printTable(`The ${top} largest functions (raw bytes)`, ["raw", "origin", "function"],
           [...current.functions].sort((a, b) => b.size - a.size).slice(0, top)
             .map((f) => [number(f.size), f.origin ?? "system", shortName(f.name)]));

if (previous) {
  const sizesByName = (b) => {
    const map = new Map();
    for (const f of b.functions) map.set(f.name, (map.get(f.name) ?? 0) + f.size);
    return map;
  };
  const oldNames = sizesByName(previous);
  const newNames = sizesByName(current);
  const diffs = [...new Set([...oldNames.keys(), ...newNames.keys()])]
    .map((name) => ({ name, old: oldNames.get(name) ?? 0, now: newNames.get(name) ?? 0 }))
    .filter((d) => d.old !== d.now);
  const growth = diffs.filter((d) => d.now > d.old).sort((a, b) => (b.now - b.old) - (a.now - a.old)).slice(0, top);
  const shrink = diffs.filter((d) => d.now < d.old).sort((a, b) => (a.now - a.old) - (b.now - b.old)).slice(0, top);
  const row = (d) => [number(d.old), number(d.now), signed(d.now - d.old), shortName(d.name)];
  printTable(`Functions that grew most (or are new: old 0), raw bytes`, ["old", "new", "change", "function"], growth.map(row));
  printTable(`Functions that shrank most (or are gone: new 0), raw bytes`, ["old", "new", "change", "function"], shrink.map(row));
}

const dataTotal = (b) => b.segments.reduce((sum, s) => sum + s, 0);
printTable("Data", ["", ...columns], [
  ["data bytes (all segments)", ...two(dataTotal)],
  ["data section gzip -9 alone", ...two((b) => sectionOf(b, "data", "gzip"))],
]);
if (current.objectData.length) {
  const dataOf = (b) => new Map(b.objectData.map((d) => [objectKey(d.origin), d.size]));
  const dataNew = dataOf(current);
  const dataOld = previous ? dataOf(previous) : new Map();
  const keys = [...new Set([...dataOld.keys(), ...dataNew.keys()])]
    .sort((a, b) => Math.max(dataNew.get(b) ?? 0, dataOld.get(b) ?? 0) - Math.max(dataNew.get(a) ?? 0, dataOld.get(a) ?? 0))
    .slice(0, top);
  printTable(`The ${top} objects with the most data (their DATA sections before linking: constants, ` +
             "string literals, tables; raw bytes)", ["object", ...columns],
             keys.map((key) => [key, ...(previous ? [number(dataOld.get(key) ?? 0), number(dataNew.get(key) ?? 0),
                                                     signed((dataNew.get(key) ?? 0) - (dataOld.get(key) ?? 0))]
                                                  : [number(dataNew.get(key) ?? 0)])]));
}

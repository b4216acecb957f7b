// Build-time helper of cmake/EmbedFont.cmake: subsets TrueType fonts to the code points the app
// draws and writes them as C++ byte arrays.
//
//   node cmake/embed_font.mjs OUT.cpp RANGES NAME=FILE.ttf [NAME=FILE.ttf ...]
//   RANGES: comma-separated hex code point ranges, e.g. "20-7E,A0-FF,2212"
//
// Why subset: DejaVu Sans is 760 KB (382 KB gzip), more than the whole app. Dear ImGui only
// rasterises the ranges it is given, so glyphs outside them are dead weight. The subset keeps
// every glyph index (no renumbering) but empties the outlines of glyphs that no kept code point
// reaches (composite glyphs keep their components), writes `loca` in the long format, replaces
// `post` by a version 3 table (no glyph names) and drops the tables stb_truetype does not read
// for ImGui (hinting programs, GPOS/GSUB/kern, MATH, ...). What stb_truetype reads for a kept
// code point is unchanged, so ImGui's atlas is the same pixels; what it never reads is dropped:
//  - `cmap` becomes one (3,10) format 12 subtable (the one stb_truetype chose from DejaVu's
//    cmap, the last Unicode one) mapping exactly the kept code points to their glyph indices;
//  - the TrueType hinting instructions inside the kept glyphs (stb_truetype skips them: it
//    rasterises the outlines unhinted) are removed, the outlines themselves kept byte for byte;
//  - `hmtx` entries of emptied glyphs are zeroed (only drawn glyphs' metrics are read; the last
//    full entry stays, as glyphs past numberOfHMetrics take its advance).
// `name` is kept: it carries the font's copyright and licence notice (DejaVu/Bitstream Vera
// licence: the name is unchanged because no glyph outline is modified, only omitted).
// Limitations: TrueType outlines (glyf) only, no CFF; code points above U+FFFF are not looked up.
import { readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";

const kept_tables = ["OS/2", "cmap", "glyf", "head", "hhea", "hmtx", "loca", "maxp", "name", "post"];

function parse_ranges(text) {
  return text.split(",").map((part) => {
    const [first, last = first] = part.split("-").map((hex) => parseInt(hex, 16));
    if (!(first >= 0 && last >= first && last <= 0xffff)) throw new Error(`bad range '${part}'`);
    return [first, last];
  });
}

function read_tables(font) {
  const tables = new Map();
  const count = font.readUInt16BE(4);
  for (let i = 0; i < count; ++i) {
    const entry = 12 + 16 * i;
    const tag = font.toString("latin1", entry, entry + 4);
    const offset = font.readUInt32BE(entry + 8);
    const length = font.readUInt32BE(entry + 12);
    tables.set(tag, font.subarray(offset, offset + length));
  }
  return tables;
}

// Glyph index of each code point, from the (3,1) format 4 subtable (the BMP map).
function glyph_for_code_point(cmap) {
  const count = cmap.readUInt16BE(2);
  for (let i = 0; i < count; ++i) {
    const platform = cmap.readUInt16BE(4 + 8 * i);
    const encoding = cmap.readUInt16BE(6 + 8 * i);
    const table = cmap.subarray(cmap.readUInt32BE(8 + 8 * i));
    if (platform !== 3 || encoding !== 1 || table.readUInt16BE(0) !== 4) continue;
    const segments = table.readUInt16BE(6) / 2;
    const ends = 14, starts = 16 + 2 * segments, deltas = starts + 2 * segments;
    const range_offsets = deltas + 2 * segments;
    return (code) => {
      for (let s = 0; s < segments; ++s) {
        if (code > table.readUInt16BE(ends + 2 * s)) continue;
        const start = table.readUInt16BE(starts + 2 * s);
        if (code < start) return 0;
        const delta = table.readInt16BE(deltas + 2 * s);
        const range_offset = table.readUInt16BE(range_offsets + 2 * s);
        if (range_offset === 0) return (code + delta) & 0xffff;
        const glyph = table.readUInt16BE(range_offsets + 2 * s + range_offset + 2 * (code - start));
        return glyph === 0 ? 0 : (glyph + delta) & 0xffff;
      }
      return 0;
    };
  }
  throw new Error("no (3,1) format 4 cmap subtable");
}

function glyph_offsets(tables) {
  const long_format = tables.get("head").readInt16BE(50) === 1;
  const glyphs = tables.get("maxp").readUInt16BE(4);
  const loca = tables.get("loca");
  const offsets = [];
  for (let i = 0; i <= glyphs; ++i) {
    offsets.push(long_format ? loca.readUInt32BE(4 * i) : 2 * loca.readUInt16BE(2 * i));
  }
  return offsets;
}

// Components of a composite glyph (numberOfContours < 0), per the glyf table's flag rules.
function components(glyph) {
  const found = [];
  if (glyph.length < 10 || glyph.readInt16BE(0) >= 0) return found;
  let at = 10;
  for (;;) {
    const flags = glyph.readUInt16BE(at);
    found.push(glyph.readUInt16BE(at + 2));
    at += 4 + (flags & 0x0001 ? 4 : 2);
    if (flags & 0x0008) at += 2;
    else if (flags & 0x0040) at += 4;
    else if (flags & 0x0080) at += 8;
    if (!(flags & 0x0020)) return found;
  }
}

// The glyph without its hinting instructions: a simple glyph's instructionLength becomes 0; a
// composite glyph loses WE_HAVE_INSTRUCTIONS (0x0100) and the instructions after its last
// component. Outline points, flags and component records are kept as they are.
function without_instructions(glyph) {
  if (glyph.length < 10) return glyph;
  const contours = glyph.readInt16BE(0);
  if (contours >= 0) {
    const at = 10 + 2 * contours;  // instructionLength, after endPtsOfContours
    const length = glyph.readUInt16BE(at);
    const out = Buffer.concat([glyph.subarray(0, at + 2), glyph.subarray(at + 2 + length)]);
    out.writeUInt16BE(0, at);
    return out;
  }
  const out = Buffer.from(glyph);
  let at = 10;
  let instructions = false;
  for (;;) {
    const flags = out.readUInt16BE(at);
    if (flags & 0x0100) instructions = true;
    out.writeUInt16BE(flags & ~0x0100, at);
    at += 4 + (flags & 0x0001 ? 4 : 2);
    if (flags & 0x0008) at += 2;
    else if (flags & 0x0040) at += 4;
    else if (flags & 0x0080) at += 8;
    if (!(flags & 0x0020)) break;
  }
  return instructions ? out.subarray(0, at) : out;
}

// A cmap with one (3,10) format 12 subtable: the sorted [code point, glyph] pairs as groups of
// consecutive code points with consecutive glyph indices.
function format12_cmap(pairs) {
  const groups = [];
  for (const [code, glyph] of pairs) {
    const last = groups[groups.length - 1];
    if (last && code === last[1] + 1 && glyph === last[2] + (code - last[0])) last[1] = code;
    else groups.push([code, code, glyph]);
  }
  const table = Buffer.alloc(16 + 12 * groups.length);
  table.writeUInt16BE(12, 0);
  table.writeUInt32BE(table.length, 4);
  table.writeUInt32BE(groups.length, 12);
  groups.forEach(([first, last, glyph], i) => {
    table.writeUInt32BE(first, 16 + 12 * i);
    table.writeUInt32BE(last, 20 + 12 * i);
    table.writeUInt32BE(glyph, 24 + 12 * i);
  });
  const header = Buffer.alloc(12);
  header.writeUInt16BE(1, 2);      // version 0, one encoding record
  header.writeUInt16BE(3, 4);      // platform: Microsoft
  header.writeUInt16BE(10, 6);     // encoding: Unicode full repertoire
  header.writeUInt32BE(12, 8);     // the subtable follows the record
  return Buffer.concat([header, table]);
}

// hmtx with the entries of glyphs not kept zeroed (the last long entry stays: its advance is
// every later glyph's).
function kept_hmtx(hmtx, long_metrics, glyphs, keep) {
  const out = Buffer.from(hmtx);
  for (let i = 0; i < glyphs; ++i) {
    if (keep.has(i) || i === long_metrics - 1) continue;
    if (i < long_metrics) out.writeUInt32BE(0, 4 * i);  // advanceWidth, lsb
    else out.writeInt16BE(0, 4 * long_metrics + 2 * (i - long_metrics));  // lsb only
  }
  return out;
}

function checksum(data) {
  const padded = Buffer.concat([data, Buffer.alloc((4 - (data.length % 4)) % 4)]);
  let sum = 0;
  for (let i = 0; i < padded.length; i += 4) sum = (sum + padded.readUInt32BE(i)) >>> 0;
  return sum;
}

function subset(font, ranges) {
  const tables = read_tables(font);
  const lookup = glyph_for_code_point(tables.get("cmap"));
  const offsets = glyph_offsets(tables);
  const glyf = tables.get("glyf");
  const outline = (index) => glyf.subarray(offsets[index], offsets[index + 1]);

  const keep = new Set([0]);  // .notdef
  const pending = [];
  const mapped = new Map();  // kept code point -> glyph
  for (const [first, last] of ranges) {
    for (let code = first; code <= last; ++code) {
      const glyph = lookup(code);
      pending.push(glyph);
      if (glyph !== 0) mapped.set(code, glyph);
    }
  }
  while (pending.length) {
    const index = pending.pop();
    if (keep.has(index)) continue;
    keep.add(index);
    for (const component of components(outline(index))) {
      if (!keep.has(component)) pending.push(component);
    }
  }

  const pieces = [];
  const loca = Buffer.alloc(4 * offsets.length);
  let size = 0;
  for (let i = 0; i + 1 < offsets.length; ++i) {
    loca.writeUInt32BE(size, 4 * i);
    if (!keep.has(i)) continue;
    const data = without_instructions(outline(i));
    const padding = (4 - (data.length % 4)) % 4;
    pieces.push(data, Buffer.alloc(padding));
    size += data.length + padding;
  }
  loca.writeUInt32BE(size, 4 * (offsets.length - 1));

  const head = Buffer.from(tables.get("head"));
  head.writeUInt32BE(0, 8);     // checkSumAdjustment, set once the font is assembled
  head.writeInt16BE(1, 50);     // indexToLocFormat: long offsets
  const post = Buffer.from(tables.get("post").subarray(0, 32));
  post.writeUInt32BE(0x00030000, 0);  // version 3: no glyph names

  const output = new Map(kept_tables.map((tag) => [tag, tables.get(tag)]));
  output.set("glyf", Buffer.concat(pieces));
  output.set("loca", loca);
  output.set("head", head);
  output.set("post", post);
  output.set("cmap", format12_cmap([...mapped].sort((a, b) => a[0] - b[0])));
  output.set("hmtx", kept_hmtx(tables.get("hmtx"), tables.get("hhea").readUInt16BE(34),
                                   tables.get("maxp").readUInt16BE(4), keep));

  const count = output.size;
  const power = 2 ** Math.floor(Math.log2(count));
  const header = Buffer.alloc(12 + 16 * count);
  header.writeUInt32BE(0x00010000, 0);
  header.writeUInt16BE(count, 4);
  header.writeUInt16BE(power * 16, 6);
  header.writeUInt16BE(Math.log2(power), 8);
  header.writeUInt16BE(count * 16 - power * 16, 10);
  const body = [];
  let offset = header.length;
  [...output.keys()].sort().forEach((tag, i) => {
    const data = output.get(tag);
    const entry = 12 + 16 * i;
    header.write(tag, entry, 4, "latin1");
    header.writeUInt32BE(checksum(data), entry + 4);
    header.writeUInt32BE(offset, entry + 8);
    header.writeUInt32BE(data.length, entry + 12);
    const padding = (4 - (data.length % 4)) % 4;
    body.push(data, Buffer.alloc(padding));
    offset += data.length + padding;
  });
  const result = Buffer.concat([header, ...body]);
  const head_offset = header.readUInt32BE(12 + 16 * [...output.keys()].sort().indexOf("head") + 8);
  result.writeUInt32BE((0xb1b0afba - checksum(result)) >>> 0, head_offset + 8);
  return { data: result, glyphs: keep.size };
}

const [out_path, range_text, ...fonts] = process.argv.slice(2);
if (!out_path || !range_text || fonts.length === 0) {
  console.error("usage: node embed_font.mjs OUT.cpp RANGES NAME=FILE.ttf [...]");
  process.exit(2);
}
const ranges = parse_ranges(range_text);
let text = "// Generated by cmake/embed_font.mjs (cmake/EmbedFont.cmake). Do not edit.\n" +
           "// Subsets of fonts from Debian's fonts-dejavu-core; their licence travels in each font's\n" +
           "// `name` table (Bitstream Vera / DejaVu licence, see /usr/share/doc/fonts-dejavu-core).\n" +
           "#include \"embedded_fonts.h\"\n\n";
text += "const ImWchar embedded_font_ranges[] = {\n";
for (const [first, last] of ranges) text += `  0x${first.toString(16)}, 0x${last.toString(16)},\n`;
text += "  0};\n\n";
for (const spec of fonts) {
  const [name, file] = spec.split("=");
  const source = readFileSync(file);
  const { data, glyphs } = subset(source, ranges);
  text += `// ${basename(file)}: ${source.length} bytes, subset to ${glyphs} glyphs, ${data.length} bytes.\n`;
  text += `alignas(4) const unsigned char ${name}_data[${data.length}] = {\n`;
  for (let i = 0; i < data.length; i += 20) {
    text += "  " + [...data.subarray(i, i + 20)].map((b) => `${b},`).join("") + "\n";
  }
  text += "};\n";
  text += `const EmbeddedFont ${name} = {${name}_data, ${data.length}};\n\n`;
}
writeFileSync(out_path, text);

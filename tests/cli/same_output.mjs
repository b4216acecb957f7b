// Two spellings of one request must give one answer: runs `stagemem ARGS... A...` and
// `stagemem ARGS... B...` and fails unless both exit alike and print the same bytes (stdout and
// stderr), and the output is not empty.
// Usage: node same_output.mjs STAGEMEM ARGS... @ A... @ B...
import { spawnSync } from "node:child_process";

const [cli, ...rest] = process.argv.slice(2);
const first = rest.indexOf("@");
const second = rest.indexOf("@", first + 1);
if (first < 0 || second < 0) {
  console.error("usage: node same_output.mjs STAGEMEM ARGS... @ A... @ B...");
  process.exit(2);
}
const common = rest.slice(0, first);
const variants = [rest.slice(first + 1, second), rest.slice(second + 1)];
const [a, b] = variants.map((args) =>
  spawnSync(cli, [...common, ...args], { encoding: "utf8", maxBuffer: 1 << 28 }));
const same = a.status === b.status && a.stdout === b.stdout && a.stderr === b.stderr;
if (!same || a.stdout.length === 0) {
  console.error(`'${variants[0].join(" ")}' and '${variants[1].join(" ")}' differ or are empty:`);
  console.error(`exit ${a.status} vs ${b.status}; stdout ${a.stdout.length} vs ${b.stdout.length} bytes`);
  console.error(a.stderr + b.stderr);
  process.exit(1);
}
console.log(`same output: ${a.stdout.length} bytes, exit ${a.status}`);

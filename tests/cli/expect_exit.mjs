// Runs the CLI and checks its exit code and that its output (stdout + stderr) matches a regular
// expression. ctest's PASS_REGULAR_EXPRESSION ignores the exit code; `check` needs both.
// Usage: node expect_exit.mjs EXIT_CODE REGEX STAGEMEM [arguments...]
// With STAGEMEM_STDIN=FILE in the environment, FILE is the CLI's standard input.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

const [code, pattern, cli, ...args] = process.argv.slice(2);
const input = process.env.STAGEMEM_STDIN ? readFileSync(process.env.STAGEMEM_STDIN) : undefined;
const run = spawnSync(cli, args, { encoding: "utf8", maxBuffer: 1 << 28, input });
const output = `${run.stdout}${run.stderr}`;
process.stdout.write(output);
if (run.status !== Number(code)) {
  console.error(`expect_exit: exit code ${run.status}, expected ${code}`);
  process.exit(1);
}
if (!new RegExp(pattern, "m").test(output)) {
  console.error(`expect_exit: output does not match /${pattern}/`);
  process.exit(1);
}

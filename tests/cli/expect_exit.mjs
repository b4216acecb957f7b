// Runs the CLI and checks its exit code and that its output (stdout + stderr) matches a regular
// expression. ctest's PASS_REGULAR_EXPRESSION ignores the exit code; `check` needs both.
// Usage: node expect_exit.mjs EXIT_CODE REGEX STAGEMEM [arguments...]
// Standard input, from the environment (none: an empty pipe):
//   STAGEMEM_STDIN=FILE        FILE's contents, through a pipe;
//   STAGEMEM_STDIN_FROM=PATH   PATH opened and handed over as the descriptor, never read here
//                              (a device such as /dev/zero);
//   STAGEMEM_STDIN_PIPE=CMD    the output of `sh -c CMD` through a pipe (`yes`: a pipe that
//                              never ends).
// STAGEMEM_WITHIN_SECONDS=S: the run must end within S seconds of wall time (measured here; the
// CLI is killed after 5 S, so an endless read fails the test instead of hanging it).
// An argument `@padded-json:N@` becomes the path of a stagemem JSON configuration of exactly N
// bytes ({"model": "llama-3.1-8b"} and spaces), written for this run in a temporary folder.
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [code, pattern, cli, ...given] = process.argv.slice(2);
let folder;
const args = given.map((arg) => {
  const padded = /^@padded-json:(\d+)@$/.exec(arg);
  if (!padded) return arg;
  folder ??= mkdtempSync(join(tmpdir(), "stagemem-expect-"));
  const bytes = Number(padded[1]);
  const head = '{"model": "llama-3.1-8b"';
  const path = join(folder, `padded-${bytes}.json`);
  writeFileSync(path, head + " ".repeat(Math.max(0, bytes - head.length - 1)) + "}");
  return path;
});
const env = process.env;
let input;
let stdin = "pipe";
let command = cli;
let commandArgs = args;
if (env.STAGEMEM_STDIN) input = readFileSync(env.STAGEMEM_STDIN);
if (env.STAGEMEM_STDIN_FROM) stdin = openSync(env.STAGEMEM_STDIN_FROM, "r");
if (env.STAGEMEM_STDIN_PIPE) {
  command = "sh";
  commandArgs = ["-c", `${env.STAGEMEM_STDIN_PIPE} | "$0" "$@"`, cli, ...args];
}
const within = env.STAGEMEM_WITHIN_SECONDS ? Number(env.STAGEMEM_WITHIN_SECONDS) : undefined;
const started = process.hrtime.bigint();
const run = spawnSync(command, commandArgs, {
  encoding: "utf8",
  maxBuffer: 1 << 28,
  input,
  stdio: [stdin, "pipe", "pipe"],
  timeout: within === undefined ? undefined : within * 5000,
  killSignal: "SIGKILL",
});
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
if (typeof stdin === "number") closeSync(stdin);
if (folder) rmSync(folder, { recursive: true, force: true });
const output = `${run.stdout}${run.stderr}`;
process.stdout.write(output);
if (within !== undefined) {
  console.log(`expect_exit: finished in ${seconds.toFixed(3)} s (at most ${within} s)`);
  if (seconds > within) {
    console.error(`expect_exit: took ${seconds.toFixed(3)} s, more than ${within} s`);
    process.exit(1);
  }
}
if (run.status !== Number(code)) {
  console.error(`expect_exit: exit code ${run.status}, expected ${code}`);
  process.exit(1);
}
if (!new RegExp(pattern, "m").test(output)) {
  console.error(`expect_exit: output does not match /${pattern}/`);
  process.exit(1);
}

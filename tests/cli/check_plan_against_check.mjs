// Every configuration `stagemem plan` reports must pass `stagemem check` (exit 0) and every one it
// rejects as not fitting must fail it (exit 1): the plan and the CI gate share one definition of
// "fits". Runs `plan --all --json` over a small space (some fit, some do not), then `check --url`
// on each configuration's link, and the minimum and frontier of a normal run too.
// Usage: node check_plan_against_check.mjs STAGEMEM
import { spawnSync } from "node:child_process";

const cli = process.argv[2];
const space = ["--preset", "qwen3-30b-a3b", "--device", "h100-80gb", "--seq", "4096", "--gbs", "16",
  "--tp", "1,2", "--pp", "1,2,4", "--ep", "1,8", "--mbs", "1", "--recompute", "none,full",
  "--max-gpus", "32"];
const run = (args) => spawnSync(cli, args, { encoding: "utf8", maxBuffer: 1 << 28 });
const fail = (message) => { console.error(`check_plan_against_check: ${message}`); process.exit(1); };

const all = run(["plan", ...space, "--all", "--json"]);
if (all.status !== 0) fail(`plan --all exited ${all.status}: ${all.stderr}`);
const listed = JSON.parse(all.stdout).configurations;
const frontier = run(["plan", ...space, "--json"]);
if (frontier.status !== 0) fail(`plan exited ${frontier.status}: ${frontier.stderr}`);
const result = JSON.parse(frontier.stdout);
const reported = [result.minimum, ...result.frontier];
let fits = 0, not = 0;
for (const c of [...listed, ...reported]) {
  const check = run(["check", "--url", c.link]);
  const expected = c.fits ? 0 : 1;
  if (check.status !== expected) {
    fail(`${c.link}: plan says fits=${c.fits}, check exited ${check.status}\n${check.stderr}`);
  }
  c.fits ? ++fits : ++not;
}
if (fits === 0 || not === 0) fail(`the space should hold both kinds (fit ${fits}, not ${not})`);
for (const c of reported) if (!c.fits) fail(`reported configuration does not fit: ${c.link}`);
console.log(`check agrees with plan on ${fits} fitting and ${not} not fitting configurations`);

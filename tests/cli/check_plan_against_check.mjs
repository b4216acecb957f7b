// Every configuration `stagemem plan` reports must pass `stagemem check` (exit 0) and every one it
// rejects as not fitting must fail it (exit 1): the plan and the CI gate share one definition of
// "fits". Runs `plan --all --json` over a small space (some fit, some do not), then `check --url`
// on each configuration's link, and the minimum and frontier of a normal run too. With a safety
// margin (--margin 20%, the 80 % rule) "fits" is `check` against the device's bytes minus the
// margin (--device-bytes after the link).
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

// --margin 20%: a configuration fits exactly when check passes on the capacity less the margin.
const margined = run(["plan", ...space, "--margin", "20%", "--all", "--json"]);
if (margined.status !== 0) fail(`plan --margin 20% --all exited ${margined.status}: ${margined.stderr}`);
const marginResult = JSON.parse(margined.stdout);
const usable = marginResult.device.bytes - marginResult.margin_bytes;
if (marginResult.margin !== "20%" || !(marginResult.margin_bytes > 0)) {
  fail(`margin not reported: ${marginResult.margin} ${marginResult.margin_bytes}`);
}
let marginFits = 0, ruledOut = 0;
for (const c of marginResult.configurations) {
  const check = run(["check", "--url", c.link, "--device-bytes", String(usable)]);
  const expected = c.fits ? 0 : 1;
  if (check.status !== expected) {
    fail(`${c.link}: plan --margin 20% says fits=${c.fits}, check on ${usable} B exited ${check.status}`);
  }
  if (c.spare_bytes !== c.headroom_bytes - marginResult.margin_bytes) fail(`spare_bytes of ${c.link}`);
  if (c.fits) ++marginFits;
  if (!c.fits && c.headroom_bytes >= 0) ++ruledOut;
}
if (marginFits === 0 || ruledOut === 0) {
  fail(`the margin should keep some and rule out some that fit without it (${marginFits}, ${ruledOut})`);
}
console.log(`with --margin 20%: ${marginFits} fit, ${ruledOut} ruled out by the margin alone`);

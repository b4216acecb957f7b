// Benchmark: time from navigation start to the app's first drawn frame (Module.firstFrameMs, set
// by the page when frame 1 has been drawn), cold and warm, in headless Chromium (playwright-core,
// the browser tests' Chromium and flags: SwiftShader's software GL), for one or more built sites
// served side by side, alternating between them so that a busy machine slows all of them alike.
//   node scripts/bench-first-frame.mjs [--runs N] [--fragment TEXT] [LABEL=]DIR [[LABEL=]DIR ...]
//   e.g. node scripts/bench-first-frame.mjs --runs 9 old=out/site-5b9bb59 new=out/site
// DIR is a folder written by scripts/build-site.sh (or a web build's src/web). Each run of each
// site starts Chromium with a fresh profile (empty cache: "cold"), opens the page, then reloads
// it twice in the same profile ("warm": cached files revalidated with 304, and compiled code
// reused where the browser kept it). Printed: per site, the median (and min-max) over the runs of
//   first frame       navigation start -> first frame drawn
//   stagemem.js req   navigation start -> the request for stagemem.js
//   wasm received     navigation start -> the last byte of stagemem.wasm
// This is a benchmark, not a test: it asserts nothing about the times.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { chromium } from "playwright-core";
import { startServer } from "./static-server.mjs";

const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
// The browser tests' flags (tests/browser/harness.mjs).
const chromiumArgs = [
  "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-quic",
  "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

function usage(message) {
  if (message) console.error(`error: ${message}`);
  console.error("usage: node scripts/bench-first-frame.mjs [--runs N] [--fragment TEXT] [LABEL=]DIR ...");
  process.exit(2);
}

function parseArguments(argv) {
  const options = { runs: 7, fragment: "", sites: [] };
  for (let i = 0; i < argv.length; ++i) {
    const argument = argv[i];
    if (argument === "--runs") {
      const runs = Number(argv[++i]);
      if (!Number.isInteger(runs) || runs < 1 || runs > 100) usage(`--runs: '${argv[i]}' is not an integer in [1, 100]`);
      options.runs = runs;
    } else if (argument === "--fragment") {
      if (i + 1 >= argv.length) usage("--fragment needs a value");
      options.fragment = argv[++i];
    } else if (argument.startsWith("--")) {
      usage(`unknown option ${argument}`);
    } else {
      const equals = argument.indexOf("=");
      const dir = resolve(equals > 0 ? argument.slice(equals + 1) : argument);
      const label = equals > 0 ? argument.slice(0, equals) : basename(dir);
      for (const file of ["index.html", "stagemem.js", "stagemem.wasm"]) {
        try {
          statSync(join(dir, file));
        } catch {
          usage(`${dir}: no ${file} (build a site with scripts/build-site.sh DIR)`);
        }
      }
      options.sites.push({ label, dir });
    }
  }
  if (options.sites.length === 0) usage("no site folder given");
  return options;
}

// The page's own numbers once its first frame is drawn (performance.now() is measured from
// navigation start).
async function firstFrame(page) {
  await page.waitForFunction(
    () => document.body?.dataset.appFailed === "true" ||
          (typeof Module !== "undefined" && Module.firstFrameMs > 0),
    null, { timeout: 120_000, polling: 50 });
  return page.evaluate(() => {
    const failure = document.getElementById("failure")?.textContent;
    if (document.body.dataset.appFailed === "true") throw new Error(`the page failed: ${failure}`);
    const entry = (name) => performance.getEntriesByType("resource").find((e) => e.name.endsWith(`/${name}`));
    return {
      firstFrame: Module.firstFrameMs,
      scriptRequest: entry("stagemem.js")?.startTime ?? NaN,
      wasmReceived: entry("stagemem.wasm")?.responseEnd ?? NaN,
    };
  });
}

async function measure(site, fragment) {
  const profile = mkdtempSync(join(tmpdir(), "stagemem-bench-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath, args: chromiumArgs, headless: true,
    viewport: { width: 1280, height: 800 },
  });
  try {
    const page = context.pages()[0] ?? await context.newPage();
    await page.goto(`${site.url}${fragment ? `#${fragment}` : ""}`);
    const cold = await firstFrame(page);
    const warm = [];
    for (let i = 0; i < 2; ++i) {
      await page.reload();
      warm.push(await firstFrame(page));
    }
    return { cold, warm1: warm[0], warm2: warm[1] };
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

function median(values) {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function summary(values) {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return "-".padStart(22);
  const ms = (v) => v.toFixed(0);
  return `${ms(median(finite)).padStart(6)} (${ms(Math.min(...finite))}-${ms(Math.max(...finite))})`.padEnd(22);
}

const options = parseArguments(process.argv.slice(2));
for (const site of options.sites) {
  site.server = await startServer(site.dir, 0);
  site.url = `http://127.0.0.1:${site.server.address().port}/`;
  site.results = [];
}
console.log(`first frame of ${options.sites.map((s) => `${s.label} (${s.dir})`).join(", ")}; ` +
            `${options.runs} runs each, alternating; Chromium ${chromiumPath}`);
try {
  for (let run = 0; run < options.runs; ++run) {
    // Alternate the order too (A B, B A, ...): neither site always follows the other.
    const order = run % 2 ? [...options.sites].reverse() : options.sites;
    for (const site of order) {
      const result = await measure(site, options.fragment);
      site.results.push(result);
      console.log(`  run ${run + 1} ${site.label}: cold ${result.cold.firstFrame.toFixed(0)} ms, ` +
                  `warm ${result.warm1.firstFrame.toFixed(0)} / ${result.warm2.firstFrame.toFixed(0)} ms`);
    }
  }
} finally {
  for (const site of options.sites) await new Promise((done) => site.server.close(done));
}

console.log(`\nmedians in ms (min-max) over ${options.runs} runs, from navigation start:`);
const width = Math.max(...options.sites.map((s) => s.label.length), 4);
console.log(`${"site".padEnd(width)}  ${"".padEnd(16)}  ${"cold".padEnd(22)}  ${"warm (reload 1)".padEnd(22)}  warm (reload 2)`);
for (const site of options.sites) {
  const rows = [["first frame", "firstFrame"], ["stagemem.js req", "scriptRequest"], ["wasm received", "wasmReceived"]];
  for (const [name, key] of rows) {
    const column = (load) => summary(site.results.map((r) => r[load][key]));
    console.log(`${site.label.padEnd(width)}  ${name.padEnd(16)}  ${column("cold")}  ${column("warm1")}  ${column("warm2")}`);
  }
}

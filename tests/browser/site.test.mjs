// The hosted site: scripts/build-site.sh writes a static folder that works under a sub-path.
// The folder is written from the web build under test (STAGEMEM_SITE_BUILD_DIR), served at
// /tools/stagemem/ by a plain static server, and opened in headless Chromium.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { startServer } from "../../scripts/static-server.mjs";
import { artifacts } from "./harness.mjs";

const repository = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const webDir = process.env.STAGEMEM_WEB_DIR;
let root;
let server;
let browser;

before(async () => {
  assert.ok(webDir, "STAGEMEM_WEB_DIR must point at the web build");
  root = mkdtempSync(join(tmpdir(), "stagemem-site-"));
  const site = join(root, "tools", "stagemem");
  const run = spawnSync("bash", [join(repository, "scripts", "build-site.sh"), site], {
    encoding: "utf8", env: { ...process.env, STAGEMEM_SITE_BUILD_DIR: dirname(dirname(webDir)) },
  });
  assert.equal(run.status, 0, `build-site.sh failed: ${run.stdout}${run.stderr}`);
  server = await startServer(root, 0);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  if (server) await new Promise((done) => server.close(done));
  if (root) rmSync(root, { recursive: true, force: true });
});

test("build-site.sh: a self-contained folder with .gz copies that runs under /tools/stagemem/", async () => {
  const site = join(root, "tools", "stagemem");
  assert.deepEqual(readdirSync(site).sort(), ["VERSION", "index.html", "index.html.gz", "stagemem.js",
                                              "stagemem.js.gz", "stagemem.wasm", "stagemem.wasm.gz"]);
  for (const name of ["index.html", "stagemem.js", "stagemem.wasm"]) {
    assert.deepEqual(gunzipSync(readFileSync(join(site, `${name}.gz`))), readFileSync(join(site, name)),
                     `${name}.gz is ${name}`);
  }
  const version = readFileSync(join(site, "VERSION"), "utf8");
  assert.match(version, /^stagemem \d+\.\d+\.\d+\ncommit \S+\n$/);

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  const address = `http://127.0.0.1:${server.address().port}/tools/stagemem/`;
  await page.goto(`${address}#v=1&pp=8`);
  await page.waitForFunction(() => typeof Module !== "undefined" && typeof Module.frameCount === "function" &&
                             Module.frameCount() >= 1, null, { timeout: 60_000 });
  assert.deepEqual(errors, []);
  assert.equal(await page.evaluate(() => Module.getConfig().parallel.pipeline_parallel), 8);
  const ui = await page.evaluate(() => Module.getUiState());
  assert.equal(`stagemem ${ui.version}\ncommit ${ui.commit}\n`.split("\n")[0], version.split("\n")[0]);
  // The Markdown's link points at the page under its sub-path.
  const markdown = await page.evaluate(() => Module.getMarkdownTable());
  assert.ok(markdown.includes(`(<${address}#v=1&pp=8>)`), markdown);
  await page.screenshot({ path: join(artifacts, "browser-site-subpath.png") });
  await context.close();
});

// Shared set-up of the browser tests (not a test file itself: node --test runs *.test.mjs).
// The real web build is served on 127.0.0.1 and driven in Debian's headless Chromium through
// playwright-core. Tests wait on the frame counter the app publishes (Module.frameCount), never
// on fixed sleeps, and assert on the app's state read through Embind.
//   STAGEMEM_WEB_DIR   folder holding index.html, stagemem.js, stagemem.wasm
//   STAGEMEM_ARTIFACTS folder for screenshots
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { chromium } from "playwright-core";
import { startServer } from "../../scripts/static-server.mjs";

export const artifacts = process.env.STAGEMEM_ARTIFACTS ?? "artifacts";
const webDir = process.env.STAGEMEM_WEB_DIR;
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const chromiumArgs = [
  "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-quic",
  "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

// Starts the static server and Chromium; returns {browser, baseUrl, close}.
export async function launch() {
  assert.ok(webDir, "STAGEMEM_WEB_DIR must point at the web build");
  mkdirSync(artifacts, { recursive: true });
  const server = await startServer(webDir, 0);
  const baseUrl = `http://127.0.0.1:${server.address().port}/`;
  const browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumArgs });
  const close = async () => {
    await browser.close();
    await new Promise((done) => server.close(done));
  };
  return { browser, baseUrl, close };
}

// Opens the app at `fragment` in a new context and waits for `minFrames` frames.
// `contextOptions` go to browser.newContext (viewport, deviceScaleFactor, ...).
export async function openApp(harness, fragment, { minFrames = 3, permissions = [], ...contextOptions } = {}) {
  const context = await harness.browser.newContext({ viewport: { width: 1280, height: 800 }, ...contextOptions });
  if (permissions.length) await context.grantPermissions(permissions, { origin: harness.baseUrl });
  const page = await context.newPage();
  const consoleErrors = [];
  page.on("pageerror", (error) => consoleErrors.push(String(error)));
  await page.goto(`${harness.baseUrl}#${fragment}`);
  // Uncaught page errors are reported through the failure box by the test, not only a timeout.
  await page.evaluate(() => window.addEventListener("error", (event) => {
    document.body.dataset.appFailed = "true";
    document.getElementById("failure").textContent = String(event.message);
  }));
  // The app draws only when something changes (idle costs nothing): ask for the frames waited on.
  await page.waitForFunction(
    (n) => {
      if (document.body.dataset.appFailed === "true") return true;
      if (typeof Module === "undefined" || typeof Module.frameCount !== "function") return false;
      if (Module.frameCount() >= n) return true;
      if (Module.frameCount() >= 1 && typeof Module.requestRedraw === "function") Module.requestRedraw(n);
      return false;
    },
    minFrames, { timeout: 60_000 }).catch((error) => {
    throw new Error(`${error.message}; page errors: ${consoleErrors.join(" | ")}`);
  });
  const failure = await page.evaluate(() => document.getElementById("failure").textContent);
  assert.equal(failure, "", `the page reported a failure: ${failure}`);
  return { context, page, consoleErrors };
}

// Waits until the app has drawn `count` more frames than now (asking for them: the app draws
// nothing while idle).
export async function waitFrames(page, count = 2) {
  const start = await page.evaluate((n) => { Module.requestRedraw(n); return Module.frameCount(); }, count);
  await page.waitForFunction((n) => Module.frameCount() >= n, start + count, { timeout: 30_000 });
}

// Waits frame by frame (at most `frames`) until `check()` (a node-side async function) is true.
export async function waitUntil(page, check, { frames = 120, what = "condition" } = {}) {
  for (let i = 0; i < frames; ++i) {
    if (await check()) return;
    await waitFrames(page, 1);
  }
  assert.fail(`${what}: still false after ${frames} frames`);
}

// The CSS-pixel rectangle the app drew a widget at in its last frame (Module.getWidgetRect).
export async function widgetRect(page, name) {
  const rect = await page.evaluate((n) => Module.getWidgetRect(n), name);
  assert.ok(rect, `the app published no rectangle for ${name}`);
  return rect;
}

// A real click in the middle of a widget: ImGui samples input once per frame, so the button is
// held across frames (~100 ms) between mouse down and up.
export async function clickWidget(page, name) {
  const rect = await widgetRect(page, name);
  await page.mouse.move(rect.x + rect.width / 2, rect.y + rect.height / 2);
  await waitFrames(page, 2);
  await page.mouse.down();
  await waitFrames(page, 3);
  await page.mouse.up();
  await waitFrames(page, 2);
}

// The widget's rectangle once it is well inside the configuration panel (scrolled there with the
// mouse wheel over the panel).
export async function visibleRect(page, name) {
  const bottom = page.viewportSize().height - 90;
  for (let i = 0; i < 60; ++i) {
    const rect = await page.evaluate((n) => Module.getWidgetRect(n), name);
    if (rect && rect.y > 60 && rect.y + rect.height < bottom) return rect;
    const model = await page.evaluate(() => Module.getWidgetRect("field_model"));
    const x = model ? model.x + 4 : 60;
    await page.mouse.move(x, 400);
    await page.mouse.wheel(0, rect && rect.y <= 60 ? -100 : 100);
    await waitFrames(page, 2);
  }
  return widgetRect(page, name);
}

// Runs the native CLI (STAGEMEM_CLI) and returns its standard output.
export function runCli(args) {
  const path = process.env.STAGEMEM_CLI;
  assert.ok(path && existsSync(path), `STAGEMEM_CLI must name the native CLI (got ${path})`);
  return execFileSync(path, args, { encoding: "utf8", maxBuffer: 1 << 28 });
}

// A page's document without its own `app` part (what the CLI writes).
export function withoutApp(document) {
  const { app, ...rest } = document;
  return rest;
}

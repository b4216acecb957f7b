// Browser tests of the scaling cross-check (issue 23): a link with scaling= points opens the
// Cross-checks tab with measured a and b beside the derived ones, the numbers `stagemem scaling`
// prints for the same link; points typed in the tab (real keyboard and mouse) replace them and
// ride in the link; a bad typed point and a bad link key are named. Screenshots: the tab with two
// points, and with three points and a not-linear term (materialized attention).
//   STAGEMEM_CLI   the native CLI (its `scaling --json` is the reference)
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { artifacts, clickWidget, launch, openApp as openAppIn, runCli, waitFrames, waitUntil, widgetRect, withoutApp }
  from "./harness.mjs";

let harness;
const openApp = (fragment, options) => openAppIn(harness, fragment, options);
const getScaling = (page) => page.evaluate(() => Module.getScaling());
const uiState = (page) => page.evaluate(() => Module.getUiState());
const points = "scaling=seq=4096:50GiB@run%204k&scaling=seq=8192:60GiB@run%208k";
const start = `v=1&tp=2&sp=1&pp=2&dp=2&gbs=16&device=h100-80gb&${points}&scaling_stage=1`;

before(async () => {
  harness = await launch();
});

after(async () => {
  await harness?.close();
});


// Replaces the points text with `lines` (typed with the keyboard) and clicks "Apply points".
async function typePoints(page, lines) {
  const rect = await widgetRect(page, "scaling_points");
  await page.mouse.click(rect.x + 20, rect.y + 10, { delay: 100 });
  await waitFrames(page, 3);
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Delete");
  await waitFrames(page, 2);
  for (const [i, line] of lines.entries()) {
    if (i > 0) await page.keyboard.press("Enter");
    await page.keyboard.type(line, { delay: 20 });
  }
  await waitFrames(page, 2);
  await clickWidget(page, "scaling_apply");
}

describe("the scaling cross-check", () => {
  test("a link with scaling= points opens the Cross-checks tab with the CLI's numbers",
       async () => {
    const { context, page } = await openApp(start);
    await waitUntil(page, async () => (await uiState(page)).mainTab === "cross_checks",
                    { what: "the Cross-checks tab" });
    await waitUntil(page, async () => (await getScaling(page)).app.drawn,
                    { what: "the scaling section drawn" });
    const scaling = await getScaling(page);
    assert.equal(scaling.app.points, 2);
    assert.equal(scaling.app.stage, 1);
    assert.equal(scaling.app.error, "");
    assert.equal(scaling.kind, "scaling");
    assert.equal(scaling.stage, 1);
    assert.equal(scaling.field, "seq");
    assert.equal(scaling.exact_line, true);
    // The measured line through (4096, 50 GiB) and (8192, 60 GiB): b = 10 GiB / 4096 tokens
    // = 2.5 MiB per token, a = 50 GiB - 4096 x 2.5 MiB = 40 GiB.
    assert.equal(scaling.measured.bytes_per_token, 2.5 * 2 ** 20);
    assert.equal(scaling.measured.constant_bytes, 40 * 2 ** 30);
    assert.deepEqual(scaling.points.map((p) => p.source), ["run 4k", "run 8k"]);
    assert.match(scaling.app.headline, /^measured 40\.00 GiB \+ 2\.500 MiB\/token x tokens vs derived /);
    assert.match(scaling.app.pointsText, /^seq=4096:50GiB@run 4k\nseq=8192:60GiB@run 8k\n$/);
    // The same numbers as `stagemem scaling` of the page's own link.
    assert.match(scaling.link, /&scaling=seq=4096:50GiB@run%204k&scaling=seq=8192:60GiB@run%208k&scaling_stage=1$/);
    const reference = JSON.parse(runCli(["scaling", scaling.link, "--json"]));
    assert.deepEqual(withoutApp(scaling), reference);
    // The page's address keeps the points (and opens on this tab without naming it).
    const hash = await page.evaluate(() => location.hash);
    assert.match(hash, /&scaling=seq=4096:50GiB@run%204k&scaling=seq=8192:60GiB@run%208k&scaling_stage=1/);
    assert.doesNotMatch(hash, /view\.tab/);
    await page.screenshot({ path: join(artifacts, "scaling-two-points.png") });
    await context.close();
  });

  test("points typed in the tab replace the link's, ride in the link, and name a not-linear term",
       async () => {
    const { context, page } = await openApp(`v=1&attention_kernel=materialized&device=h200&${points}`);
    await waitUntil(page, async () => (await getScaling(page)).app.drawn,
                    { what: "the scaling section drawn" });
    await typePoints(page, ["seq=2048:40GiB", "seq=4096:52GiB", "seq=8192:70GiB@third run"]);
    await waitUntil(page, async () => (await getScaling(page)).app.points === 3,
                    { what: "three points applied" });
    const scaling = await getScaling(page);
    assert.equal(scaling.exact_line, false, "three points: least squares");
    assert.equal(scaling.points.length, 3);
    assert.equal(scaling.points[2].source, "third run");
    const residuals = scaling.points.reduce((sum, p) => sum + p.residual_bytes, 0);
    assert.ok(Math.abs(residuals) <= 3, `residuals sum to about 0 (${residuals})`);
    const notLinear = scaling.terms.filter((t) => t.scaling === "not linear").map((t) => t.name);
    assert.ok(notLinear.some((name) => /\[B, heads, S, S\]/.test(name)), notLinear.join(", "));
    assert.match(scaling.app.notes, /not linear in tokens/);
    await waitUntil(page, async () => /scaling=seq=2048:40GiB/.test(await page.evaluate(() => location.hash)),
                    { what: "the link carries the typed points" });
    assert.deepEqual(withoutApp(scaling), JSON.parse(runCli(["scaling", scaling.link, "--json"])));
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "scaling-three-points-not-linear.png") });

    // A bad line is named; the points stay as they were.
    await typePoints(page, ["seq=2048:40GiB", "tp=2:50GiB"]);
    await waitUntil(page, async () => (await getScaling(page)).app.inputError !== "",
                    { what: "the typed error shown" });
    const refused = await getScaling(page);
    assert.match(refused.app.inputError, /^line 2\.axis: 'tp' is not a field a point varies/);
    assert.equal(refused.app.points, 3);
    await context.close();
  });

  test("a bad scaling= key is named in the banner; one point is named by the check", async () => {
    const { context, page } = await openApp("v=1&scaling=seq=4096:1GiB&scaling=bogus");
    const problems = await page.evaluate(() => Module.getLinkProblems());
    assert.ok(problems.some((p) => p.field === "url.scaling[1]"), JSON.stringify(problems));
    assert.equal((await getScaling(page)).app.points, 0, "a bad link key keeps nothing half-read");
    await context.close();

    const one = await openApp("v=1&scaling=seq=4096:1GiB");
    await waitUntil(one.page, async () => (await getScaling(one.page)).app.drawn,
                    { what: "the scaling section drawn" });
    assert.match((await getScaling(one.page)).app.error, /^scaling\.points: give at least 2 measured points/);
    await one.context.close();
  });
});

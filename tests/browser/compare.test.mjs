// Browser tests of the comparison with a pinned baseline (issue 22), driven with real mouse,
// keyboard and clipboard events: pin with a click, change TP with the keyboard, and the page's
// comparison is what `stagemem diff` prints for the two links; the copied link restores it in a
// new page (the link carries both: base=); Copy as Markdown writes it; Ctrl+B, Swap and Unpin; a
// bad baseline in a link is named in the banner. Screenshots: the stages chart with the
// baseline's marks and the Compare tab.
//   STAGEMEM_CLI   the native CLI (its `diff` is the reference)
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { artifacts, clickWidget, launch, openApp as openAppIn, runCli, waitFrames, waitUntil, widgetRect, withoutApp }
  from "./harness.mjs";

let harness;
const openApp = (fragment, options) => openAppIn(harness, fragment, options);
const clipboard = ["clipboard-read", "clipboard-write"];
const getConfig = (page) => page.evaluate(() => Module.getConfig());
const getComparison = (page) => page.evaluate(() => Module.getComparison());
const uiState = (page) => page.evaluate(() => Module.getUiState());
const readClipboard = (page) => page.evaluate(() => navigator.clipboard.readText());
// Llama 3.1 70B on 64 H100s (the page's default layout: PP 4, the format's default, is left out
// as the link writes it), TP 8.
const start = "v=1&model=llama-3.1-70b&tp=8&dp=2&sp=1&seq=8192&optimizer=distributed-adam&device=h100-80gb";

before(async () => {
  harness = await launch();
});

after(async () => {
  await harness?.close();
});


// Types `text` into a field with the keyboard: a click into its input, select all, type, Enter.
async function typeIntoField(page, key, text) {
  const rect = await widgetRect(page, `field_${key}`);
  await page.mouse.click(rect.x + 12, rect.y + rect.height / 2, { delay: 100 });
  await waitFrames(page, 3);
  await page.keyboard.press("Control+A");
  await waitFrames(page, 2);
  await page.keyboard.type(text, { delay: 50 });
  await page.keyboard.press("Enter");
  await waitFrames(page, 3);
}

describe("compare with a pinned baseline", () => {
  test("pin, change TP, and the page compares as `stagemem diff` does; the link restores it",
       async () => {
    const { context, page } = await openApp(start, { permissions: clipboard });
    assert.equal(await getComparison(page), null, "nothing pinned on a link without base=");
    await clickWidget(page, "pin_baseline");
    await waitUntil(page, async () => (await getComparison(page)) !== null, { what: "pinned" });
    let comparison = await getComparison(page);
    assert.deepEqual(comparison.settings_changed, [], "the baseline is the configuration on screen");
    assert.equal(comparison.binding_peak_delta_bytes, 0);
    assert.match(await page.evaluate(() => location.hash), /&base=v=1%26model=llama-3\.1-70b%26tp=8/);

    // TP 8 -> 4 with the keyboard; the comparison follows the edit.
    await typeIntoField(page, "tp", "4");
    await waitUntil(page, async () => (await getConfig(page)).parallel.tensor_parallel === 4,
                    { what: "TP 4" });
    await waitUntil(page, async () => (await getComparison(page)).settings_changed.length > 0,
                    { what: "the comparison sees the edit" });
    comparison = await getComparison(page);
    assert.deepEqual(comparison.settings_changed, [{ field: "tp", a: "8", b: "4" }]);
    assert.equal(comparison.a.link, `#${start}`);
    // Halving TP doubles every rank's share of the weights: B needs more on every stage.
    for (const stage of comparison.stages) assert.ok(stage.peak_delta_bytes > 0, `stage ${stage.index}`);

    // The same numbers and words as the CLI: two links, and the page's one link with both.
    const fromCli = JSON.parse(runCli(["diff", comparison.a.link, comparison.b.link, "--json"]));
    assert.deepEqual(withoutApp(comparison), fromCli);
    const pageLink = await page.evaluate(() => location.href);
    assert.match(pageLink, /&base=/);
    assert.deepEqual(JSON.parse(runCli(["diff", pageLink, "--json"])), fromCli);

    // The stages chart marks each stage's baseline peak; the tooltip says the difference.
    await page.mouse.move(1200, 75);  // nothing under it: no tooltip
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "compare-stages-chart.png") });
    const bar = await widgetRect(page, "stage_bar_1");
    await page.mouse.move(bar.x + bar.width / 2, bar.y + bar.height - 6);
    await waitUntil(page, async () => (await page.evaluate(() => Module.getWidgetRect("bar_tooltip"))) !== null,
                    { what: "the bar's tooltip" });
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "compare-stages-tooltip.png") });

    // The Compare tab: the per-stage table and the binding stage's changed terms.
    await clickWidget(page, "tab_compare");
    await waitUntil(page, async () => (await uiState(page)).mainTab === "compare", { what: "Compare tab" });
    await page.mouse.move(1200, 75);  // nothing under it: no tooltip
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "compare-tab.png") });
    // The changed terms are the binding stage's until a row is clicked: then that stage's.
    assert.equal((await getComparison(page)).app.stage, -1);
    await clickWidget(page, "compare_row_2");
    await waitUntil(page, async () => (await getComparison(page)).app.stage === 2,
                    { what: "stage 2 chosen by a click on its row" });
    await page.mouse.move(1200, 75);
    await waitFrames(page, 3);
    await page.screenshot({ path: join(artifacts, "compare-tab-stage-2.png") });

    // Copy as Markdown writes the comparison: the CLI's tables, with the links of both sides.
    await clickWidget(page, "copy_markdown");
    await waitUntil(page, async () => (await readClipboard(page)).includes("comparison"),
                    { what: "the comparison copied" });
    const markdown = await readClipboard(page);
    assert.match(markdown, /^\*\*stagemem\*\* comparison of per-rank device memory/);
    assert.match(markdown, /- Settings changed: tp 8 → 4/);
    const cliMarkdown = runCli(["diff", comparison.a.link, comparison.b.link, "--format", "markdown"]);
    for (const line of cliMarkdown.split("\n").filter((l) => l.startsWith("|"))) {
      assert.ok(markdown.includes(line), `the Markdown holds the CLI's row ${line}`);
    }
    assert.match(markdown, /\[Open this comparison in stagemem\]\(<http[^>]*&base=v=1%26/);
    assert.match(markdown, /\[Open A in stagemem\]\(<http[^>]*#v=1&model=llama-3\.1-70b&tp=8&/);

    // Copy link, open it in a new page: the comparison is restored, on the Compare tab.
    await clickWidget(page, "copy_link");
    await waitUntil(page, async () => (await readClipboard(page)).includes("&base="),
                    { what: "the link copied" });
    const link = await readClipboard(page);
    const fragment = link.slice(link.indexOf("#") + 1);
    const restored = await openApp(fragment, { permissions: clipboard });
    await waitUntil(restored.page, async () => (await getComparison(restored.page)) !== null,
                    { what: "the comparison restored from the link" });
    assert.deepEqual(withoutApp(await getComparison(restored.page)), fromCli);
    await waitUntil(restored.page, async () => (await uiState(restored.page)).mainTab === "compare",
                    { what: "a link with base= opens the Compare tab" });
    assert.deepEqual(await restored.page.evaluate(() => Module.getLinkProblems()), []);

    // Swap: the baseline (TP 8) on screen, TP 4 pinned; Undo is there for the configuration.
    await clickWidget(restored.page, "swap_baseline");
    await waitUntil(restored.page, async () => (await getConfig(restored.page)).parallel.tensor_parallel === 8,
                    { what: "swapped" });
    await waitUntil(restored.page, async () => (await getComparison(restored.page)).settings_changed[0]?.b === "8",
                    { what: "the comparison swapped" });
    assert.deepEqual((await getComparison(restored.page)).settings_changed, [{ field: "tp", a: "4", b: "8" }]);
    // The chart with the baseline above every bar: its outlines rise over the bars, in the chart.
    await clickWidget(restored.page, "tab_stages");
    await waitUntil(restored.page, async () => (await uiState(restored.page)).mainTab === "stages",
                    { what: "Stages tab" });
    await restored.page.mouse.move(1200, 75);
    await waitFrames(restored.page, 3);
    await restored.page.screenshot({ path: join(artifacts, "compare-stages-baseline-above.png") });
    // The link names the Stages tab now (a link with base= opens Compare otherwise).
    await waitUntil(restored.page, async () => (await restored.page.evaluate(() => location.hash)).includes("view.tab=stages"),
                    { what: "view.tab=stages in the link" });
    // Ctrl+B pins what is on screen: nothing differs any more.
    await restored.page.mouse.move(1200, 75);  // nothing under it: no tooltip
    await restored.page.keyboard.press("Control+b");
    await waitUntil(restored.page, async () => (await getComparison(restored.page)).settings_changed.length === 0,
                    { what: "Ctrl+B pinned the configuration on screen" });
    // Unpin: no comparison, and the link no longer carries one.
    await clickWidget(restored.page, "unpin_baseline");
    await waitUntil(restored.page, async () => (await getComparison(restored.page)) === null, { what: "unpinned" });
    await waitUntil(restored.page, async () => !(await restored.page.evaluate(() => location.hash)).includes("base="),
                    { what: "the link without base=" });
    await restored.context.close();
    await context.close();
  });

  test("a bad baseline in a link is named in the banner; the rest of the link applies", async () => {
    const { context, page } = await openApp("v=1&tp=4&base=v=1%26tp=0");
    await waitFrames(page, 3);
    const problems = await page.evaluate(() => Module.getLinkProblems());
    const base = problems.find((p) => p.field === "url.base.tp");
    assert.ok(base, `the banner names url.base.tp: ${JSON.stringify(problems)}`);
    assert.match(base.message, /\[1, /);
    assert.equal(await getComparison(page), null, "a half-read baseline is never compared with");
    assert.equal((await getConfig(page)).parallel.tensor_parallel, 4);
    await context.close();
  });
});

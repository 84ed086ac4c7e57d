// The console's charts in real headless Chromium against the real server on a real port: the
// histogram of a test run (its bars read back from the DOM against the scores graded), the chart
// of each sample's score before and after an update (its points against the server's report),
// the charts module alone on values the sandbox cannot produce yet, and screenshots at 1440 and
// 420 px (docs/console.md).

import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { after, before, test } from "node:test";
import * as esbuild from "esbuild";
import { type Browser, chromium, type Page } from "playwright-core";
import type { UpdateResult } from "../sdk/index.ts";
import { call, repoRoot, startServer, type TestServer, thread } from "./support/helpers.ts";

/**
 * What the charts bundle puts on a page's globalThis. Typed here, not imported: the map of rooms
 * (docs/DESIGN.md) has no arrow from test/ to console/, whose modules only a browser runs.
 */
type OnPage = {
  charts: {
    drawInto(box: HTMLElement, draw: (width: number) => SVGSVGElement): void;
    beforeAfterChart(scores: unknown[], width: number): SVGSVGElement;
    histogramChart(summary: unknown, width: number): SVGSVGElement;
    outcomeList(summary: unknown): HTMLElement;
  };
  abstainedRow(i: number, abstained: { code: string; reason: string }): HTMLTableRowElement;
  summarize(
    results: unknown[],
    options?: { bins?: number },
  ): { histogram: { edges: number[]; counts: number[] } | null; outcomes: Record<string, number> };
};

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const P = "/v1/projects/charts";
let s: TestServer;
let browser: Browser;
let page: Page;

/** Scores (thread metadata `s`), an error (`boom`) and a null return (`skip`: an abstention once the sandbox reads it so). */
const SPREAD =
  "async (t) => {\n  if (t.metadata.boom) throw new Error('boom');\n  if (t.metadata.skip) return null;\n  return Number(t.metadata.s ?? 0);\n}";
const SCORES = [0, 0, 0.05, 0.25, 0.25, 0.25, 0.5, 0.95, 1, 1];

before(async () => {
  s = await startServer({ listen: true });
  for (const [key, source] of [
    ["spread", SPREAD],
    [
      "drift",
      "async (t) => {\n  if (t.metadata.boom) throw new Error('boom');\n  if (t.metadata.skip) return null;\n  return t.completion() === t.metadata.expected ? 1 : 0;\n}",
    ],
  ]) {
    assert.equal((await call(s.app, "POST", `${P}/graders`, { key, source })).status, 201, key);
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update"],
  });
  page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(s.url);
  await page.fill("#api-key", await s.keyFor("charts"));
  await page.click("#connect button");
  await page.waitForSelector("#who:has-text('project charts')");
});
after(async () => {
  await browser?.close();
  await s?.close();
});

/** docs/screenshots/NAME.png of `selector`: taken every run (it fails if the chart cannot render), written when missing or asked for. */
async function screenshot(selector: string, name: string): Promise<void> {
  const png = await page.locator(selector).screenshot();
  assert.ok(png.length > 5_000, "a screenshot of something");
  const file = new URL(`../docs/screenshots/${name}.png`, import.meta.url);
  if (process.env.GRADEBOX_UPDATE_SCREENSHOTS === "1" || !existsSync(file)) writeFileSync(file, png);
}

/** Waits until the chart in `box` is drawn at the box's current width (it redraws when the window changes). */
async function drawnAtWidth(box: string): Promise<void> {
  await page.waitForFunction((sel) => {
    const el = document.querySelector(sel) as HTMLElement | null;
    const svg = el?.querySelector("svg.chart");
    return !!el && !!svg && Number(svg.getAttribute("width")) === el.clientWidth;
  }, box);
  const fits = await page.evaluate((sel) => {
    const el = document.querySelector(sel) as HTMLElement;
    return {
      svg: el.querySelector("svg.chart")?.getBoundingClientRect().width ?? 0,
      box: el.clientWidth,
      page: document.documentElement.scrollWidth,
    };
  }, box);
  assert.ok(fits.svg <= fits.box, `the chart (${fits.svg} px) fits its box (${fits.box} px)`);
  assert.ok(fits.page <= (page.viewportSize()?.width ?? 0), `the page (${fits.page} px) is no wider than the window`);
}

type Bar = { lo: number; hi: number; count: number };
const bars = (): Promise<Bar[]> =>
  page.$$eval("#test-histogram rect.bar", (rects) =>
    rects.map((r) => ({
      lo: Number(r.getAttribute("data-lo")),
      hi: Number(r.getAttribute("data-hi")),
      count: Number(r.getAttribute("data-count")),
    })),
  );

test("a test run draws the histogram of its scores (each bar the count of the scores in its bin) with its counts by outcome beside it", async () => {
  await page.click("#graders tr[data-key='spread']");
  await page.waitForSelector("#detail-key:has-text('spread')");
  const threads = [...SCORES.map((x) => thread("x", { s: x })), thread("x", { boom: true }), thread("x", { skip: true })];
  await page.fill("#threads", threads.map((t) => JSON.stringify(t)).join("\n"));
  await page.check("input[name='target'][value='stored']");
  const answered = page.waitForResponse((r) => r.url().endsWith("/graders/spread/grade-batch"));
  await page.click("#run-test");
  const request = (await answered).request().postDataJSON() as { summary?: unknown };
  assert.equal(request.summary, true, "the console asks the server for the run's summary");
  await page.waitForSelector("#test-histogram svg.chart rect.bar");

  // the same batch through the API: what each thread's outcome is
  const api = await call(s.app, "POST", `${P}/graders/spread/grade-batch`, { threads, summary: true });
  assert.equal(api.status, 200);
  const outcomes = { scored: 0, error: 0, abstained: 0 };
  for (const r of api.body.results as Array<{ outcome: keyof typeof outcomes }>) outcomes[r.outcome]++;
  assert.equal(outcomes.scored, SCORES.length);
  assert.equal(outcomes.error + outcomes.abstained, 2, "the thrown error, and the null (an abstention once the sandbox reads it so)");

  const drawn = await bars();
  assert.equal(drawn.length, 10, "ten bins, the default");
  assert.equal(drawn[0].lo, 0);
  assert.equal(drawn.at(-1)?.hi, 1);
  drawn.forEach((bar, i) => {
    const last = i === drawn.length - 1;
    const inside = SCORES.filter((x) => x >= bar.lo && (x < bar.hi || (last && x === bar.hi))).length;
    assert.equal(bar.count, inside, `bin ${bar.lo}..${bar.hi}`);
  });
  assert.deepEqual(
    drawn.map((b) => b.count),
    [3, 0, 3, 0, 0, 1, 0, 0, 0, 3],
  );
  if (api.body.summary) {
    assert.deepEqual(
      drawn.map((b) => b.count),
      api.body.summary.histogram.counts,
      "the server's summary, when it sends one",
    );
  }
  // taller bars for larger counts, a count over each non-empty bar
  const heights = await page.$$eval("#test-histogram rect.bar", (rects) => rects.map((r) => Number(r.getAttribute("height"))));
  assert.ok(heights[0] > heights[5] && heights[5] > heights[1], "3 > 1 > 0");
  assert.deepEqual(await page.locator("#test-histogram text.bar-count").allTextContents(), ["3", "3", "1", "3"]);
  assert.deepEqual(await page.locator("#test-histogram text.axis-title").allTextContents(), ["score (bins)", "count"]);
  assert.match((await page.getAttribute("#test-histogram svg", "aria-label")) ?? "", /^Histogram of 10 scores in 10 bins from 0 to 1$/);

  const listed = await page.$$eval("#test-summary li.outcome", (lis) =>
    lis.map((li) => [li.getAttribute("data-outcome"), Number(li.getAttribute("data-count"))]),
  );
  assert.deepEqual(Object.fromEntries(listed), outcomes);
  assert.equal(await page.getAttribute("#test-summary ul", "aria-label"), "results by outcome");
  assert.match((await page.textContent("#test-summary figcaption")) ?? "", /^Scores of this run: 10 of 12 threads scored$/);
  // the rows: an abstention's row says so, with its code, never as a score
  assert.equal(await page.locator("#results tbody tr.abstained").count(), outcomes.abstained);
  for (const row of await page.locator("#results tbody tr.abstained").all()) {
    const code = (await row.getAttribute("data-code")) ?? "";
    assert.match((await row.textContent()) ?? "", new RegExp(`^\\d+–abstained ${code}: `));
  }
  assert.equal(await page.locator("#results tbody tr.error").count(), outcomes.error);

  for (const width of [1440, 420]) {
    await page.setViewportSize({ width, height: 900 });
    await drawnAtWidth("#test-histogram");
    assert.equal((await bars()).length, 10, `${width} px: every bin`);
    await screenshot("#test-summary", `console-histogram-${width}`);
  }
  await page.setViewportSize({ width: 1440, height: 900 });

  // another run replaces the chart; a run of the unsaved source (validate: no server summary) is
  // charted in the page by the server's rule: ten bins from 0.1 to 0.95, as a server summary would be
  await page.click("#new-grader");
  await page.fill("#create-source", "async (t) => Number(t.metadata.s ?? 0)");
  await page.check("input[name='target'][value='source']");
  await page.fill("#threads", [0.1, 0.9, 0.95].map((x) => JSON.stringify(thread("x", { s: x }))).join("\n"));
  await page.click("#run-test");
  await page.waitForFunction(() => document.querySelectorAll("#results tbody tr").length === 3);
  await page.waitForSelector("#test-summary li[data-outcome='scored'][data-count='3']");
  assert.deepEqual(
    (await bars()).map((b) => b.count),
    [1, 0, 0, 0, 0, 0, 0, 0, 0, 2],
  );
});

test("an update with samples draws each sample's score before and after (a point per sample, errors and abstentions in lanes of their own), as the report says", async () => {
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.click("#graders tr[data-key='drift']");
  await page.waitForSelector("#detail-key:has-text('drift')");
  await page.click("#edit");
  await page.waitForSelector("#update-submit:visible");
  // v1 scores 1 only for the exact answer; v2 gives 0.25 for a near one, 0 for a wrong one, 0.5 where v1 failed
  await page.fill(
    "#create-source",
    "async (t) => {\n  if (t.metadata.boom || t.metadata.skip) return 0.5;\n  if (t.metadata.legacy) return 0;\n  const c = t.completion();\n  return c === t.metadata.expected ? 1 : c.includes(t.metadata.expected) ? 0.25 : 0;\n}",
  );
  const sample = (completion: string, metadata: Record<string, unknown>) => JSON.stringify({ thread: thread(completion, metadata) });
  const samples = [
    sample("4", { expected: "4" }), // 1 → 1
    sample("4.", { expected: "4" }), // 0 → 0.25
    sample("5", { expected: "4" }), // 0 → 0
    sample("x", { boom: true }), // GRADER_ERROR → 0.5
    sample("x", { skip: true }), // abstained (or, before the sandbox reads null so, its error) → 0.5
    sample("44", { expected: "44" }), // 1 → 1
    sample("about 44", { expected: "44" }), // 0 → 0.25
    sample("7", { expected: "7", legacy: true }), // 1 → 0
  ];
  await page.setInputFiles("#create-samples", {
    name: "samples.jsonl",
    mimeType: "application/json",
    buffer: Buffer.from(samples.join("\n")),
  });
  const answered = page.waitForResponse((r) => r.url().endsWith("/graders/drift") && r.request().method() === "PUT");
  await page.click("#update-submit");
  const { report } = (await (await answered).json()) as UpdateResult;
  assert.equal(report.scores.length, samples.length);
  await page.waitForSelector("#update-report:not([hidden]) svg.chart g.sample");

  const points = await page.$$eval("#update-chart g.sample", (gs) =>
    gs.map((g) => {
      const [before, after] = ["before", "after"].map((when) => {
        const m = g.querySelector(`.mark.${when}`) as SVGElement;
        return {
          kind: [...m.classList].find((c) => ["score", "error", "abstained"].includes(c)),
          y: Number(m.getAttribute("data-y")),
          x: Number(m.getAttribute("data-x")),
        };
      });
      return {
        index: Number(g.getAttribute("data-index")),
        before: g.getAttribute("data-before"),
        after: g.getAttribute("data-after"),
        how: [...g.classList].find((c) => c !== "sample"),
        marks: { before, after },
      };
    }),
  );
  assert.deepEqual(
    points.map((p) => [p.index, p.before, p.after]),
    report.scores.map((x) => [x.index, String(x.before), String(x.after)]),
    "one point pair per sample, as the report says",
  );
  const kind = (v: number | string) => (typeof v === "number" ? "score" : v === "abstained" ? "abstained" : "error");
  const expectedHow = (b: number | string, a: number | string) =>
    typeof b === "number" && typeof a === "number" ? (a > b ? "rose" : a < b ? "fell" : "same") : b === a ? "same" : "kind";
  report.scores.forEach((x, i) => {
    assert.equal(points[i].marks.before.kind, kind(x.before), `sample ${x.index} before`);
    assert.equal(points[i].marks.after.kind, kind(x.after), `sample ${x.index} after`);
    assert.equal(points[i].how, expectedHow(x.before, x.after), `sample ${x.index} moved`);
    assert.ok(points[i].marks.before.x < points[i].marks.after.x, "before left of after");
  });
  assert.deepEqual(
    report.scores.map((x) => [x.before, x.after]),
    [
      [1, 1],
      [0, 0.25],
      [0, 0],
      ["GRADER_ERROR", 0.5],
      [report.scores[4].before, 0.5],
      [1, 1],
      [0, 0.25],
      [1, 0],
    ],
  );
  assert.notEqual(typeof report.scores[4].before, "number", "a null return is no score");
  // on one scale: the same score at the same height, a higher one higher, errors and abstentions under 0
  const yOf = new Map<number, number>();
  const marks = points.flatMap((p, i) => [
    [report.scores[i].before, p.marks.before.y],
    [report.scores[i].after, p.marks.after.y],
  ]) as Array<[number | string, number]>;
  for (const [value, y] of marks) {
    if (typeof value !== "number") continue;
    if (yOf.has(value)) assert.equal(y, yOf.get(value), `${value} at one height`);
    yOf.set(value, y);
  }
  assert.ok(
    (yOf.get(1) ?? 0) < (yOf.get(0.5) ?? 0) && (yOf.get(0.5) ?? 0) < (yOf.get(0.25) ?? 0) && (yOf.get(0.25) ?? 0) < (yOf.get(0) ?? 0),
  );
  for (const [value, y] of marks) if (typeof value !== "number") assert.ok(y > (yOf.get(0) ?? Infinity), `${value} below the scores`);
  assert.deepEqual(
    await page.locator("#update-chart text.lane-label").allTextContents(),
    ["error", "abstained"].filter((k) => report.scores.some((x) => kind(x.before) === k || kind(x.after) === k)),
  );
  assert.equal(
    await page.textContent("#update-report figcaption"),
    `Samples before and after the update to version 2: ${report.changed.length} of ${samples.length} changed`,
  );
  assert.equal(
    await page.getAttribute("#update-chart svg", "aria-label"),
    "Scores of 8 samples before and after the update: 2 rose, 1 fell, 2 changed between a score, an error and an abstention, 3 unchanged",
  );
  assert.equal(
    await page.locator("#update-report .legend li").count(),
    4 + new Set(report.scores.flatMap((x) => [kind(x.before), kind(x.after)]).filter((k) => k !== "score")).size,
  );

  for (const width of [1440, 420]) {
    await page.setViewportSize({ width, height: 900 });
    await drawnAtWidth("#update-chart");
    assert.equal(await page.locator("#update-chart g.sample").count(), samples.length, `${width} px: every sample`);
    await screenshot("#update-report", `console-before-after-${width}`);
  }
  await page.setViewportSize({ width: 1440, height: 900 });

  // opening a grader puts the chart away
  await page.click("#graders tr[data-key='spread']");
  await page.waitForSelector("#detail-key:has-text('spread')");
  assert.equal(await page.isVisible("#update-report"), false);
});

test("the charts module alone, on a report with abstentions and scores outside 0..1, a run with nothing scored, and the page's own histogram", async () => {
  // bundled as the console is, then called with values the sandbox of this branch cannot produce yet
  const built = await esbuild.build({
    stdin: {
      contents:
        "import * as charts from './console/charts.ts'; import { abstainedRow } from './console/panels/results.ts'; " +
        "import { summarize } from './sdk/summary.ts'; Object.assign(globalThis, { charts, abstainedRow, summarize });",
      resolveDir: repoRoot,
      loader: "ts",
    },
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    external: ["node:*"],
    logLevel: "silent",
  });
  const lone = await browser.newPage({ viewport: { width: 600, height: 600 } });
  try {
    await lone.setContent("<!doctype html><body><div id='box' style='width: 500px'></div><table><tbody id='rows'></tbody></table></body>");
    await lone.addScriptTag({ content: built.outputFiles[0].text });
    const scores = [
      { index: 0, before: 0.5, after: "abstained" },
      { index: 1, before: "abstained", after: 2 },
      { index: 2, before: -1, after: "DEADLINE_EXCEEDED" },
    ];
    const drawn = await lone.evaluate((scores) => {
      const w = globalThis as unknown as OnPage;
      const box = document.getElementById("box") as HTMLElement;
      w.charts.drawInto(box, (width) => w.charts.beforeAfterChart(scores, width));
      return {
        width: box.querySelector("svg")?.getAttribute("width"),
        lanes: [...box.querySelectorAll("text.lane-label")].map((t) => t.textContent),
        kinds: [...box.querySelectorAll("g.sample")].map((g) => [...g.querySelectorAll(".mark")].map((m) => m.getAttribute("class"))),
        ticks: [...box.querySelectorAll(".grid text.tick:not(.lane-label)")].map((t) => t.textContent),
        // no functions declared in here: the page has no __name (the helper tsx adds to named ones)
        y: ["g.sample[data-index='1'] .mark.after", "g.sample[data-index='2'] .mark.before", "g.sample[data-index='0'] .mark.after"].map(
          (sel) => Number(box.querySelector(sel)?.getAttribute("data-y")),
        ),
      };
    }, scores);
    assert.equal(drawn.width, "500");
    assert.deepEqual(drawn.lanes, ["error", "abstained"]);
    assert.deepEqual(drawn.kinds, [
      ["mark before score", "mark after abstained"],
      ["mark before abstained", "mark after score"],
      ["mark before score", "mark after error"],
    ]);
    assert.equal(drawn.ticks[0], "-1", "the scale reaches the lowest score");
    assert.equal(drawn.ticks.at(-1), "2", "and the highest");
    const [two, minusOne, abstained] = drawn.y;
    assert.ok(two < minusOne && minusOne < abstained, "2 over -1 over the abstentions' lane");

    const empty = await lone.evaluate(() => {
      const w = globalThis as unknown as OnPage;
      const summary = { count: 2, outcomes: { scored: 0, error: 0, abstained: 2 }, histogram: null };
      const svg = w.charts.histogramChart(summary, 400);
      const list = w.charts.outcomeList(summary);
      const row = w.abstainedRow(0, { code: "DEADLINE_EXCEEDED", reason: "the batch's deadline came first" });
      return {
        bars: svg.querySelectorAll("rect.bar").length,
        label: svg.getAttribute("aria-label"),
        counts: [...list.querySelectorAll("li")].map((li) => `${li.dataset.outcome}=${li.dataset.count}`),
        row: [row.className, row.dataset.code, row.textContent],
      };
    });
    assert.deepEqual(empty, {
      bars: 0,
      label: "No scores to chart",
      counts: ["scored=0", "error=0", "abstained=2"],
      row: ["abstained", "DEADLINE_EXCEEDED", "1–abstained DEADLINE_EXCEEDED: the batch's deadline came first"],
    });

    // a run the server sent no summary for is summarised in the page by the server's own rule
    // (sdk/summary.ts): ten bins from the lowest score to the highest, a score on an edge in the
    // bin it starts, the highest in the last
    const local = await lone.evaluate(() => {
      const w = globalThis as unknown as OnPage;
      const results = [0, 0.3, 0.7, 0.1, 0.2, 1, 0.9999].map((score) => ({ outcome: "scored", score }));
      results.push({ outcome: "error", error: { code: "GRADER_ERROR", message: "x" } } as never);
      return {
        unit: w.summarize(results),
        wide: w.summarize(
          [-1, 3].map((score) => ({ outcome: "scored", score })),
          { bins: 4 },
        ),
        none: w.summarize([]),
      };
    });
    assert.deepEqual(local.unit.histogram?.counts, [1, 1, 1, 1, 0, 0, 0, 1, 0, 2]);
    assert.equal(local.unit.histogram?.edges.length, 11);
    assert.deepEqual(local.unit.outcomes, { scored: 7, error: 1, abstained: 0 });
    assert.deepEqual(local.wide.histogram, { edges: [-1, 0, 1, 2, 3], counts: [1, 0, 0, 1] });
    assert.equal(local.none.histogram, null);
  } finally {
    await lone.close();
  }
});

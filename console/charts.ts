// The console's two charts, drawn as SVG from text (never HTML): the histogram of a run's scores
// and each sample's score before and after an update. Every mark carries its numbers in data
// attributes (what the browser test reads) and a <title> (what a pointer shows). Charts are drawn
// at their box's width in CSS pixels, not scaled from a fixed viewBox, so their text stays 12 px
// from a 420 px phone to a 1440 px screen; drawInto redraws when the box changes width.

import type { BatchSummary, UpdateReport } from "../sdk/wire.ts";
import { el, number } from "./dom.ts";

const NS = "http://www.w3.org/2000/svg";

/** An SVG element with `attributes`, showing `text` as text. */
function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number> = {},
  text?: string,
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

/** The hover text of a mark (an SVG <title> child, which screen readers also read). */
function titled<T extends SVGElement>(element: T, title: string): T {
  element.append(svg("title", {}, title));
  return element;
}

/** A chart's root: its size in pixels, an image to assistive technology with `label` as its name. */
function chartRoot(width: number, height: number, className: string, label: string): SVGSVGElement {
  return svg("svg", {
    class: `chart ${className}`,
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: "img",
    "aria-label": label,
  });
}

const observers = new WeakMap<HTMLElement, ResizeObserver>();

/** Draws `draw(width)` in `box` now (once it has a width) and again whenever its width changes. */
export function drawInto(box: HTMLElement, draw: (width: number) => SVGSVGElement): void {
  observers.get(box)?.disconnect();
  let drawn = -1;
  const render = () => {
    const width = box.clientWidth;
    if (width <= 0 || width === drawn) return;
    drawn = width;
    box.replaceChildren(draw(width));
  };
  render();
  const observer = new ResizeObserver(render);
  observer.observe(box);
  observers.set(box, observer);
}

/** Round steps (1, 2 or 5 × 10^k) of at least `raw`. */
function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw));
  return ([1, 2, 5, 10].find((m) => m * power >= raw) ?? 10) * power;
}

/** Ticks from `lo` to at least `hi`, about `count` of them, on round steps (integers when `integer`). */
function ticks(lo: number, hi: number, count: number, integer = false): number[] {
  const span = hi - lo || 1;
  const step = integer ? Math.max(1, Math.ceil(niceStep(span / count))) : niceStep(span / count);
  const out: number[] = [];
  // rounded to the step's decimals: 0.1 + 0.2 is drawn as 0.3
  const decimals = Math.max(0, -Math.floor(Math.log10(step)) + 1);
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Number(t.toFixed(decimals)));
  return out;
}

/** The outcomes in the order the console shows them, each with its colour class. */
export const OUTCOMES = ["scored", "error", "abstained"] as const;

/** What the histogram needs of a batch summary (a local fallback gives no more than this). */
export type HistogramSummary = Pick<BatchSummary, "count" | "outcomes" | "histogram"> & Partial<BatchSummary>;

const HISTOGRAM = { height: 220, top: 20, right: 12, bottom: 44, left: 46 };

/** Bars of the histogram's bins (x: the bin edges, y: how many scores fell in each). */
export function histogramChart(summary: HistogramSummary, width: number): SVGSVGElement {
  const { histogram } = summary;
  const m = HISTOGRAM;
  const scored = summary.outcomes.scored;
  const root = chartRoot(
    width,
    m.height,
    "histogram",
    histogram
      ? `Histogram of ${scored} score${scored === 1 ? "" : "s"} in ${histogram.counts.length} bins from ${number(histogram.edges[0])} to ${number(histogram.edges.at(-1))}`
      : "No scores to chart",
  );
  if (!histogram || histogram.counts.length === 0) {
    root.append(svg("text", { x: width / 2, y: m.height / 2, "text-anchor": "middle", class: "empty" }, "no scores to chart"));
    return root;
  }
  const plotW = Math.max(40, width - m.left - m.right);
  const plotH = m.height - m.top - m.bottom;
  const bottom = m.top + plotH;
  const maxCount = Math.max(1, ...histogram.counts);
  const yTicks = ticks(0, maxCount, 4, true);
  const yMax = Math.max(maxCount, yTicks.at(-1) ?? maxCount);
  const y = (count: number) => bottom - (count / yMax) * plotH;
  const binW = plotW / histogram.counts.length;

  const grid = svg("g", { class: "grid", "aria-hidden": "true" });
  for (const t of yTicks) {
    grid.append(
      svg("line", { x1: m.left, x2: m.left + plotW, y1: y(t), y2: y(t) }),
      svg("text", { x: m.left - 6, y: y(t) + 4, "text-anchor": "end", class: "tick" }, String(t)),
    );
  }
  const bars = svg("g", { class: "bars" });
  histogram.counts.forEach((count, i) => {
    const [lo, hi] = [histogram.edges[i], histogram.edges[i + 1]];
    const last = i === histogram.counts.length - 1;
    const x = m.left + i * binW;
    const bar = titled(
      svg("rect", {
        class: "bar",
        x: x + 1,
        y: y(count),
        width: Math.max(1, binW - 2),
        height: bottom - y(count),
        "data-lo": lo,
        "data-hi": hi,
        "data-count": count,
      }),
      `${number(lo)} to ${number(hi)}${last ? " (included)" : ""}: ${count} score${count === 1 ? "" : "s"}`,
    );
    bars.append(bar);
    if (count > 0) {
      bars.append(svg("text", { x: x + binW / 2, y: y(count) - 4, "text-anchor": "middle", class: "bar-count" }, String(count)));
    }
  });
  // bin edges under the axis: as many as fit without touching (about 36 px each)
  const xAxis = svg("g", { class: "axis", "aria-hidden": "true" });
  xAxis.append(svg("line", { x1: m.left, x2: m.left + plotW, y1: bottom, y2: bottom }));
  const every = Math.max(1, Math.ceil(36 / binW));
  histogram.edges.forEach((edge, i) => {
    if (i % every !== 0 && i !== histogram.edges.length - 1) return;
    if (i !== histogram.edges.length - 1 && histogram.edges.length - 1 - i < every && i % every === 0 && i !== 0) return;
    const x = m.left + i * binW;
    xAxis.append(
      svg("line", { x1: x, x2: x, y1: bottom, y2: bottom + 4 }),
      svg("text", { x, y: bottom + 16, "text-anchor": "middle", class: "tick" }, number(edge)),
    );
  });
  xAxis.append(
    svg("text", { x: m.left + plotW / 2, y: m.height - 6, "text-anchor": "middle", class: "axis-title" }, "score (bins)"),
    svg(
      "text",
      { x: 12, y: m.top + plotH / 2, "text-anchor": "middle", class: "axis-title", transform: `rotate(-90 12 ${m.top + plotH / 2})` },
      "count",
    ),
  );
  root.append(grid, bars, xAxis);
  return root;
}

/** The counts by outcome beside the histogram, and the summary's statistics when it has them. */
export function outcomeList(summary: HistogramSummary): HTMLElement {
  const aside = el("div", "", "outcomes");
  const list = el("ul");
  list.setAttribute("aria-label", "results by outcome");
  for (const outcome of OUTCOMES) {
    // the outcome in data-outcome, not a class: "error" is the page's class for red error text
    const li = el("li", "", "outcome");
    li.dataset.outcome = outcome;
    li.dataset.count = String(summary.outcomes[outcome]);
    li.append(el("span", "", "swatch"), el("span", outcome, "name"), el("span", String(summary.outcomes[outcome]), "count"));
    list.append(li);
  }
  aside.append(list);
  const stats: Array<[string, unknown]> = [
    ["mean", summary.mean],
    ["sd", summary.std],
    ["sem", summary.sem],
    ["median", summary.quantiles?.p50],
    ["min", summary.min],
    ["max", summary.max],
  ];
  const known = stats.filter(([, v]) => typeof v === "number");
  if (known.length) {
    const dl = el("dl", "", "stats");
    for (const [name, value] of known) dl.append(el("dt", name), el("dd", number(value), "stat-value"));
    aside.append(dl);
  }
  return aside;
}

/** One sample's score (a number), its error code, or "abstained": which lane of the chart it is in. */
type Kind = "score" | "error" | "abstained";
const kindOf = (v: number | string): Kind => (typeof v === "number" ? "score" : v === "abstained" ? "abstained" : "error");

/** A mark at (x, y): a circle for a score, a square for an error, a diamond for an abstention; hollow before, filled after. */
function mark(kind: Kind, when: "before" | "after", x: number, y: number): SVGElement {
  const attributes = { class: `mark ${when} ${kind}`, "data-x": x.toFixed(1), "data-y": y.toFixed(1) };
  if (kind === "score") return svg("circle", { ...attributes, cx: x, cy: y, r: 4.5 });
  if (kind === "error") return svg("rect", { ...attributes, x: x - 4, y: y - 4, width: 8, height: 8 });
  return svg("path", { ...attributes, d: `M${x} ${y - 5.5}L${x + 5.5} ${y}L${x} ${y + 5.5}L${x - 5.5} ${y}Z` });
}

/** A legend's small picture of a mark (or of a line, for rose and fell). */
function swatch(draw: (x: number, y: number) => SVGElement): SVGSVGElement {
  const root = svg("svg", { width: 16, height: 14, viewBox: "0 0 16 14", "aria-hidden": "true", class: "swatch" });
  root.append(draw(8, 7));
  return root;
}

/** How a sample moved, for the colour of its line. */
function change(before: number | string, after: number | string): "rose" | "fell" | "same" | "kind" {
  if (typeof before === "number" && typeof after === "number") return after > before ? "rose" : after < before ? "fell" : "same";
  return before === after ? "same" : "kind";
}

const PAIRS = { top: 14, right: 14, bottom: 46, left: 70, plot: 180, lane: 22 };

/**
 * Each sample's score before the update (hollow) and after it (filled), side by side at its index,
 * joined by a line (green: rose, red: fell); an error or an abstention is drawn in a lane of its own
 * under the scores, so it never reads as a score of 0.
 */
export function beforeAfterChart(scores: UpdateReport["scores"], width: number): SVGSVGElement {
  const m = PAIRS;
  const values = scores.flatMap((s) => [s.before, s.after]);
  const numbers = values.filter((v): v is number => typeof v === "number");
  const lanes = (["error", "abstained"] as const).filter((k) => values.some((v) => kindOf(v) === k));
  const height = m.top + m.plot + (lanes.length ? 10 + lanes.length * m.lane : 0) + m.bottom;
  const moved = scores.map((s) => change(s.before, s.after));
  const count = (c: string) => moved.filter((x) => x === c).length;
  const root = chartRoot(
    width,
    height,
    "before-after",
    `Scores of ${scores.length} sample${scores.length === 1 ? "" : "s"} before and after the update: ` +
      `${count("rose")} rose, ${count("fell")} fell, ${count("kind")} changed between a score, an error and an abstention, ${count("same")} unchanged`,
  );
  const plotW = Math.max(40, width - m.left - m.right);
  const lo = Math.min(0, ...numbers);
  const hi = Math.max(1, ...numbers);
  const plotBottom = m.top + m.plot;
  const y = (v: number) => plotBottom - ((v - lo) / (hi - lo)) * m.plot;
  // the first lane well under 0, so an error never reads as a score near it
  const laneY = (k: Kind) => plotBottom + 10 + m.lane * (lanes.indexOf(k as (typeof lanes)[number]) + 1);
  const at = (v: number | string) => (typeof v === "number" ? y(v) : laneY(kindOf(v)));
  const step = plotW / Math.max(1, scores.length);
  // the pair's two marks apart enough to tell which is which, never outside the sample's slot
  const apart = Math.min(7, step * 0.28);

  const axes = svg("g", { class: "grid", "aria-hidden": "true" });
  for (const t of ticks(lo, hi, 4)) {
    axes.append(
      svg("line", { x1: m.left, x2: m.left + plotW, y1: y(t), y2: y(t) }),
      svg("text", { x: m.left - 6, y: y(t) + 4, "text-anchor": "end", class: "tick" }, number(t)),
    );
  }
  for (const k of lanes) {
    axes.append(
      svg("line", { x1: m.left, x2: m.left + plotW, y1: laneY(k), y2: laneY(k), class: `lane ${k}` }),
      svg("text", { x: m.left - 6, y: laneY(k) + 4, "text-anchor": "end", class: `tick lane-label ${k}` }, k),
    );
  }
  const axisY = plotBottom + (lanes.length ? 10 + lanes.length * m.lane : 0) + 8;
  const xAxis = svg("g", { class: "axis", "aria-hidden": "true" });
  const every = Math.max(1, Math.ceil(28 / step));
  scores.forEach((s, i) => {
    if (i % every !== 0) return;
    xAxis.append(svg("text", { x: m.left + (i + 0.5) * step, y: axisY + 12, "text-anchor": "middle", class: "tick" }, String(s.index)));
  });
  xAxis.append(
    svg("text", { x: m.left + plotW / 2, y: height - 6, "text-anchor": "middle", class: "axis-title" }, "sample"),
    svg(
      "text",
      { x: 12, y: m.top + m.plot / 2, "text-anchor": "middle", class: "axis-title", transform: `rotate(-90 12 ${m.top + m.plot / 2})` },
      "score",
    ),
  );

  const samples = svg("g", { class: "samples" });
  scores.forEach((s, i) => {
    const x = m.left + (i + 0.5) * step;
    const [xb, xa] = [x - apart, x + apart];
    const how = moved[i];
    const g = titled(
      svg("g", {
        class: `sample ${how}`,
        "data-index": s.index,
        "data-before": String(s.before),
        "data-after": String(s.after),
      }),
      `sample ${s.index}: ${typeof s.before === "number" ? number(s.before) : s.before} → ${typeof s.after === "number" ? number(s.after) : s.after}`,
    );
    g.append(
      svg("line", { x1: xb, y1: at(s.before), x2: xa, y2: at(s.after), class: `link ${how}` }),
      mark(kindOf(s.before), "before", xb, at(s.before)),
      mark(kindOf(s.after), "after", xa, at(s.after)),
    );
    samples.append(g);
  });
  root.append(axes, xAxis, samples);
  return root;
}

/** The before/after chart's legend: what each mark and line colour means. */
export function beforeAfterLegend(scores: UpdateReport["scores"]): HTMLUListElement {
  const values = scores.flatMap((s) => [s.before, s.after]);
  const ul = el("ul", "", "legend");
  ul.setAttribute("aria-label", "legend");
  const item = (picture: SVGSVGElement, text: string) => {
    const li = el("li");
    li.append(picture, el("span", text));
    ul.append(li);
  };
  item(
    swatch((x, y) => mark("score", "before", x, y)),
    "before",
  );
  item(
    swatch((x, y) => mark("score", "after", x, y)),
    "after",
  );
  if (values.some((v) => kindOf(v) === "error"))
    item(
      swatch((x, y) => mark("error", "after", x, y)),
      "error (its code on hover)",
    );
  if (values.some((v) => kindOf(v) === "abstained"))
    item(
      swatch((x, y) => mark("abstained", "after", x, y)),
      "abstained",
    );
  item(
    swatch((x, y) => svg("line", { x1: x - 6, y1: y + 4, x2: x + 6, y2: y - 4, class: "link rose" })),
    "rose",
  );
  item(
    swatch((x, y) => svg("line", { x1: x - 6, y1: y - 4, x2: x + 6, y2: y + 4, class: "link fell" })),
    "fell",
  );
  return ul;
}

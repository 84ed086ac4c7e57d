// A batch's results as numbers a person (or a trainer's logger) can read: counts by outcome, the
// spread of the scores, a fixed-bin histogram, statistics over GRPO-style groups, and the named
// components of the scores as channels. Pure functions, no I/O: the server answers `summary` and
// `components` with them, and the SDK recomputes both when it merged a batch it had to split.

import type { BatchSummary, GroupSummary, Histogram } from "./wire.ts";

/** A result as any layer holds it: with or without `outcome`, told apart by its `score`, `error` or `abstained` key. */
export type Outcomeish = {
  outcome?: string;
  score?: unknown;
  error?: unknown;
  abstained?: unknown;
  metadata?: unknown;
  subscores?: unknown;
};

export interface SummaryOptions {
  /** histogram bins (default 10) */
  bins?: number;
  /** a score at or above it passes: pass@k (and, with answerKey, majority@k) over the groups */
  threshold?: number;
  /** the results' metadata field holding the answer, for majority@k */
  answerKey?: string;
  /** the group index of each result, aligned with the results (any numbers: equal ones form a group) */
  groups?: readonly number[];
}

const DEFAULT_BINS = 10;

type Kind = "scored" | "error" | "abstained";

function kindOf(r: Outcomeish): Kind {
  if (r.outcome === "scored" || r.outcome === "error" || r.outcome === "abstained") return r.outcome;
  if ("error" in r && r.error !== undefined) return "error";
  if ("abstained" in r && r.abstained !== undefined) return "abstained";
  return typeof r.score === "number" && Number.isFinite(r.score) ? "scored" : "error";
}

/** The result's score when it is a scored one with a finite score; a score that is not a finite number counts as no score. */
function scoreOf(r: Outcomeish): number | undefined {
  return kindOf(r) === "scored" && typeof r.score === "number" && Number.isFinite(r.score) ? r.score : undefined;
}

/** Linear interpolation between the closest ranks (numpy's default): `sorted` ascending, not empty. */
function quantile(sorted: readonly number[], p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const a = sorted[lo] as number;
  const b = sorted[Math.min(lo + 1, sorted.length - 1)] as number;
  return a + (h - lo) * (b - a);
}

/**
 * `bins` equal bins from the smallest score to the largest; the last bin holds its upper edge.
 * When every score is the same there is no width to divide: one bin [x, x] holding them all.
 */
export function histogram(scores: readonly number[], bins = DEFAULT_BINS): Histogram | null {
  if (!Number.isInteger(bins) || bins < 1) throw new RangeError(`bins must be a whole number from 1 (got ${bins})`);
  if (scores.length === 0) return null;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const x of scores) {
    if (x < min) min = x;
    if (x > max) max = x;
  }
  if (min === max) return { edges: [min, max], counts: [scores.length] };
  // (max - min) * i / bins keeps round edges round (0.3, not 0.30000000000000004); divided
  // first only where max - min overflows (scores near ±Number.MAX_VALUE)
  const span = max - min;
  const step = Number.isFinite(span) ? span / bins : max / bins - min / bins;
  const edge = (i: number) => (i === bins ? max : Number.isFinite(span) ? min + (span * i) / bins : min + i * step);
  const edges = Array.from({ length: bins + 1 }, (_, i) => edge(i));
  const counts = new Array<number>(bins).fill(0);
  for (const x of scores) {
    let i = Math.min(bins - 1, Math.floor((x - min) / step));
    // rounding may put a score on an edge into the neighbouring bin: the edges decide
    while (i > 0 && x < (edges[i] as number)) i--;
    while (i < bins - 1 && x >= (edges[i + 1] as number)) i++;
    counts[i] = (counts[i] as number) + 1;
  }
  return { edges, counts };
}

/** The equality key of a metadata value (an answer, a group): JSON, so 1 and "1" differ. */
const valueKey = (v: unknown): string => JSON.stringify(v) ?? String(v);

function groupSummary(results: ReadonlyArray<Outcomeish>, groups: readonly number[], options: SummaryOptions): GroupSummary {
  if (groups.length !== results.length) {
    throw new RangeError(`groups must hold one group index per result (${groups.length} for ${results.length} results)`);
  }
  const members = new Map<number, number[]>();
  groups.forEach((g, i) => {
    const list = members.get(g);
    if (list) list.push(i);
    else members.set(g, [i]);
  });
  let k = 0;
  const best: number[] = [];
  const means: number[] = [];
  let passed = 0;
  let majorityRight = 0;
  const { threshold, answerKey } = options;
  for (const indexes of members.values()) {
    k = Math.max(k, indexes.length);
    const scored = indexes.flatMap((i) => {
      const score = scoreOf(results[i] as Outcomeish);
      return score === undefined ? [] : [{ score, result: results[i] as Outcomeish }];
    });
    if (scored.length === 0) continue; // no score to say anything with: left out of every mean and share
    best.push(Math.max(...scored.map((s) => s.score)));
    means.push(scored.reduce((sum, s) => sum + s.score, 0) / scored.length);
    if (threshold === undefined) continue;
    if (scored.some((s) => s.score >= threshold)) passed++;
    if (answerKey === undefined) continue;
    // the most common answer, ties to the first seen (Map keeps insertion order); results without one do not vote
    const votes = new Map<string, { count: number; right: boolean }>();
    for (const { score, result } of scored) {
      const metadata = result.metadata;
      if (!metadata || typeof metadata !== "object" || !Object.hasOwn(metadata, answerKey)) continue;
      const key = valueKey((metadata as Record<string, unknown>)[answerKey]);
      const vote = votes.get(key) ?? { count: 0, right: false };
      vote.count++;
      vote.right ||= score >= threshold;
      votes.set(key, vote);
    }
    let top: { count: number; right: boolean } | undefined;
    for (const vote of votes.values()) if (!top || vote.count > top.count) top = vote;
    if (top?.right) majorityRight++;
  }
  const n = best.length;
  const mean = (xs: number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);
  return {
    groups: members.size,
    k,
    meanOfBest: mean(best),
    meanOfMeans: mean(means),
    ...(threshold === undefined ? {} : { passAtK: n === 0 ? null : passed / n }),
    ...(threshold === undefined || answerKey === undefined ? {} : { majorityAtK: n === 0 ? null : majorityRight / n }),
  };
}

/**
 * The batch's summary: results by outcome, and over the scores their mean, population standard
 * deviation, standard error of the mean (sample standard deviation / √n; null with fewer than two
 * scores, where it is undefined), min, max, quantiles (p5…p95, by linear interpolation) and a
 * histogram of `bins` equal bins between min and max (all scores equal: one bin [x, x]). Every
 * statistic of the scores is null when there is no score.
 *
 * With `groups` (a group index per result), the group statistics: `groups` distinct indexes, `k`
 * the largest group's size, and over the groups with at least one score (a group of errors and
 * abstentions says nothing of the policy, so it counts in no share): meanOfBest, meanOfMeans;
 * with `threshold`, passAtK (the share whose best score reaches it); with `answerKey` as well,
 * majorityAtK (the share whose most common `metadata[answerKey]` among its scored results, ties to
 * the first seen, was given by a result scoring at least `threshold`; a group whose results carry
 * no answer counts as wrong).
 */
export function summarize(results: ReadonlyArray<Outcomeish>, options: SummaryOptions = {}): BatchSummary {
  const outcomes = { scored: 0, error: 0, abstained: 0 };
  const scores: number[] = [];
  for (const r of results) {
    const score = scoreOf(r);
    if (score === undefined) {
      const kind = kindOf(r);
      outcomes[kind === "scored" ? "error" : kind]++;
    } else {
      outcomes.scored++;
      scores.push(score);
    }
  }
  const n = scores.length;
  const summary: BatchSummary = {
    count: results.length,
    outcomes,
    mean: null,
    std: null,
    sem: null,
    min: null,
    max: null,
    quantiles: null,
    histogram: histogram(scores, options.bins ?? DEFAULT_BINS),
  };
  if (n > 0) {
    // Welford's running mean and sum of squared deviations: no catastrophic cancellation
    let mean = 0;
    let m2 = 0;
    scores.forEach((x, i) => {
      const delta = x - mean;
      mean += delta / (i + 1);
      m2 += delta * (x - mean);
    });
    const sorted = [...scores].sort((a, b) => a - b);
    summary.mean = mean;
    summary.std = Math.sqrt(m2 / n);
    summary.sem = n > 1 ? Math.sqrt(m2 / (n - 1)) / Math.sqrt(n) : null;
    summary.min = sorted[0] as number;
    summary.max = sorted[n - 1] as number;
    summary.quantiles = {
      p5: quantile(sorted, 0.05),
      p25: quantile(sorted, 0.25),
      p50: quantile(sorted, 0.5),
      p75: quantile(sorted, 0.75),
      p95: quantile(sorted, 0.95),
    };
  }
  if (options.groups) summary.groups = groupSummary(results, options.groups, options);
  return summary;
}

/** A subscore's value as a channel takes it: `score`, else `value` (its old name), when a finite number. */
function channelValue(s: Record<string, unknown>): number | undefined {
  for (const v of [s.score, s.value]) if (typeof v === "number" && Number.isFinite(v)) return v;
  return undefined;
}

/**
 * The named parts of the scores as channels aligned with the results: `components[name][i]` is
 * result i's top-level subscore `name` (an object with a string `name` and a finite `score` or
 * `value`; the first of a name wins), null where result i is not scored or has no such part.
 * Undefined when no result has any.
 */
export function componentsOf(results: ReadonlyArray<Outcomeish>): Record<string, (number | null)[]> | undefined {
  // a Map, then fromEntries: a part named "__proto__" must be a channel, not the object's prototype
  const channels = new Map<string, (number | null)[]>();
  results.forEach((r, i) => {
    if (scoreOf(r) === undefined || !Array.isArray(r.subscores)) return;
    for (const s of r.subscores as unknown[]) {
      if (!s || typeof s !== "object" || Array.isArray(s)) continue;
      const part = s as Record<string, unknown>;
      const value = channelValue(part);
      if (typeof part.name !== "string" || value === undefined) continue;
      let channel = channels.get(part.name);
      if (!channel) {
        channel = new Array<number | null>(results.length).fill(null);
        channels.set(part.name, channel);
      }
      if (channel[i] === null) channel[i] = value;
    }
  });
  return channels.size === 0 ? undefined : Object.fromEntries(channels);
}

/**
 * One group index per thread from the metadata field `field` (GRPO's `prompt_id`): threads with
 * equal values (compared as JSON, so 1 and "1" differ) share the index of the value's first
 * appearance; a thread without the field (absent or null) is a group of its own.
 */
export function groupIndexes(metadatas: ReadonlyArray<Record<string, unknown> | undefined>, field: string): number[] {
  const seen = new Map<string, number>();
  let next = 0;
  return metadatas.map((m) => {
    const value = m && Object.hasOwn(m, field) ? m[field] : undefined;
    if (value === undefined || value === null) return next++;
    const key = valueKey(value);
    let index = seen.get(key);
    if (index === undefined) {
      index = next++;
      seen.set(key, index);
    }
    return index;
  });
}

/** A number short enough for a chart's label: at most 4 significant digits, no trailing zeros. */
const short = (x: number): string => String(Number(x.toPrecision(4)));

/**
 * The histogram as lines of text, one a bin: its range (`[a, b)`, the last `[a, b]`), a bar of
 * up to `width` characters scaled to the fullest bin, and its count.
 */
export function textHistogram(h: Histogram, width = 40): string {
  const labels = h.counts.map((_, i) => {
    const last = i === h.counts.length - 1;
    return `[${short(h.edges[i] as number)}, ${short(h.edges[i + 1] as number)}${last ? "]" : ")"}`;
  });
  const pad = Math.max(...labels.map((l) => l.length));
  const most = Math.max(1, ...h.counts);
  return h.counts
    .map((count, i) => {
      // a bin with any score shows at least one mark, so it does not read as empty
      const bar = count === 0 ? "" : "█".repeat(Math.max(1, Math.round((count / most) * width)));
      return `${(labels[i] as string).padEnd(pad)}  ${bar}${bar ? " " : ""}${count}`;
    })
    .join("\n");
}

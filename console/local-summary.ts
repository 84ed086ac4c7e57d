// A run's summary computed in the page, for when the server sent none (the unsaved source's
// run through validate, a batch too large for one request, or a server without summaries).
// Temporary: sdk/summary.ts's summarize(results, {bins}) replaces it once it lands; it gives the
// chart only what it needs (counts by outcome, the histogram, mean, min and max).

import type { GradeResult } from "../sdk/index.ts";
import type { HistogramSummary } from "./charts.ts";

/** Bins when the request names none: the server's default too. */
export const DEFAULT_BINS = 10;

export function localSummary(results: readonly GradeResult[], bins = DEFAULT_BINS): HistogramSummary {
  const outcomes = { scored: 0, error: 0, abstained: 0 };
  const scores: number[] = [];
  for (const r of results) {
    if ("score" in r) {
      outcomes.scored++;
      scores.push(r.score);
    } else if ("abstained" in r) outcomes.abstained++;
    else outcomes.error++;
  }
  if (scores.length === 0) return { count: results.length, outcomes, histogram: null, mean: null, min: null, max: null };
  const min = Math.min(...scores);
  const max = Math.max(...scores);
  // rewards mostly lie in [0, 1]: that range unless a score is outside it, so two runs compare
  const lo = Math.min(0, min);
  const hi = Math.max(1, max);
  const edges = Array.from({ length: bins + 1 }, (_, i) => (i === bins ? hi : lo + ((hi - lo) * i) / bins));
  const counts: number[] = new Array(bins).fill(0);
  for (const s of scores) {
    // by comparison with the edges drawn (not floor((s - lo) / width), which puts 0.3 in [0.2, 0.3)); the last bin holds its upper edge
    let i = bins - 1;
    while (i > 0 && s < edges[i]) i--;
    counts[i]++;
  }
  const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
  return { count: results.length, outcomes, histogram: { edges, counts }, mean, min, max };
}

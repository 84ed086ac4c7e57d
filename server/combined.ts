// Grading with a combined grader: every part grades the whole batch (in parallel: function
// parts in the sandbox pool, judge parts against their models), then each item's part scores
// are combined with gradebox/graders' rules. A part that abstains is left out and the others'
// weights renormalised (Adaptive's CombinedGrader); when every part abstains, so does the item.

import type { GradeOutcome } from "../sandbox/validate/checks.ts";
import { combine, combineAll, combineAny, type SubScoreInput } from "../sdk/graders.ts";
import type { WireThread } from "../sdk/thread.ts";
import type { CombineMode, ResolvedPart } from "./store/graders.ts";

function subscore(part: ResolvedPart, outcome: Extract<GradeOutcome, { score: number }>): SubScoreInput {
  const metadata = { ...(outcome.reason === undefined ? {} : { reason: outcome.reason }), ...outcome.metadata };
  return { name: part.name, score: outcome.score, weight: part.weight, ...(Object.keys(metadata).length ? { metadata } : {}) };
}

export async function gradeCombined(
  gradePart: (part: ResolvedPart, threads: readonly WireThread[]) => Promise<GradeOutcome[]>,
  mode: CombineMode,
  parts: ResolvedPart[],
  threads: readonly WireThread[],
): Promise<GradeOutcome[]> {
  const perPart = await Promise.all(parts.map((p) => gradePart(p, threads)));
  return Array.from({ length: threads.length }, (_, i): GradeOutcome => {
    const subscores: SubScoreInput[] = [];
    const abstained: Array<{ name: string; code: string; reason: string }> = [];
    for (const [k, part] of parts.entries()) {
      const outcome = perPart[k][i];
      if ("abstained" in outcome) {
        // Adaptive's CombinedGrader rule: a part that abstains is left out, the others' weights renormalised
        abstained.push({ name: part.name, ...outcome.abstained });
        continue;
      }
      if ("error" in outcome) {
        return {
          error: {
            code: "COMPONENT_FAILED",
            // a position is in the part's source, not the combined grader's: it goes in the message
            message: `part "${part.name}" (grader ${part.graderKey}) failed with ${outcome.error.code}: ${outcome.error.message}${
              outcome.error.line === undefined ? "" : ` (line ${outcome.error.line}, column ${outcome.error.column} of ${part.graderKey})`
            }`,
          },
        };
      }
      subscores.push(subscore(part, outcome));
    }
    const positive = subscores.some((s) => (s.weight ?? 1) > 0);
    if (abstained.length > 0 && (subscores.length === 0 || (mode === "weighted" && !positive))) {
      const names = abstained.map((a) => `"${a.name}" (${a.code})`).join(", ");
      return {
        abstained: {
          code: "ALL_PARTS_ABSTAINED",
          reason: `every part ${subscores.length === 0 ? "" : "with a positive weight "}abstained: ${names}`.slice(0, 2000),
        },
      };
    }
    const skipped = abstained.length > 0 ? { metadata: { abstained } } : {};
    // a part's score is any finite number (a grader's contract), not HUD's [0, 1]: unbounded
    if (mode === "weighted") {
      const { score, subscores: weighted } = combine(subscores, { bounded: false });
      return { score, subscores: weighted, ...skipped };
    }
    const collapsed = (mode === "any" ? combineAny : combineAll)(subscores, { bounded: false });
    return { score: collapsed.score, subscores: collapsed.children, ...skipped };
  });
}

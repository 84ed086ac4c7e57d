// Grading with a combined grader: every part grades the whole batch (in parallel: function
// parts in the sandbox pool, judge parts against their models), then each item's part scores
// are combined with gradebox/graders' rules. A part that abstains is left out and the others'
// weights renormalised (Adaptive's CombinedGrader); when every part abstains, so does the item.

import { MAX_RESULT } from "../sandbox/protocol/replies.ts";
import type { GradeOutcome } from "../sandbox/validate/checks.ts";
import { combine, combineAll, combineAny, type SubScoreInput } from "../sdk/graders.ts";
import type { WireThread } from "../sdk/thread.ts";
import type { CombineMode, ResolvedPart } from "./store/graders.ts";

function subscore(part: ResolvedPart, outcome: Extract<GradeOutcome, { score: number }>): SubScoreInput {
  const metadata = { ...(outcome.reason === undefined ? {} : { reason: outcome.reason }), ...outcome.metadata };
  return { name: part.name, score: outcome.score, weight: part.weight, ...(Object.keys(metadata).length ? { metadata } : {}) };
}

/** A subscore list without its parts' metadata (nested lists of `any`/`all` too). */
function withoutMetadata(list: readonly unknown[]): unknown[] {
  return list.map((s) => {
    if (s === null || typeof s !== "object") return s;
    const { metadata: _dropped, children, ...rest } = s as Record<string, unknown>;
    return Array.isArray(children) ? { ...rest, children: withoutMetadata(children) } : rest;
  });
}

/**
 * A combined result is held to a result's bound (MAX_RESULT characters of JSON) like any other:
 * 64 parts each keeping 16 KiB of metadata made one thread's result 1 MB, and a batch's answer
 * 263 MB. Past the bound the parts' metadata is left out (their names, scores and weights stay).
 */
function bounded(outcome: GradeOutcome): GradeOutcome {
  if (!("score" in outcome) || !outcome.subscores) return outcome;
  const size = JSON.stringify(outcome).length;
  if (size <= MAX_RESULT) return outcome;
  return {
    ...outcome,
    subscores: withoutMetadata(outcome.subscores),
    metadata: {
      ...outcome.metadata,
      partsMetadata: `left out: with it this result was ${size} characters of JSON, past the ${MAX_RESULT} a result may be`,
    },
  };
}

export async function gradeCombined(
  gradePart: (part: ResolvedPart, threads: readonly WireThread[]) => Promise<GradeOutcome[]>,
  mode: CombineMode,
  parts: ResolvedPart[],
  threads: readonly WireThread[],
): Promise<GradeOutcome[]> {
  const perPart = await Promise.all(parts.map((p) => gradePart(p, threads)));
  return Array.from({ length: threads.length }, (_, i): GradeOutcome => bounded(combineItem(i)));

  function combineItem(i: number): GradeOutcome {
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
  }
}

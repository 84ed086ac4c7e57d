// A result as the API answers it: the sandbox's, a judge's or an endpoint's outcome with its
// `outcome` named (scored, error, abstained), and what a batch answer says once for all of its
// results: which grader produced them (provenance).

import type { GradeOutcome } from "../sandbox/validate/checks.ts";
import type { GradeResult, Provenance as WireProvenance } from "../sdk/wire.ts";
import type { GraderRow } from "./store/graders.ts";

export type Provenance = WireProvenance;

export function toResult(outcome: GradeOutcome): GradeResult {
  if ("error" in outcome) return { outcome: "error", error: outcome.error };
  if ("abstained" in outcome) return { outcome: "abstained", abstained: outcome.abstained };
  return { outcome: "scored", ...outcome };
}

export const toResults = (outcomes: readonly GradeOutcome[]): GradeResult[] => outcomes.map(toResult);

/** Which grader produced a batch's results: its key, kind, the version that graded and that version's source digest. */
export function provenanceOf(
  row: Pick<GraderRow, "key" | "kind" | "version" | "sourceSha256" | "language">,
  graded: { version: number; sourceSha256: string; language?: GraderRow["language"] },
): Provenance {
  return {
    grader: row.key,
    kind: row.kind,
    version: graded.version,
    sourceSha256: graded.sourceSha256,
    ...(row.kind === "function" && graded.language ? { language: graded.language } : {}),
  };
}

// A result as the API answers it: the sandbox's, a judge's or an endpoint's outcome with its
// `outcome` named (scored, error, abstained), and what a batch answer says once for all of its
// results: which grader produced them (provenance).

import { createHash } from "node:crypto";
import type { GradeOutcome } from "../sandbox/validate/checks.ts";
import type { GradeResult, Provenance as WireProvenance } from "../sdk/wire.ts";
import { AppError } from "./errors.ts";
import { DEFAULT_BINARY_TEMPLATE } from "./judges/kinds.ts";
import type { GraderRow, ResolvedPart } from "./store/graders.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

export type Provenance = WireProvenance;

export function toResult(outcome: GradeOutcome): GradeResult {
  if ("error" in outcome) return { outcome: "error", error: outcome.error };
  if ("abstained" in outcome) return { outcome: "abstained", abstained: outcome.abstained };
  return { outcome: "scored", ...outcome };
}

export const toResults = (outcomes: readonly GradeOutcome[]): GradeResult[] => outcomes.map(toResult);

/** Which grader produced a batch's results: its key, kind, the version that graded and that version's source digest. */
export function provenanceOf(
  row: Pick<GraderRow, "key" | "kind" | "judge" | "endpoint"> & { parts?: readonly ResolvedPart[] },
  graded: { version: number; sourceSha256: string; language?: GraderRow["language"] },
): Provenance {
  const { judge, endpoint } = row;
  return {
    grader: row.key,
    kind: row.kind,
    version: graded.version,
    sourceSha256: graded.sourceSha256,
    ...(row.kind === "function" && graded.language ? { language: graded.language } : {}),
    ...(judge
      ? {
          model: judge.model,
          // a binary judge's prompt template (its own, or ours): prebuilt and rubric prompts are built in code, and
          // sourceSha256 (their definition) identifies them
          ...(judge.type === "binary" ? { templateSha256: sha256(judge.template ?? DEFAULT_BINARY_TEMPLATE) } : {}),
        }
      : {}),
    ...(endpoint ? { endpointVersion: endpoint.info.version } : {}),
    ...(row.parts ? { parts: row.parts.map((p) => provenanceOf({ ...p, key: p.graderKey }, p) as Omit<Provenance, "parts">) } : {}),
  };
}

/** how the sandbox words a group-only grader (gradeGroup / grade_group, no grade) graded without groups */
const GROUP_ONLY = /^this grader grades groups only/;

/**
 * A group-only grader asked for single threads fails every one of them the same way: the
 * request is refused as a whole (400 GROUP_REQUIRED), not answered thread by thread.
 */
export function refuseGroupOnly(outcomes: readonly GradeOutcome[]): void {
  const first = outcomes[0];
  if (first === undefined || !("error" in first) || !GROUP_ONLY.test(first.error.message)) return;
  if (!outcomes.every((o) => "error" in o && GROUP_ONLY.test(o.error.message))) return;
  throw new AppError("GROUP_REQUIRED", first.error.message);
}

// What a code grader's worker answers for an item besides a score: exactly these codes, which the
// host (sandbox/host/replies.ts) accepts from a worker grading a code grader and from no other.
// A function grader's isolate never gets them: a program's tests refused (INVALID_METADATA) or a
// runner down (RUNNER_UNAVAILABLE) are the code path's words, and the host would otherwise take
// them from grader code as the service's own.

import type { AbstainCode, GradeErrorCode } from "../../sdk/errors.ts";
import type { GradeScore } from "../validate/checks.ts";

export const CODE_ERROR_CODES = [
  /** the code path itself failed on the item (a bug: reported, never a 0) */
  "GRADER_ERROR",
  /** the thread does not end with the assistant's turn: there is no program to grade */
  "INVALID_THREAD",
  /** the item's tests (its metadata) are malformed, oversized or of another kind than the grader's */
  "INVALID_METADATA",
] as const satisfies readonly GradeErrorCode[];
export type CodeErrorCode = (typeof CODE_ERROR_CODES)[number];

/** a runner that could not run or reset: the service's fault, so the item abstains rather than scoring 0 */
export const CODE_ABSTAIN_CODES = ["RUNNER_UNAVAILABLE"] as const satisfies readonly AbstainCode[];
export type CodeAbstainCode = (typeof CODE_ABSTAIN_CODES)[number];

/** a code grader's outcome for one item: what gradeThread and the code slice may answer */
export type CodeOutcome =
  | GradeScore
  | { error: { code: CodeErrorCode; message: string } }
  | { abstained: { code: CodeAbstainCode; reason: string } };

// The vocabulary of validation shared by the sandbox, the server and the SDK's wire types.

import type { Check } from "../../sdk/errors.ts";

export { CHECKS, type Check } from "../../sdk/errors.ts";

export interface CheckFailure {
  check: Check;
  message: string;
  /** the check cost the validation worker more than its bound (counts towards the project's validation rate limit) */
  costly?: boolean;
  line?: number;
  column?: number;
}

export { LANGUAGES, type Language } from "../../sdk/errors.ts";

/** Module names a grader may import values from; each is bundled or provided by the prelude. */
export const IMPORT_ALLOW_LIST = ["gradebox", "gradebox/graders"] as const;

/** The mock thread of the test_run check (the function-grader contract fixes it). */
export const MOCK_THREAD = {
  turns: [
    { role: "user", content: "What is 2+2?" },
    { role: "assistant", content: "4" },
  ],
  metadata: {},
} as const;

export { GRADE_ERROR_CODES, type GradeErrorCode } from "../../sdk/errors.ts";
/** The codes a sandbox worker may report; a reply with any other (a judge's, a combined grader's) is malformed. */
export const SANDBOX_ERROR_CODES = ["GRADER_ERROR", "GRADER_TIMEOUT", "GRADER_MEMORY_LIMIT", "INVALID_SCORE", "SANDBOX_CRASHED"] as const;
export type SandboxErrorCode = (typeof SANDBOX_ERROR_CODES)[number];

import type { Abstention, GradeError, ScoredResult } from "../../sdk/wire.ts";

export { ABSTAIN_CODES, type AbstainCode } from "../../sdk/errors.ts";
export type { Abstention, GradeError } from "../../sdk/wire.ts";
/** A thread's score: the wire's ScoredResult without its `outcome`. */
export type GradeScore = Omit<ScoredResult, "outcome">;
/**
 * A thread's score, its error (GRADER_ERROR's line and column are 1-based, in the source as
 * submitted) or an abstention: the API's result (wire GradeResult) without its `outcome`, which
 * the routes add (server/results.ts): the sandbox, judges and endpoints never spell it.
 */
export type GradeOutcome = GradeScore | { error: GradeError } | { abstained: Abstention };

/**
 * Which functions a grader's module exports: `grade(thread)`, `gradeGroup(threads)` (Python:
 * `grade_group`), or both (the wire's GraderShape, as validation answers it). Absent (older
 * versions): thread.
 */
export type { GraderShape } from "../../sdk/wire.ts";

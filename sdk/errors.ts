// Error classes: one per HTTP status family, plus the two a grader author meets most.

/** The five checks of a function grader; `template`: a judge's template; `endpoint`: an external endpoint's /info or /metadata_schema. */
export const CHECKS = ["syntax", "structure", "signature", "execution", "test_run", "template", "endpoint"] as const;
export type Check = (typeof CHECKS)[number];

/** The languages a function grader is written in (each version records its own): the one list the server's schema, the sandbox and the CLI read. */
export const LANGUAGES = ["typescript", "python"] as const;
export type Language = (typeof LANGUAGES)[number];

/**
 * Why a thread has no score and no error: the grader abstained (it returned null / None or threw
 * Abstain), or the service abstained for it where no score is honest (the batch's deadline came,
 * its judge model or endpoint was unavailable and the request asked for abstentions, every part
 * of a combined grader abstained, a code grader's runner failed).
 */
export const ABSTAIN_CODES = [
  "GRADER_ABSTAINED",
  "DEADLINE_EXCEEDED",
  "JUDGE_UNAVAILABLE",
  "ENDPOINT_UNAVAILABLE",
  "ALL_PARTS_ABSTAINED",
  "RUNNER_UNAVAILABLE",
] as const;
export type AbstainCode = (typeof ABSTAIN_CODES)[number];

/** What a result is: a score, an error, or an abstention (every result's `outcome`). */
export const OUTCOMES = ["scored", "error", "abstained"] as const;
export type Outcome = (typeof OUTCOMES)[number];

export class GradeboxError extends Error {
  override name = "GradeboxError";
}

/** The server answered with an error (application/problem+json). */
export class APIError extends GradeboxError {
  override name = "APIError";
  constructor(
    readonly status: number,
    readonly code: string,
    readonly requestId: string | undefined,
    message: string,
    /** the whole problem document */
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
export class BadRequestError extends APIError {
  override name = "BadRequestError";
}
export class AuthenticationError extends APIError {
  override name = "AuthenticationError";
}
export class PermissionDeniedError extends APIError {
  override name = "PermissionDeniedError";
}
export class NotFoundError extends APIError {
  override name = "NotFoundError";
}
export class ConflictError extends APIError {
  override name = "ConflictError";
}
export class PayloadTooLargeError extends APIError {
  override name = "PayloadTooLargeError";
}
export class UnprocessableEntityError extends APIError {
  override name = "UnprocessableEntityError";
}
export class RateLimitError extends APIError {
  override name = "RateLimitError";
}
export class InternalServerError extends APIError {
  override name = "InternalServerError";
}

/** One of the five checks refused the grader; nothing was saved. */
export class GraderValidationError extends UnprocessableEntityError {
  override name = "GraderValidationError";
  readonly check: Check;
  readonly line?: number;
  readonly column?: number;
  constructor(status: number, code: string, requestId: string | undefined, message: string, body: Record<string, unknown>) {
    super(status, code, requestId, message, body);
    this.check = body.check as Check;
    if (typeof body.line === "number") this.line = body.line;
    if (typeof body.column === "number") this.column = body.column;
  }
}

/** The grader ran and failed: GRADER_ERROR, GRADER_TIMEOUT, GRADER_MEMORY_LIMIT, INVALID_SCORE, SANDBOX_CRASHED, COMPONENT_FAILED. */
export class GraderRuntimeError extends UnprocessableEntityError {
  override name = "GraderRuntimeError";
  /** GRADER_ERROR: where in the grader's source (1-based) it was thrown, when known */
  readonly line?: number;
  readonly column?: number;
  constructor(status: number, code: string, requestId: string | undefined, message: string, body: Record<string, unknown>) {
    super(status, code, requestId, message, body);
    if (typeof body.line === "number") this.line = body.line;
    if (typeof body.column === "number") this.column = body.column;
  }
}

/**
 * The grader (or the service, for it) abstained on the thread: no score is honest for it (422
 * ABSTAINED). `abstained.code` says why: GRADER_ABSTAINED (it returned null / None or threw
 * Abstain), JUDGE_UNAVAILABLE or ENDPOINT_UNAVAILABLE (with onUnavailable: "abstain"),
 * ALL_PARTS_ABSTAINED (a combined grader), DEADLINE_EXCEEDED.
 */
export class GraderAbstainedError extends UnprocessableEntityError {
  override name = "GraderAbstainedError";
  readonly abstained: { code: AbstainCode; reason: string };
  constructor(status: number, code: string, requestId: string | undefined, message: string, body: Record<string, unknown>) {
    super(status, code, requestId, message, body);
    const a = body.abstained as { code?: unknown; reason?: unknown } | undefined;
    this.abstained = {
      // a code this SDK does not know yet (a newer server's) is kept as it came
      code: typeof a?.code === "string" ? (a.code as AbstainCode) : "GRADER_ABSTAINED",
      reason: typeof a?.reason === "string" ? a.reason : message,
    };
  }
}

/** No answer from the server: refused, reset, DNS… */
export class APIConnectionError extends GradeboxError {
  override name = "APIConnectionError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
export class APITimeoutError extends APIConnectionError {
  override name = "APITimeoutError";
}
/** The request's `signal` aborted it (no retry follows). */
export class APIUserAbortError extends GradeboxError {
  override name = "APIUserAbortError";
}

/** Codes a grading call can end with instead of a score (the server's per-item error codes). */
export const GRADE_ERROR_CODES = [
  "GRADER_ERROR",
  "GRADER_TIMEOUT",
  "GRADER_MEMORY_LIMIT",
  "INVALID_SCORE",
  "SANDBOX_CRASHED",
  "COMPONENT_FAILED",
  "INVALID_THREAD",
  "JUDGE_UNAVAILABLE",
  "JUDGE_INVALID_OUTPUT",
  "EGRESS_DENIED",
  "INVALID_METADATA",
  "ENDPOINT_UNAVAILABLE",
  "ENDPOINT_INVALID_RESPONSE",
] as const;
export type GradeErrorCode = (typeof GRADE_ERROR_CODES)[number];
const GRADER_RUNTIME_CODES = new Set<string>(GRADE_ERROR_CODES);

export function errorFromResponse(status: number, body: Record<string, unknown>, requestId: string | undefined): APIError {
  const code = typeof body.code === "string" ? body.code : `HTTP_${status}`;
  const detail = typeof body.detail === "string" ? body.detail : typeof body.title === "string" ? body.title : `HTTP ${status}`;
  const message = `${status} ${code}: ${detail}`;
  const args = [status, code, requestId, message, body] as const;
  if (code === "VALIDATION_FAILED") return new GraderValidationError(...args);
  if (code === "ABSTAINED") return new GraderAbstainedError(...args);
  if (GRADER_RUNTIME_CODES.has(code)) return new GraderRuntimeError(...args);
  const byStatus: Record<number, typeof APIError> = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: UnprocessableEntityError,
    429: RateLimitError,
  };
  const Cls = byStatus[status] ?? (status >= 500 ? InternalServerError : APIError);
  return new Cls(...args);
}

// Domain errors and the one table that maps them to HTTP. Responses are
// application/problem+json: {type, title, status, detail, code, requestId, …extra}.

export const ERRORS = {
  INVALID_REQUEST: { status: 400, title: "Invalid request" },
  INVALID_JSON: { status: 400, title: "Malformed JSON body" },
  INVALID_ENCODING: { status: 400, title: "Body is not UTF-8" },
  UNAUTHORIZED: { status: 401, title: "Missing or invalid API key" },
  FORBIDDEN: { status: 403, title: "The API key's role does not allow this" },
  KEY_NOT_FOUND: { status: 404, title: "API key not found" },
  TOKEN_NOT_FOUND: { status: 404, title: "Grade token not found" },
  LAST_ADMIN_KEY: { status: 409, title: "The project's last admin key" },
  NOT_FOUND: { status: 404, title: "No such route" },
  PROJECT_NOT_FOUND: { status: 404, title: "Project not found" },
  GRADER_NOT_FOUND: { status: 404, title: "Grader not found" },
  VERSION_NOT_FOUND: { status: 404, title: "Grader version not found" },
  GRADER_EXISTS: { status: 409, title: "Grader already exists" },
  GRADER_LOCKED: { status: 409, title: "Grader is locked" },
  GRADER_CONFLICT: { status: 409, title: "Grader changed during the update" },
  GRADER_IN_USE: { status: 409, title: "Grader is a part of a combined grader" },
  VERSION_IN_USE: { status: 409, title: "Grader version is current or pinned" },
  QUOTA_EXCEEDED: { status: 409, title: "The project is at a storage quota" },
  GRADER_QUARANTINED: { status: 423, title: "Grader is quarantined" },
  SOURCE_TOO_LARGE: { status: 413, title: "Grader source too large" },
  BODY_TOO_LARGE: { status: 413, title: "Request body too large" },
  BATCH_TOO_LARGE: { status: 413, title: "Batch too large" },
  GROUP_REQUIRED: { status: 400, title: "The grader grades groups of threads" },
  ABSTAINED: { status: 422, title: "The grader abstained: no score is honest for this thread" },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: "Unsupported media type" },
  VALIDATION_FAILED: { status: 422, title: "Grader validation failed" },
  GRADER_ERROR: { status: 422, title: "The grader threw an error" },
  GRADER_TIMEOUT: { status: 422, title: "The grader exceeded its time limit" },
  GRADER_MEMORY_LIMIT: { status: 422, title: "The grader exceeded its memory limit" },
  INVALID_SCORE: { status: 422, title: "The grader did not return a finite number" },
  SANDBOX_CRASHED: { status: 422, title: "The sandbox worker running the grader crashed" },
  COMPONENT_FAILED: { status: 422, title: "A part of the combined grader failed" },
  INVALID_COMPONENT: { status: 422, title: "A part of the combined grader is missing or cannot be a part" },
  INVALID_THREAD: { status: 422, title: "The grader cannot grade this thread" },
  EGRESS_DENIED: { status: 422, title: "The egress policy refuses this address" },
  MODEL_NOT_FOUND: { status: 404, title: "Judge model not found" },
  MODEL_EXISTS: { status: 409, title: "Judge model already exists" },
  MODEL_IN_USE: { status: 409, title: "Judge model is used by a grader" },
  SECRET_NOT_FOUND: { status: 404, title: "Secret not found" },
  SECRET_IN_USE: { status: 409, title: "Secret is used by a model or endpoint" },
  SECRET_HOST_MISMATCH: { status: 409, title: "Secret is bound to another host" },
  SECRETS_NOT_CONFIGURED: { status: 503, title: "The server has no secrets key" },
  JUDGE_UNAVAILABLE: { status: 502, title: "The judge model did not answer" },
  JUDGE_INVALID_OUTPUT: { status: 502, title: "The judge model gave no usable verdict" },
  INVALID_METADATA: { status: 422, title: "The thread's metadata fails the endpoint's schema" },
  ENDPOINT_UNAVAILABLE: { status: 502, title: "The external endpoint did not answer" },
  ENDPOINT_INVALID_RESPONSE: { status: 502, title: "The external endpoint's answer breaks the protocol" },
  VALIDATION_RATE_LIMITED: { status: 429, title: "Too many validations took their worker down" },
  TOO_MANY_BODIES: { status: 429, title: "The project has too many request body bytes in flight" },
  TOO_MANY_SOCKETS: { status: 429, title: "The project has too many reward sockets open" },
  ANSWER_TOO_LARGE: { status: 413, title: "The answer is larger than a reward socket may queue" },
  INTERNAL: { status: 500, title: "Internal server error" },
  SANDBOX_UNAVAILABLE: { status: 503, title: "No sandbox worker is available" },
  BODY_CAPACITY: { status: 503, title: "The server has too many request body bytes in flight" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(detail);
  }
  get status(): number {
    return ERRORS[this.code].status;
  }
}

/** 413 BATCH_TOO_LARGE for a batch of `count` threads past GRADEBOX_MAX_BATCH (a JSON body's, before zod walks it, or a packed one's) */
export function checkBatchSize(count: number, maxBatch: number): void {
  if (count > maxBatch) {
    throw new AppError("BATCH_TOO_LARGE", `a batch holds at most ${maxBatch} threads (GRADEBOX_MAX_BATCH); this one has ${count}`, {
      limit: maxBatch,
    });
  }
}

/** Fastify's own request errors, mapped onto our codes (JSON bodies are ours: json-body.ts). */
export const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "BODY_TOO_LARGE",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "INVALID_REQUEST",
};

export function problem(code: ErrorCode, detail: string, requestId: string, extra: Record<string, unknown> = {}) {
  const { status, title } = ERRORS[code];
  return { type: `urn:gradebox:error:${code}`, title, status, detail, code, requestId, ...extra };
}

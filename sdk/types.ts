// Wire types of the HTTP API, as the SDK returns them.

import type { Check, GradeErrorCode } from "./errors.ts";
import type { SubScore } from "./graders.ts";
import type { StringThread, WireThread } from "./thread.ts";

export type CombineMode = "weighted" | "any" | "all";

export interface Grader {
  project: string;
  key: string;
  kind: "function" | "combined" | "judge" | "endpoint";
  /** the current version: every update stores a new one */
  version: number;
  /** combined graders only */
  mode?: CombineMode;
  description: string;
  locked: boolean;
  /** set while quarantined (the grader took its sandbox worker down, a judge's template or an endpoint's metadata check went over its budget, 3 times in 10 minutes) */
  quarantinedAt: string | null;
  /** faults in the last 10 minutes (calls that took a worker down; a judge's renders and an endpoint's metadata checks over budget) */
  recentFaults: number;
  /** signature warnings from validation (e.g. a missing StringThread annotation) */
  warnings: string[];
  sourceSha256: string;
  createdAt: string;
  updatedAt: string;
}
/** One grader in full: a function grader's source, a combined grader's parts, a judge's or an endpoint's definition. */
export interface GraderWithSource extends Grader {
  source?: string;
  parts?: Array<{ graderKey: string; name: string; weight: number; version: number; pinned: boolean }>;
  judge?: JudgeDefinition;
  endpoint?: EndpointDefinition;
}

// ---------------------------------------------------------------------------------------------
// Judge graders and their models

/** An OpenAI-compatible chat-completions endpoint a project's judges may call. */
export interface CreateModelParams {
  key: string;
  /** the API root before /chat/completions, e.g. http://vllm.internal:8000/v1 */
  baseURL: string;
  /** the model name sent in each request */
  model: string;
  /**
   * one of the project's secrets (`client.secrets.set`) holding the API key, sent as the bearer token;
   * registering binds it to this model's host (ConflictError SECRET_HOST_MISMATCH when it is bound to another)
   */
  apiKeySecret?: string;
  /**
   * instead: a server environment variable (GRADEBOX_SECRET_…) holding the API key, usable only when the
   * operator granted it to this project (GRADEBOX_SECRET_GRANTS; otherwise BadRequestError)
   */
  apiKeyEnv?: string;
  /** requests in flight at once (default 8) */
  maxConcurrency?: number;
  /** per attempt, ms (default 60 000) */
  timeoutMs?: number;
}
export interface Model extends Required<Omit<CreateModelParams, "apiKeyEnv" | "apiKeySecret">> {
  project: string;
  /** the secret (or server variable) the key comes from; the key itself is never shown */
  apiKeySecret?: string;
  apiKeyEnv?: string;
  createdAt: string;
}
export type PrebuiltJudgeType = "FAITHFULNESS" | "CONTEXT_RELEVANCY" | "ANSWER_RELEVANCY";
export type CannotAssessStrategy = "skip" | "zero" | "partial" | "fail";
export interface RubricCriterionInput {
  name: string;
  requirement: string;
  /** default 10; negative: a penalty (MET means the response has the fault) */
  weight?: number;
  /** a multi-choice criterion: the judge picks one label */
  options?: Array<{ label: string; value: number; na?: boolean }>;
}
export interface CreateBinaryJudgeParams {
  key: string;
  /** what a completion must do to PASS */
  criteria: string;
  /** the key of one of the project's models */
  judgeModel: string;
  /** a Handlebars template for the whole prompt (strict mode, built-in helpers only); absent: ours */
  template?: string;
  /** values the template reads as {{template_variables.name}} */
  templateVariables?: Record<string, string>;
  description?: string;
  /** threads the template must render on at registration (instead of the built-in one); no model is called */
  samples?: Array<{ thread: ThreadInput }>;
}
export interface CreatePrebuiltJudgeParams {
  key: string;
  type: PrebuiltJudgeType;
  judgeModel: string;
  description?: string;
}
export interface CreateRubricJudgeParams {
  key: string;
  judgeModel: string;
  criteria: RubricCriterionInput[];
  /** what a CANNOT_ASSESS verdict counts as (default skip) */
  cannotAssess?: CannotAssessStrategy;
  /** the credit of a CANNOT_ASSESS criterion under "partial" (default 0.5) */
  partialCredit?: number;
  description?: string;
}
/** What a stored judge asks, of which model. */
export type JudgeDefinition =
  | { type: "binary"; model: string; criteria: string; template?: string; templateVariables?: Record<string, string> }
  | { type: "prebuilt"; model: string; metric: PrebuiltJudgeType }
  | {
      type: "rubric";
      model: string;
      criteria: Array<Required<Omit<RubricCriterionInput, "options">> & Pick<RubricCriterionInput, "options">>;
      cannotAssess: CannotAssessStrategy;
      partialCredit: number;
    };
export interface JudgePrompt {
  messages: Array<{ role: "system" | "user" | "assistant"; content: string }>;
}

// ---------------------------------------------------------------------------------------------
// External endpoint graders

/** A reward server Gradebox calls to grade: {url}/score, /batch_score, /info and /metadata_schema. */
export interface CreateExternalEndpointParams {
  key: string;
  /** the reward server's root, http:// or https:// (the server's egress policy must allow its address) */
  url: string;
  /**
   * request headers whose values are the project's secrets (`client.secrets.set`), e.g. `{Authorization: "rm-token"}`;
   * registering binds each to this URL's host (ConflictError SECRET_HOST_MISMATCH when it is bound to another)
   */
  headersSecret?: Record<string, string>;
  /**
   * request headers whose values are server environment variables (GRADEBOX_SECRET_…), usable only when the
   * operator granted them to this project (GRADEBOX_SECRET_GRANTS); a header is named in one of the two only
   */
  headersEnv?: Record<string, string>;
  /** per attempt, ms (default 30 000) */
  timeoutMs?: number;
  /** true: /batch_score for batches; false: /score per thread (default true) */
  batch?: boolean;
  /** threads per /batch_score call (default 64) */
  batchSize?: number;
  /** calls in flight to the endpoint at once (default 8) */
  maxConcurrency?: number;
  description?: string;
}
/** Where and how a stored endpoint grader is called, and what its /info and /metadata_schema said at registration. */
export interface EndpointDefinition
  extends Required<Omit<CreateExternalEndpointParams, "key" | "description" | "headersEnv" | "headersSecret">> {
  headersSecret?: Record<string, string>;
  headersEnv?: Record<string, string>;
  info: { version: string; name: string; description: string };
  /** a JSON Schema each thread's metadata must satisfy (INVALID_METADATA otherwise), when the endpoint has one */
  metadataSchema?: unknown;
}
// ---------------------------------------------------------------------------------------------
// Secrets

/** A project secret: its name, where it may be sent and when it was set. Its value is never returned. */
export interface Secret {
  name: string;
  /** the host the value is sent to, bound by the first model or endpoint that uses it; null until then (and again after each set) */
  host: string | null;
  createdAt: string;
  /** when the value was last set */
  updatedAt: string;
}
export interface SetSecretParams {
  /** letters, digits, '.', '_' or '-', at most 128, starting with a letter or digit */
  name: string;
  /** at most 8192 bytes of UTF-8, without line breaks or NUL (it is sent as a header) */
  value: string;
}

/** One stored version of a function grader. */
export interface GraderVersion {
  version: number;
  description: string;
  sourceSha256: string;
  warnings: string[];
  createdAt: string;
}
export interface GraderVersionWithSource extends GraderVersion {
  source: string;
}
export interface GraderPage {
  data: Grader[];
  nextCursor: string | null;
}

/** A score, and what the grader said about it (a grader may return a number or this object). */
export interface GradeScore {
  score: number;
  reason?: string;
  metadata?: Record<string, unknown>;
  subscores?: SubScore[];
}
/** An error's line and column (1-based, in the grader's source as submitted) say where a GRADER_ERROR was thrown, when known. */
export type GradeResult = GradeScore | { error: { code: GradeErrorCode; message: string; line?: number; column?: number } };
export interface GradeResponse extends GradeScore {
  durationMs: number;
  /** the version that graded it */
  version: number;
}
export interface GradeBatchResponse {
  results: GradeResult[];
  durationMs: number;
  /** the version that graded them */
  version: number;
}
export interface ValidateResponse {
  valid: true;
  warnings: string[];
  results?: GradeResult[];
}

export type ThreadInput = StringThread | WireThread;
/** A GradeScore under its other name: `combine` returns `{reward, subscores}`, which a grader may return as it is. */
export type RewardScore = Omit<GradeScore, "score"> & { reward: number };
/** What a grader's Promise may resolve to: a number, a GradeScore or a RewardScore. */
export type GraderOutput = number | GradeScore | RewardScore;
/** A grader function, as `fn` takes it: async, as the server requires (a sync one fails the structure check). */
export type GraderFunction = (thread: StringThread) => Promise<GraderOutput>;
/** Exactly one of fn, source or file. */
export type GraderSourceInput =
  | { fn: GraderFunction; source?: never; file?: never }
  | { source: string; fn?: never; file?: never }
  | { file: string; fn?: never; source?: never };
/** A sample thread a grader carries: test_run grades it, and must give `expected` when set. */
export interface Sample {
  thread: ThreadInput;
  expected?: number;
}
export type CreateFunctionParams = GraderSourceInput & { key: string; description?: string; samples?: Sample[] };
/** A new source for a stored function grader; `description` keeps the current one when absent. */
export type UpdateFunctionParams = GraderSourceInput & {
  graderKey: string;
  description?: string;
  /** replace the grader's samples (absent: keep them) */
  samples?: Sample[];
  /** check and report on the samples, store nothing */
  dryRun?: boolean;
};
/** The grader after an update (unchanged for a dry run), and each sample whose score changed (an error as its code). */
export interface UpdateResult extends GraderWithSource {
  report: { samples: number; changed: Array<{ index: number; before: number | string; after: number | string }> };
  dryRun?: boolean;
}
export interface CreateCombinedParams {
  key: string;
  /** weighted = combine (positive weights normalized), any = max, all = min */
  mode: CombineMode;
  /** `version` pins a part; without it the part follows its current version */
  graders: Array<{ graderKey: string; weight?: number; name?: string; version?: number }>;
  description?: string;
}
export type { Check, GradeErrorCode, WireThread };

/** The server's request limits (`client.limits()`, GET /v1/limits). */
export interface Limits {
  /** threads per grade-batch request: gradeBatch splits larger batches */
  maxBatchThreads: number;
  /** bytes per request body */
  maxBodyBytes: number;
  maxTurns: number;
  /** characters per turn content */
  maxContentChars: number;
  /** UTF-8 bytes of a function grader's source */
  maxSourceBytes: number;
  maxSamples: number;
  /** time limit of one grade call, in ms */
  timeoutMs: number;
  /** heap limit of a grader's isolate, in MB */
  memoryMb: number;
}

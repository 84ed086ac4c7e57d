// Wire types of the HTTP API, as the SDK returns them: aliases of the types generated from the
// server's OpenAPI document (wire.ts), except where the SDK takes friendlier input (a StringThread
// for a thread, a function for a source) or promises more (a grader's subscores).
// test/wire-types.test.ts holds each of those to the generated type.

import type { Check, GradeErrorCode } from "./errors.ts";
import type { SubScore } from "./graders.ts";
import type { StringThread, WireThread } from "./thread.ts";
import type * as Wire from "./wire.ts";

export type CombineMode = Wire.CombineMode;
/** What a function grader's source is written in: typescript (TypeScript or JavaScript) or python. */
export type { Language } from "./errors.ts";
/** A grader, without its source or definition (`quarantinedAt` is set while it is quarantined; POST …/release lifts it). */
export type Grader = Wire.Grader;
/** One grader in full: a function grader's source, a combined grader's parts, a judge's or an endpoint's definition. */
export type GraderWithSource = Wire.GraderDetail;

// ---------------------------------------------------------------------------------------------
// Judge graders and their models

/**
 * An OpenAI-compatible chat-completions endpoint a project's judges may call. Its API key is one of
 * the project's secrets (`apiKeySecret`, set with `client.secrets.set`; registering binds it to this
 * model's host, ConflictError SECRET_HOST_MISMATCH when it is bound to another) or a server environment
 * variable the operator granted to the project (`apiKeyEnv`; otherwise BadRequestError).
 */
export type CreateModelParams = Wire.RequestBody<"models.create">;
/** A judge model: the secret (or server variable) its key comes from, never the key. */
export type Model = Wire.Model;
export type PrebuiltJudgeType = Wire.PrebuiltMetric;
export type CannotAssessStrategy = Wire.CannotAssessStrategy;
export type RubricCriterionInput = CreateRubricJudgeParams["criteria"][number];
/** What a binary judge must do to PASS; `samples`: threads its template must render on at registration (no model is called). */
export interface CreateBinaryJudgeParams extends Omit<Wire.RequestBody<"graders.create.binaryJudge">, "samples"> {
  samples?: Array<{ thread: ThreadInput }>;
}
export type CreatePrebuiltJudgeParams = Wire.RequestBody<"graders.create.prebuiltJudge">;
export type CreateRubricJudgeParams = Wire.RequestBody<"graders.create.rubricJudge">;
/** What a stored judge asks, of which model. */
export type JudgeDefinition = Wire.JudgeSpec;
export type JudgePrompt = Wire.JudgePrompt;

// ---------------------------------------------------------------------------------------------
// External endpoint graders

/**
 * A reward server Gradebox calls to grade: {url}/score, /batch_score, /info and /metadata_schema.
 * `headersSecret` names the project's secrets (`client.secrets.set`), bound to this URL's host at
 * registration (ConflictError SECRET_HOST_MISMATCH when bound to another).
 */
export type CreateExternalEndpointParams = Wire.RequestBody<"graders.create.externalEndpoint">;
/** Where and how a stored endpoint grader is called, and what its /info and /metadata_schema said at registration. */
export type EndpointDefinition = Wire.EndpointSpec;

// ---------------------------------------------------------------------------------------------
// Code-execution graders

/**
 * A grader that runs the completion's program against the tests in each thread's metadata (APPS,
 * TACO, CodeContests, LiveCodeBench, HumanEval, MBPP shapes), each test in a fresh interpreter;
 * every field but `key` has a default (docs/code-graders.md).
 */
export type CreateCodeParams = Wire.RequestBody<"graders.create.code">;
/** A stored code grader's definition, every default filled in. */
export type CodeDefinition = Wire.CodeSpec;

// ---------------------------------------------------------------------------------------------
// API keys

/** An API key as listed: id, project, prefix, label, role, dates; never the key itself. */
export type ApiKey = Wire.ApiKey;
/** A new API key with the key itself (`key`), which the server never shows again. */
export type CreatedApiKey = Wire.CreatedApiKey;
/** `admin` (the project's keys too) or `grader` (everything else). */
export type KeyRole = Wire.KeyRole;
export type CreateApiKeyParams = Wire.RequestBody<"keys.create">;

// Grade tokens

/** A grade token as listed: id, project, grader, prefix, label, options, dates; never the token itself. */
export type GradeToken = Wire.GradeToken;
/** A new grade token with the token itself (`token`) and the URLs trainers reach the grader at. */
export type CreatedGradeToken = Wire.CreatedGradeToken;
/** How a trainer's requests become threads and what a sample without a score is rewarded. */
export type GradeTokenOptions = Wire.GradeTokenOptions;
export type CreateGradeTokenParams = Wire.RequestBody<"tokens.create"> & { grader: string };

// Secrets

/** A project secret: its name, where it may be sent and when it was set. Its value is never returned. */
export type Secret = Wire.Secret;
export interface SetSecretParams extends Wire.RequestBody<"secrets.set"> {
  /** letters, digits, '.', '_' or '-', at most 128, starting with a letter or digit */
  name: string;
}

/** One stored version of a function grader. */
export type GraderVersion = Wire.GraderVersion;
export type GraderVersionWithSource = Wire.GraderVersionDetail;
export type GraderPage = Wire.GraderPage;

/** A score, and what the grader said about it (a grader may return a number or this object). */
export interface GradeScore extends Omit<Wire.ScoredResult, "subscores" | "outcome"> {
  subscores?: SubScore[];
}
/**
 * One thread's result, as `outcome` says: a score, an error (its line and column, 1-based in the
 * grader's source as submitted, say where a GRADER_ERROR was thrown, when known) or an abstention.
 */
export type GradeResult = (GradeScore & { outcome: "scored" }) | Wire.ErrorResult | Wire.AbstainedResult;
/** A thread's score, the version that graded and its provenance (an error or an abstention is thrown). */
export interface GradeResponse extends GradeScore, Omit<Wire.GradeResponse, keyof GradeScore> {}
/**
 * The batch's results, in input order, and what they share: the version and `provenance` that
 * graded them, `components` (named subscores as channels aligned with results), `summary` (when
 * asked) and `deadlineExceeded` (with a deadline: how many threads it left unfinished).
 */
export interface GradeBatchResponse extends Omit<Wire.GradeBatchResponse, "results"> {
  results: GradeResult[];
}
/** Which grader, at which version and source digest, produced a result (a combined grader's parts in `parts`). */
export type Provenance = Wire.Provenance;
export type PartProvenance = Wire.PartProvenance;
/** Why a thread has neither a score nor an error: `code` (an AbstainCode) and `reason`. */
export type Abstention = Wire.Abstention;
/** A batch's counts by outcome and distribution of scores (sdk/summary.ts computes it). */
export type BatchSummary = Wire.BatchSummary;
/** A batch summary's statistics over its groups (named apart from graders.ts's GroupSummary, one group's statistics for gradeGroup). */
export type BatchGroupSummary = Wire.GroupSummary;
export type Histogram = Wire.Histogram;
/**
 * What a grade-batch request may say besides its threads (the SDK's GradeBatchParams take each):
 * `deadlineMs`, `onUnavailable`, `groupBy` or `groups`, `summary` (true, or its options).
 */
export type GradeBatchOptions = Omit<Wire.RequestBody<"graders.gradeBatch">, "threads" | "version">;
/** `summary`'s options: histogram `bins`, pass@k `threshold`, majority@k `answerKey`. */
export type SummaryRequest = Exclude<GradeBatchOptions["summary"], boolean | undefined>;
/** What a judge or endpoint grader does when its model or endpoint does not answer: an error (default) or an abstention. */
export type OnUnavailable = NonNullable<GradeBatchOptions["onUnavailable"]>;
export interface ValidateResponse extends Omit<Wire.ValidateResponse, "results"> {
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
  /**
   * `file`: a grader file, its local imports (`import { a } from "./util"`) bundled in from the
   * current directory (esbuild must be installed); `export` picks one of its named exports
   * (`export async function exactMatch(thread)`) as the grader.
   */
  | { file: string; export?: string; fn?: never; source?: never };
/** A sample thread a grader carries: test_run grades it, and must give `expected` when set. */
export interface Sample extends Omit<Wire.SampleInput, "thread"> {
  thread: ThreadInput;
}
/**
 * A function grader: its key, its source (as `fn`, `source` or `file`), and optionally its language,
 * description and samples. `language` absent: a `.py` file is python, `fn` typescript, and `source`
 * the server's default (typescript).
 */
export type CreateFunctionParams = GraderSourceInput &
  Omit<Wire.RequestBody<"graders.create.function">, "source" | "samples"> & { samples?: Sample[] };
/**
 * A new source for a stored function grader; `language` as a create infers it (for `source`, absent keeps
 * the current version's); `description` keeps the current one when absent, `samples`
 * replace the grader's (absent: keep them), `dryRun` checks and reports on the samples and stores nothing.
 */
export type UpdateFunctionParams = GraderSourceInput &
  Omit<Wire.RequestBody<"graders.update">, "source" | "samples"> & { graderKey: string; samples?: Sample[] };
/** The grader after an update (unchanged for a dry run), and each sample whose score changed (an error as its code). */
export type UpdateResult = Wire.UpdateResult;
/** weighted = combine (positive weights normalized), any = max, all = min; a part's `version` pins it. */
export type CreateCombinedParams = Wire.RequestBody<"graders.create.combined">;
export type { Check, GradeErrorCode, WireThread };

/** The server's request limits (`client.limits()`, GET /v1/limits). */
export type Limits = Wire.Limits;
/** What the project stores against its quotas (`client.usage()`, GET /v1/projects/{project}/usage). */
export type Usage = Wire.Usage;

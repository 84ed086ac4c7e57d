// zod schemas of the HTTP API: the routes validate with them and serialize through them, and the
// OpenAPI document (/docs/json) is generated from them: their .describe() texts are its descriptions.

import { z } from "zod";
import { CodeSpec } from "../sandbox/code/spec.ts";
import { CHECKS, GRADE_ERROR_CODES, LANGUAGES } from "../sandbox/validate/checks.ts";
import { ABSTAIN_CODES } from "../sdk/errors.ts";
import { MAX_ROLE_LENGTH, ROLE_PATTERN, ROLE_RULE, ROLES } from "../sdk/thread.ts";
import type { Config } from "./config.ts";
import { EndpointSpec } from "./endpoints/spec.ts";
import { ERRORS, type ErrorCode } from "./errors.ts";
import { JudgeSpec } from "./judges/spec.ts";
import { named } from "./openapi.ts";
import { KEY_ROLES } from "./store/keys.ts";

/** a project, grader or model key: also what `gradebox keys create --project` accepts */
export const NAME = /^[a-z0-9][a-z0-9._-]{0,127}$/;
const nameMessage = "must match [a-z0-9][a-z0-9._-]{0,127}: lower-case letters, digits, '.', '_' or '-', at most 128 characters";

export const ProjectParams = z.object({
  project: z
    .string()
    .regex(NAME, `project ${nameMessage}`)
    .describe("the project: the API key's own (another project's name answers 404 PROJECT_NOT_FOUND)"),
});
export const GraderParams = ProjectParams.extend({
  graderKey: z.string().regex(NAME, `grader key ${nameMessage}`).describe("the grader's key, unique in its project"),
});
export const GraderKey = z
  .string()
  .regex(NAME, `key ${nameMessage}`)
  .describe("a grader key: lower-case letters, digits, '.', '_' or '-', at most 128 characters");
const noNul = (what: string) => [(s: string) => !s.includes("\u0000"), `${what} must not contain NUL characters`] as const;
export const Source = z
  .string()
  .refine(...noNul("source"))
  .describe(
    "the grader's source, in its `language`: TypeScript or JavaScript (`async function grade(thread)`) or Python (`async def grade(thread)`); 64 KiB of UTF-8 at most",
  );
export const Language = z
  .enum(LANGUAGES, { message: `language must be one of ${LANGUAGES.join(", ")}` })
  .describe("what a function grader's source is written in: typescript (TypeScript or JavaScript) or python")
  .meta({ id: "Language" });
export const GraderShape = z
  .enum(["thread", "group", "both"])
  .describe("a function grader's entry points: grade (thread), gradeGroup / grade_group (group), or both")
  .meta({ id: "GraderShape" });
const DescriptionText = z
  .string()
  .max(2000, "description is at most 2000 characters")
  .refine(...noNul("description"));
export const Description = DescriptionText.default("").describe("free text shown with the grader (at most 2000 characters)");
/** On an update: absent keeps the current description. */
export const DescriptionUpdate = DescriptionText.optional().describe("the new description; absent: keep the current one");

/** Levels of objects and arrays a thread's metadata may nest, the metadata object itself included. */
export const MAX_METADATA_DEPTH = 64;

/** Whether a parsed JSON value nests more than `limit` objects and arrays deep (scanNesting). */
export const nestsDeeperThan = (value: unknown, limit: number): boolean => scanNesting(value, limit) === "deep";

/**
 * "deep" when a parsed JSON value nests more than `limit` objects and arrays deep; with
 * `numbers`, else "numbers" when it holds a number JSON.stringify would not keep (not finite, as
 * 1e999 parses, or -0: they become null and 0). Iterative (deep input cannot overflow the stack
 * here) and it stops at the first container past the limit, so it costs at most one visit per value.
 */
export function scanNesting(value: unknown, limit: number, numbers = false): "deep" | "numbers" | undefined {
  let unkept = false;
  const values: unknown[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop();
    const depth = depths.pop() as number;
    if (v === null || typeof v !== "object") continue;
    if (depth > limit) return "deep";
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (numbers && typeof child === "number" && (!Number.isFinite(child) || Object.is(child, -0))) unkept = true;
      if (child === null || typeof child !== "object") continue;
      if (depth + 1 > limit) return "deep";
      values.push(child);
      depths.push(depth + 1);
    }
  }
  return unkept ? "numbers" : undefined;
}

export const Role = z
  .string({ message: `role must be a string: ${ROLE_RULE}` })
  .regex(new RegExp(ROLE_PATTERN), `role must be text: ${ROLE_RULE}`)
  .describe(
    `who speaks: ${ROLES.join(", ")}, or any other role (e.g. developer), 1 to ${MAX_ROLE_LENGTH} characters without control ` +
      "characters, passed to graders and endpoints as it is",
  )
  .meta({ id: "Role" });

/** A thread as the API takes it, bounded by the server's limits (one schema per configuration). */
export function threadSchema(config: Pick<Config, "maxTurns" | "maxContent">) {
  const Turn = named(config, "Turn", () =>
    z
      .object({
        role: Role,
        content: z
          .string()
          .max(config.maxContent, `content is longer than ${config.maxContent} characters (GRADEBOX_MAX_CONTENT)`)
          .describe("what was said"),
      })
      .describe("one turn of the conversation"),
  );
  return named(config, "Thread", () =>
    z
      .object({
        turns: z
          .array(Turn)
          .min(1, "a thread needs at least one turn")
          .max(config.maxTurns, `a thread has at most ${config.maxTurns} turns (GRADEBOX_MAX_TURNS)`)
          .describe("the conversation, in order: at least one turn (GET /v1/limits has the maximum)"),
        metadata: z
          .record(z.string(), z.unknown())
          .refine((m) => !nestsDeeperThan(m, MAX_METADATA_DEPTH), {
            message: `metadata nests objects and arrays more than ${MAX_METADATA_DEPTH} levels deep; the limit is ${MAX_METADATA_DEPTH} levels: flatten it`,
          })
          .optional()
          .describe(`anything the grader may read (thread.metadata), nesting at most ${MAX_METADATA_DEPTH} levels`),
      })
      .describe("a conversation to grade: its turns and optional metadata"),
  );
}

export const CombineMode = z
  .enum(["weighted", "any", "all"])
  .describe("weighted: the weighted mean of the parts' scores; any: the best part's; all: the worst part's")
  .meta({ id: "CombineMode" });
export const PartOut = z
  .object({
    graderKey: z.string().describe("the part's grader"),
    name: z.string().describe("the part's name in subscores"),
    weight: z.number().describe("the part's weight (weighted mode)"),
    version: z.number().describe("the version the part grades with"),
    pinned: z.boolean().describe("true when the part stays on `version`; false when it follows the part's current version"),
  })
  .describe("one part of a combined grader")
  .meta({ id: "CombinedPart" });
/** the largest version number a request may name */
export const MAX_VERSION = 1_000_000_000;
export const VersionNumber = z.coerce.number().int().min(1).max(MAX_VERSION);

export const GRADER_KINDS = ["function", "combined", "judge", "endpoint", "code"] as const;
export const Grader = z
  .object({
    project: z.string().describe("the grader's project"),
    key: z.string().describe("the grader's key, unique in its project"),
    kind: z
      .enum(GRADER_KINDS)
      .describe("what grades: a function, parts, a judge model, an external endpoint, or the completion's own code run against tests"),
    version: z.number().describe("the current version: every update stores a new one"),
    language: Language.optional().describe("function graders: the language of the current version's source"),
    mode: CombineMode.optional().describe("combined graders: how the parts' scores combine"),
    description: z.string().describe("free text given at creation or update"),
    locked: z.boolean().describe("a locked grader cannot be updated or deleted (PUT …/lock)"),
    quarantinedAt: z
      .string()
      .nullable()
      .describe(
        "set while quarantined: the grader took its sandbox worker down (a judge: its template went over its budget; an endpoint grader: its metadata schema check did) 3 times in 10 minutes (POST …/release lifts it)",
      ),
    recentFaults: z
      .number()
      .describe(
        "faults in the last 10 minutes: calls that took a worker down, judge renders and endpoint metadata schema checks over budget",
      ),
    warnings: z.array(z.string()).describe("what the checks noticed without refusing the grader"),
    sourceSha256: z.string().describe("SHA-256 (hex) of the source, or of a configured grader's definition"),
    createdAt: z.string().describe("ISO 8601"),
    updatedAt: z.string().describe("ISO 8601"),
  })
  .describe("a grader, without its source or definition")
  .meta({ id: "Grader" });
/** One grader in full: a function grader's source, a combined grader's parts, or a judge's definition. */
export const GraderDetail = Grader.extend({
  source: z.string().optional().describe("function graders: the current version's source"),
  parts: z.array(PartOut).optional().describe("combined graders: the parts, in order"),
  judge: JudgeSpec.optional().describe("judge graders: what the judge asks, of which model"),
  endpoint: EndpointSpec.optional().describe("external endpoint graders: where and how it is called, and what its /info said"),
  code: CodeSpec.optional().describe("code-execution graders: the languages, tests, comparison, scoring and limits per test"),
})
  .describe(
    "a grader in full: a function grader's source, a combined grader's parts, a judge's, an endpoint's or a code grader's definition",
  )
  .meta({ id: "GraderDetail" });

export const GradeError = z
  .object({
    code: z.enum(GRADE_ERROR_CODES).describe("why the thread has no score (the codes of the 422 and 502 problem documents)"),
    message: z.string().describe("what went wrong"),
    line: z.number().optional().describe("GRADER_ERROR: the line (1-based) of the grader's source where it was thrown, when known"),
    column: z.number().optional().describe("GRADER_ERROR: the column (1-based) on that line"),
  })
  .describe("why one thread could not be graded")
  .meta({ id: "GradeError" });
export const GradeScore = z
  .object({
    score: z.number().describe("the grader's score: a finite number"),
    reason: z.string().optional().describe("the grader's explanation, when it gave one"),
    metadata: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("what the grader returned besides the score (a judge adds its model and token usage)"),
    subscores: z
      .array(z.unknown())
      .optional()
      .describe(
        "the parts of the score: a combined or judge grader's are {name, score, value, weight, metadata?, children?} " +
          "(value is score's old name, kept as an alias); a function grader's are passed through as it returned them",
      ),
  })
  .describe("a thread's score")
  .meta({ id: "GradeScore" });
export const Abstention = z
  .object({
    code: z
      .enum(ABSTAIN_CODES)
      .describe(
        "GRADER_ABSTAINED: the grader returned null (TypeScript) or None (Python) or threw Abstain; DEADLINE_EXCEEDED: the " +
          "batch's deadlineMs came first; JUDGE_UNAVAILABLE / ENDPOINT_UNAVAILABLE: the model or endpoint did not answer and the " +
          'request set onUnavailable: "abstain"; ALL_PARTS_ABSTAINED: every part of a combined grader abstained; ' +
          "RUNNER_UNAVAILABLE: a code grader's program runner failed (the service's fault, not the program's)",
      ),
    reason: z.string().describe("why, in words"),
  })
  .describe("why a thread has neither a score nor an error: no score is honest for it")
  .meta({ id: "Abstention" });
export const GradeResult = z
  .discriminatedUnion("outcome", [
    GradeScore.extend({ outcome: z.literal("scored").describe("the thread has a score") })
      .describe("a thread's score")
      .meta({ id: "ScoredResult" }),
    z
      .object({ outcome: z.literal("error").describe("the thread could not be graded"), error: GradeError })
      .describe("a thread that could not be graded")
      .meta({ id: "ErrorResult" }),
    z
      .object({ outcome: z.literal("abstained").describe("no score is honest for the thread"), abstained: Abstention })
      .describe("a thread the grader (or the service, for it) abstained on")
      .meta({ id: "AbstainedResult" }),
  ])
  .describe("one thread's result: a score, an error or an abstention, as `outcome` says")
  .meta({ id: "GradeResult" });

const ProvenanceFields = {
  grader: z.string().describe("the grader's key"),
  kind: z.enum(GRADER_KINDS).describe("the grader's kind"),
  version: z.number().describe("the version that graded"),
  sourceSha256: z
    .string()
    .describe("SHA-256 (hex) of that version's source (a function grader) or of the grader's definition (other kinds)"),
  language: Language.optional().describe("function graders: the version's language"),
  model: z.string().optional().describe("judges: the model key"),
  templateSha256: z
    .string()
    .optional()
    .describe("binary judges: SHA-256 (hex) of the prompt template (the judge's own, or the built-in one)"),
  endpointVersion: z.string().optional().describe("endpoints: the version the endpoint's /info reported, when it did"),
};
export const PartProvenance = z
  .object(ProvenanceFields)
  .describe("which grader, at which version and source digest, graded a part")
  .meta({ id: "PartProvenance" });
export const Provenance = z
  .object({
    ...ProvenanceFields,
    parts: z.array(PartProvenance).optional().describe("combined graders: each part's provenance, in order"),
  })
  .describe("which grader, at which version and source digest, produced these results")
  .meta({ id: "Provenance" });

export const Histogram = z
  .object({
    edges: z.array(z.number()).describe("bin edges, ascending: bins + 1 of them; the last bin includes its upper edge"),
    counts: z.array(z.number()).describe("scores per bin"),
  })
  .describe("a fixed-bin histogram of the scores")
  .meta({ id: "Histogram" });
export const GroupSummary = z
  .object({
    groups: z.number().describe("groups in the batch"),
    k: z.number().describe("the largest group's size"),
    meanOfBest: z.number().nullable().describe("the mean over groups of each group's best score"),
    meanOfMeans: z.number().nullable().describe("the mean over groups of each group's mean score"),
    passAtK: z.number().nullable().optional().describe("with `threshold`: the share of groups where at least one score reaches it"),
    majorityAtK: z
      .number()
      .nullable()
      .optional()
      .describe(
        "with `threshold` and `answerKey`: the share of groups whose most common answer (metadata[answerKey] of the results) has a score reaching the threshold",
      ),
  })
  .describe("statistics over the batch's groups")
  .meta({ id: "GroupSummary" });
export const BatchSummary = z
  .object({
    count: z.number().describe("results in the batch"),
    outcomes: z.object({ scored: z.number(), error: z.number(), abstained: z.number() }).describe("results by outcome"),
    mean: z.number().nullable().describe("of the scores (null without any)"),
    std: z.number().nullable().describe("standard deviation of the scores (population)"),
    sem: z.number().nullable().describe("standard error of the mean (sample standard deviation / √n)"),
    min: z.number().nullable(),
    max: z.number().nullable(),
    quantiles: z
      .object({ p5: z.number(), p25: z.number(), p50: z.number(), p75: z.number(), p95: z.number() })
      .nullable()
      .describe("of the scores, by linear interpolation"),
    histogram: Histogram.nullable().describe("of the scores (null without any)"),
    groups: GroupSummary.optional().describe("when the batch was grouped"),
  })
  .describe("the distribution of a batch's scores")
  .meta({ id: "BatchSummary" });

// ---- errors: every error is an application/problem+json document (RFC 9457) ----

export const PROBLEM_JSON = "application/problem+json";

/**
 * The members some problem documents add, each with the codes that may set it: a status's schema
 * lists those of its codes only, and none other (the documents are closed).
 */
const PROBLEM_EXTRAS = {
  check: {
    codes: ["VALIDATION_FAILED"],
    schema: z.enum(CHECKS).describe("VALIDATION_FAILED: the check that refused the grader"),
  },
  message: {
    codes: ["VALIDATION_FAILED"],
    schema: z.string().describe("VALIDATION_FAILED: the check's message (the detail, without its prefix)"),
  },
  line: {
    codes: ["VALIDATION_FAILED", ...GRADE_ERROR_CODES],
    schema: z.number().describe("the line (1-based) of the source or template where it failed, when known"),
  },
  column: {
    codes: ["VALIDATION_FAILED", ...GRADE_ERROR_CODES],
    schema: z.number().describe("the column (1-based) on that line"),
  },
  index: {
    codes: ["VALIDATION_FAILED", "ABSTAINED", ...GRADE_ERROR_CODES],
    schema: z.number().describe("the sample (test_run check) or the request of a reward batch that failed (0-based)"),
  },
  abstained: {
    codes: ["ABSTAINED"],
    // inline, not the named Abstention: a problem document is read standalone, without the document's components
    schema: z
      .object({ code: z.enum(ABSTAIN_CODES), reason: z.string() })
      .describe("ABSTAINED: why the grader (or the service) abstained: its code and reason"),
  },
  expected: { codes: ["VALIDATION_FAILED"], schema: z.number().describe("test_run check: the score the sample expects") },
  actual: { codes: ["VALIDATION_FAILED"], schema: z.number().describe("test_run check: the score the sample got") },
  version: { codes: [...GRADE_ERROR_CODES, "ABSTAINED"], schema: z.number().describe("the version of the grader that failed") },
  limit: {
    codes: ["SOURCE_TOO_LARGE", "BATCH_TOO_LARGE", "TOO_MANY_BODIES", "BODY_CAPACITY", "TOO_MANY_SOCKETS"],
    schema: z.number().describe("the limit exceeded (bytes, threads or sockets)"),
  },
  size: { codes: ["SOURCE_TOO_LARGE"], schema: z.number().describe("the source's size in bytes of UTF-8") },
  usedBy: {
    codes: ["GRADER_IN_USE", "MODEL_IN_USE"],
    schema: z.array(z.string()).describe("the keys of the graders that use it: delete those first"),
  },
  retryAfter: {
    codes: ["VALIDATION_RATE_LIMITED", "TOO_MANY_BODIES", "BODY_CAPACITY"],
    schema: z.number().describe("seconds to wait before retrying (also the Retry-After header)"),
  },
} satisfies Record<string, { codes: readonly ErrorCode[]; schema: z.ZodType }>;

/** The problem document of one status: its codes only, and the extras those codes may set. */
export function problemSchema(status: number, codes: readonly ErrorCode[]) {
  const wrong = codes.filter((code) => ERRORS[code].status !== status);
  if (codes.length === 0 || wrong.length > 0) throw new Error(`problemSchema(${status}): ${wrong.join(", ") || "no codes"}`);
  const extras = Object.fromEntries(
    Object.entries(PROBLEM_EXTRAS)
      .filter(([, extra]) => extra.codes.some((code) => codes.includes(code)))
      .map(([name, extra]) => [name, extra.schema.optional()]),
  ) as Partial<{ [K in keyof typeof PROBLEM_EXTRAS]: z.ZodOptional<(typeof PROBLEM_EXTRAS)[K]["schema"]> }>;
  return z
    .object({
      type: z.string().describe("urn:gradebox:error:<code>"),
      title: z.string().describe("the code's fixed, short title"),
      status: z.literal(status).describe("the HTTP status, repeated"),
      detail: z.string().describe("what went wrong with this request, and how to fix it"),
      code: z.enum(codes as [ErrorCode, ...ErrorCode[]]).describe("the machine-readable error: branch on it"),
      requestId: z.string().describe("the request's id (also the x-request-id header): it finds the request in the server log"),
      ...extras,
    })
    .describe(`a problem document (RFC 9457), code ${codes.join(" or ")}`);
}

/** An error response as the routes declare it: its description lists its codes and titles. */
export interface ErrorResponse {
  description: string;
  content: { [PROBLEM_JSON]: { schema: ReturnType<typeof problemSchema> } };
}

/**
 * The error responses of a route, from the codes it can answer: one response per status of those
 * codes (the ERRORS table's), served as application/problem+json, whose `code` is one of that
 * status's codes. Statuses follow from codes, so the two cannot drift apart:
 *
 *   response: { 200: json("The grader", GraderDetail), ...errorResponses(...IN_PROJECT, "GRADER_NOT_FOUND") }
 */
export function errorResponses(...codes: ErrorCode[]): Record<number, ErrorResponse> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const { status } = ERRORS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      status,
      {
        description: list.map((code) => `${ERRORS[code].title} (${code})`).join("; "),
        content: { [PROBLEM_JSON]: { schema: problemSchema(status, list) } },
      },
    ]),
  );
}

/** Every /v1 route: a missing, invalid or revoked API key (401), or the unexpected (500). */
export const AUTHENTICATED = ["UNAUTHORIZED", "INTERNAL"] as const satisfies readonly ErrorCode[];
/** A route under /v1/projects/{project}: another project's path (404), a malformed path or query (400). */
export const IN_PROJECT = [...AUTHENTICATED, "PROJECT_NOT_FOUND", "INVALID_REQUEST"] as const satisfies readonly ErrorCode[];
/**
 * A route that reads a JSON body: failing its schema, not JSON, not UTF-8, too large, not
 * application/json, or past the bytes of bodies in flight (the project's share, the server's total).
 */
export const WITH_BODY = [
  "INVALID_REQUEST",
  "INVALID_JSON",
  "INVALID_ENCODING",
  "BODY_TOO_LARGE",
  "UNSUPPORTED_MEDIA_TYPE",
  "TOO_MANY_BODIES",
  "BODY_CAPACITY",
] as const satisfies readonly ErrorCode[];
/** Grading: a thread's error is the response's (graders.gradeBatch answers them per thread instead, in its 200). */
export const GRADING = [...GRADE_ERROR_CODES, "GRADER_QUARANTINED", "SANDBOX_UNAVAILABLE"] as const satisfies readonly ErrorCode[];
/** Running the five checks on a function grader's source. */
export const CHECKING = [
  "SOURCE_TOO_LARGE",
  "VALIDATION_FAILED",
  "VALIDATION_RATE_LIMITED",
  "SANDBOX_UNAVAILABLE",
] as const satisfies readonly ErrorCode[];

/** A JSON success response with its description (the OpenAPI response's). */
export const json = <T extends z.ZodType>(description: string, schema: T) => ({ description, content: { "application/json": { schema } } });

/** Sample threads a grader may carry (a function grader's are graded at every update, twice). */
export const MAX_SAMPLES = 100;
/** the longest deadline a batch may ask for (ms) */
export const MAX_DEADLINE_MS = 600_000;

/** One stored version of a function grader (its source only in GraderVersionDetail). */
export const GraderVersion = z
  .object({
    version: z.number().describe("the version number, from 1"),
    language: Language.describe("the language of the version's source (each version records its own)"),
    description: z.string().describe("the grader's description at that version"),
    sourceSha256: z.string().describe("SHA-256 (hex) of the version's source"),
    warnings: z.array(z.string()).describe("what the checks noticed without refusing it"),
    createdAt: z.string().describe("ISO 8601: when the version was stored"),
  })
  .describe("one stored version of a function grader")
  .meta({ id: "GraderVersion" });
export const GraderVersionDetail = GraderVersion.extend({ source: z.string().describe("the version's source") })
  .describe("one stored version of a function grader, with its source")
  .meta({ id: "GraderVersionDetail" });

/** What an update did to the grader's samples: their count, and each one whose score changed (an error as its code). */
export const UpdateReport = z
  .object({
    samples: z.number().describe("sample threads graded under the current version and the new source"),
    changed: z
      .array(
        z.object({
          index: z.number().describe("the sample"),
          before: z.union([z.number(), z.string()]).describe('its score under the current version, its error code, or "abstained"'),
          after: z.union([z.number(), z.string()]).describe('its score under the new source, its error code, or "abstained"'),
        }),
      )
      .describe("each sample whose score changed"),
    scores: z
      .array(
        z.object({
          index: z.number().describe("the sample"),
          before: z.union([z.number(), z.string()]).describe('its score under the current version, its error code, or "abstained"'),
          after: z.union([z.number(), z.string()]).describe('its score under the new source, its error code, or "abstained"'),
        }),
      )
      .describe("every sample, changed or not, before and after (the console charts it)"),
  })
  .describe("how the grader's samples score before and after the update")
  .meta({ id: "UpdateReport" });
/** The grader after an update (its current one, unchanged, for a dry run) and the samples report. */
export const UpdateResult = GraderDetail.extend({
  report: UpdateReport,
  dryRun: z.boolean().optional().describe("true: nothing was stored, the grader shown is the current one"),
  unchanged: z
    .boolean()
    .optional()
    .describe(
      "true: the source (by sha256) and settings (description, samples) were the current version's, so nothing was stored: " +
        "the grader is still at its version",
    ),
})
  .describe("the grader after the update (unchanged for a dry run) and how its samples' scores changed")
  .meta({ id: "UpdateResult" });

// ---- API keys: managed over HTTP by a project's admin key or the operator's token ----

export const KeyRoleSchema = z
  .enum(KEY_ROLES)
  .describe("admin: everything in the project, its keys too; grader: everything but the keys (a project's first key is its admin)")
  .meta({ id: "KeyRole" });
export const ApiKeyInfo = z
  .object({
    id: z.string().describe("the key's id (key_…): what revoking names"),
    project: z.string().describe("the project the key belongs to"),
    prefix: z.string().describe("the key's first characters, to recognise it"),
    label: z.string().describe("a note to recognise the key by"),
    role: KeyRoleSchema,
    createdAt: z.string().describe("ISO 8601: when it was made"),
    revokedAt: z.string().nullable().describe("ISO 8601: when it was revoked; null while it is live"),
  })
  .describe("an API key as listed: never the key itself")
  .meta({ id: "ApiKey" });
export const ApiKeyList = z
  .object({ data: z.array(ApiKeyInfo).describe("the project's keys, live and revoked, oldest first") })
  .describe("the project's API keys")
  .meta({ id: "ApiKeyList" });
export const CreatedApiKey = ApiKeyInfo.extend({
  key: z.string().describe("the key itself: shown in this answer only, stored only as its SHA-256"),
})
  .describe("a new API key, with the key itself (never shown again)")
  .meta({ id: "CreatedApiKey" });
export const CreateApiKey = z
  .object({
    label: z
      .string()
      .max(200, "a key's label is at most 200 characters")
      .refine(...noNul("label"))
      .optional()
      .describe("a note to recognise the key by (none unless given)"),
    role: KeyRoleSchema.optional().describe("grader unless given (a project's first key is always admin)"),
  })
  .strict()
  .describe("a new key's label and role")
  .meta({ id: "CreateApiKey" });
export const KeyParams = ProjectParams.extend({
  keyId: z
    .string()
    .regex(/^key_[0-9a-f]{1,64}$/, "a key id is key_ and hex digits (gradebox keys list shows them)")
    .describe("the key's id, key_…"),
});

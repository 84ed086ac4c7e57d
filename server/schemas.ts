// zod schemas of the HTTP API: the routes validate with them and serialize through them.

import { z } from "zod";
import { CHECKS, GRADE_ERROR_CODES } from "../sandbox/checks.ts";
import { ROLES } from "../sdk/thread.ts";
import type { Config } from "./config.ts";
import { EndpointSpec } from "./endpoints/spec.ts";
import { ERRORS } from "./errors.ts";
import { JudgeSpec } from "./judges/spec.ts";

const NAME = /^[a-z0-9][a-z0-9._-]{0,127}$/;
const nameMessage = "must match [a-z0-9][a-z0-9._-]{0,127}: lower-case letters, digits, '.', '_' or '-', at most 128 characters";

export const ProjectParams = z.object({ project: z.string().regex(NAME, `project ${nameMessage}`) });
export const GraderParams = ProjectParams.extend({ graderKey: z.string().regex(NAME, `grader key ${nameMessage}`) });
export const GraderKey = z.string().regex(NAME, `key ${nameMessage}`);
const noNul = (what: string) => [(s: string) => !s.includes("\u0000"), `${what} must not contain NUL characters`] as const;
export const Source = z.string().refine(...noNul("source"));
const DescriptionText = z
  .string()
  .max(2000, "description is at most 2000 characters")
  .refine(...noNul("description"));
export const Description = DescriptionText.default("");
/** On an update: absent keeps the current description. */
export const DescriptionUpdate = DescriptionText.optional();

/** Levels of objects and arrays a thread's metadata may nest, the metadata object itself included. */
export const MAX_METADATA_DEPTH = 64;

/**
 * Whether a parsed JSON value nests more than `limit` objects and arrays deep. Iterative (deep
 * input cannot overflow the stack here) and it stops at the first container past the limit, so it
 * costs at most one visit per value.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const values: unknown[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop();
    const depth = depths.pop() as number;
    if (v === null || typeof v !== "object") continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child === null || typeof child !== "object") continue;
      if (depth + 1 > limit) return true;
      values.push(child);
      depths.push(depth + 1);
    }
  }
  return false;
}

export function threadSchema(config: Pick<Config, "maxTurns" | "maxContent">) {
  return z.object({
    turns: z
      .array(
        z.object({
          role: z.enum(ROLES, { message: `role must be one of ${ROLES.join(", ")}` }),
          content: z.string().max(config.maxContent, `content is longer than ${config.maxContent} characters (GRADEBOX_MAX_CONTENT)`),
        }),
      )
      .min(1, "a thread needs at least one turn")
      .max(config.maxTurns, `a thread has at most ${config.maxTurns} turns (GRADEBOX_MAX_TURNS)`),
    metadata: z
      .record(z.string(), z.unknown())
      .refine((m) => !nestsDeeperThan(m, MAX_METADATA_DEPTH), {
        message: `metadata nests objects and arrays more than ${MAX_METADATA_DEPTH} levels deep; the limit is ${MAX_METADATA_DEPTH} levels: flatten it`,
      })
      .optional(),
  });
}

export const CombineMode = z.enum(["weighted", "any", "all"]);
export const PartOut = z.object({
  graderKey: z.string(),
  name: z.string(),
  weight: z.number(),
  /** the version the part grades with */
  version: z.number(),
  /** true when the part stays on `version`; false when it follows the part's current version */
  pinned: z.boolean(),
});
export const VersionNumber = z.coerce.number().int().min(1).max(1_000_000_000);

export const Grader = z.object({
  project: z.string(),
  key: z.string(),
  kind: z.enum(["function", "combined", "judge", "endpoint"]),
  /** the current version: every update stores a new one */
  version: z.number(),
  mode: CombineMode.optional(),
  description: z.string(),
  locked: z.boolean(),
  /** set while quarantined: the grader took its sandbox worker down 3 times in 10 minutes */
  quarantinedAt: z.string().nullable(),
  /** worker-killing faults in the last 10 minutes */
  recentFaults: z.number(),
  warnings: z.array(z.string()),
  sourceSha256: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
/** One grader in full: a function grader's source, a combined grader's parts, or a judge's definition. */
export const GraderDetail = Grader.extend({
  source: z.string().optional(),
  parts: z.array(PartOut).optional(),
  judge: JudgeSpec.optional().describe("judge graders: what the judge asks, of which model"),
  endpoint: EndpointSpec.optional().describe("external endpoint graders: where and how it is called, and what its /info said"),
});

export const GradeError = z.object({
  code: z.enum(GRADE_ERROR_CODES),
  message: z.string(),
  line: z.number().optional().describe("GRADER_ERROR: the line (1-based) of the grader's source where it was thrown, when known"),
  column: z.number().optional().describe("GRADER_ERROR: the column (1-based) on that line"),
});
export const GradeScore = z.object({
  score: z.number(),
  reason: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  subscores: z.array(z.unknown()).optional(),
});
export const GradeResult = z.union([GradeScore, z.object({ error: GradeError })]);

export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number(),
    detail: z.string(),
    code: z.string(),
    requestId: z.string(),
    check: z.enum(CHECKS).optional(),
    message: z.string().optional(),
    line: z.number().optional(),
    column: z.number().optional(),
  })
  .passthrough();

/** Every status the error table can answer, each a problem document: the error responses of every route. */
export const ErrorResponses = Object.fromEntries(
  [...new Set(Object.values(ERRORS).map((e) => e.status))].map((status) => [status, Problem]),
);

/** Sample threads a grader may carry (a function grader's are graded at every update, twice). */
export const MAX_SAMPLES = 100;

/** One stored version of a function grader (its source only in GraderVersionDetail). */
export const GraderVersion = z.object({
  version: z.number(),
  description: z.string(),
  sourceSha256: z.string(),
  warnings: z.array(z.string()),
  createdAt: z.string(),
});
export const GraderVersionDetail = GraderVersion.extend({ source: z.string() });

/** What an update did to the grader's samples: their count, and each one whose score changed (an error as its code). */
export const UpdateReport = z.object({
  samples: z.number(),
  changed: z.array(z.object({ index: z.number(), before: z.union([z.number(), z.string()]), after: z.union([z.number(), z.string()]) })),
});
/** The grader after an update (its current one, unchanged, for a dry run) and the samples report. */
export const UpdateResult = GraderDetail.extend({ report: UpdateReport, dryRun: z.boolean().optional() });

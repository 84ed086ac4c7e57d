// The grading routes' bodies on their common path. zod walks every turn of every thread and
// copies each object it accepts (about 1.3 µs per 1.7 KB thread, as much as packing it), yet
// almost every body is already exactly what zod would return. A fast check says "this body is
// plain": only known keys, every value of the type and within the bounds zod's schema demands.
// Then zod is skipped and the parsed body is used as it is. On any doubt (an unknown key, a
// `version` as text, a wrong type, a bound reached) zod runs as before and words the error or strips
// what it strips: the check decides only whether zod may be skipped, never what is refused.
// (A plain body keeps its keys in the client's order, where zod's copy had the schema's: JSON
// objects are unordered, and an endpoint grader receives the turns as the client sent them.)
// test/fast-body.test.ts holds the two to that: whatever the check passes, zod accepts
// unchanged. The one exception is a packed batch (packed-body.ts), which zod never sees: its
// parser checked it with the same limits, and JSON cannot make the PackedThreads it carries.

import { z } from "zod";
import type { $ZodType } from "zod/v4/core";
import { PackedThreads } from "../sandbox/host/packed-threads.ts";
import { isRole, ROLES } from "../sdk/thread.ts";
import type { Config } from "./config.ts";
import { MAX_DEADLINE_MS, MAX_METADATA_DEPTH, MAX_VERSION, nestsDeeperThan, threadSchema, VersionNumber } from "./schemas.ts";

const ROLE_SET: ReadonlySet<unknown> = new Set(ROLES);

/** Body checks by the zod schema they stand in for (server/app.ts's validator compiler asks here). */
export const fastBodies = new WeakMap<$ZodType, (body: unknown) => boolean>();

/** An object as JSON.parse makes it: not null, not an array, Object.prototype its prototype. */
export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;

/** true when every own key of `o` is one of `allowed` */
function onlyKeys(o: Record<string, unknown>, allowed: readonly string[]): boolean {
  for (const key in o) if (!allowed.includes(key)) return false;
  return true;
}

function plainThread(config: Pick<Config, "maxTurns" | "maxContent">): (thread: unknown) => boolean {
  const { maxTurns, maxContent } = config;
  return (thread) => {
    if (!isPlainObject(thread) || !onlyKeys(thread, ["turns", "metadata"])) return false;
    const turns = thread.turns;
    if (!Array.isArray(turns) || turns.length < 1 || turns.length > maxTurns) return false;
    for (let i = 0; i < turns.length; i++) {
      const turn = turns[i];
      if (!isPlainObject(turn) || !onlyKeys(turn, ["role", "content"])) return false;
      const content = turn.content;
      if (!(ROLE_SET.has(turn.role) || isRole(turn.role)) || typeof content !== "string" || content.length > maxContent) return false;
    }
    const metadata = thread.metadata;
    if (metadata === undefined) return !("metadata" in thread);
    return isPlainObject(metadata) && !nestsDeeperThan(metadata, MAX_METADATA_DEPTH);
  };
}

/**
 * An absent `version`, or a version as a number zod keeps as it is: an integer in VersionNumber's
 * range (the SDK pins every part of a split batch but the first to a version; a version as text
 * is zod's to coerce).
 */
function plainVersion(body: Record<string, unknown>): boolean {
  const version = body.version;
  if (version === undefined) return !("version" in body);
  return typeof version === "number" && Number.isInteger(version) && version >= 1 && version <= MAX_VERSION;
}

/** `{thread, version?, onUnavailable?}`: POST …/grade */
function plainGradeBody(thread: (thread: unknown) => boolean): (body: unknown) => boolean {
  return (body) =>
    isPlainObject(body) &&
    onlyKeys(body, ["thread", "version", "onUnavailable"]) &&
    plainVersion(body) &&
    (!("onUnavailable" in body) || body.onUnavailable === "error" || body.onUnavailable === "abstain") &&
    thread(body.thread);
}

/**
 * The batch options zod would keep as they are: an integer deadlineMs in range, a known
 * onUnavailable, a groupBy name within bounds, summary as a boolean (explicit `groups` and summary
 * options are zod's to read).
 */
function plainOptions(body: Record<string, unknown>): boolean {
  const { deadlineMs, onUnavailable, groupBy, summary } = body;
  if (
    "deadlineMs" in body &&
    !(typeof deadlineMs === "number" && Number.isInteger(deadlineMs) && deadlineMs >= 1 && deadlineMs <= MAX_DEADLINE_MS)
  ) {
    return false;
  }
  if ("onUnavailable" in body && onUnavailable !== "error" && onUnavailable !== "abstain") return false;
  if ("groupBy" in body && !(typeof groupBy === "string" && groupBy.length >= 1 && groupBy.length <= 200)) return false;
  return !("summary" in body) || typeof summary === "boolean";
}

const BATCH_KEYS = ["threads", "version", "deadlineMs", "onUnavailable", "groupBy", "summary"];

/** `{threads, version?, deadlineMs?, onUnavailable?, groupBy?, summary?}`: POST …/grade-batch */
function plainBatchBody(thread: (thread: unknown) => boolean): (body: unknown) => boolean {
  return (body) => {
    // a packed batch: its parser checked it and its options (packed-body.ts); JSON cannot make one
    if (isPlainObject(body) && body.threads instanceof PackedThreads) return true;
    if (!isPlainObject(body) || !onlyKeys(body, BATCH_KEYS) || !plainVersion(body) || !plainOptions(body)) return false;
    const threads = body.threads;
    if (!Array.isArray(threads) || threads.length < 1) return false;
    for (let i = 0; i < threads.length; i++) if (!thread(threads[i])) return false;
    return true;
  };
}

/**
 * The bodies of POST …/grade and …/grade-batch and their thread (zod, for the OpenAPI document and
 * every error), with their fast checks (the thread's also tells validator.ts which threads of a bad
 * body it need not look into).
 */
export function gradeBodies(config: Pick<Config, "maxTurns" | "maxContent">) {
  const Thread = threadSchema(config);
  const thread = plainThread(config);
  const version = VersionNumber.optional().describe("grade with this version (function graders); absent: the current one");
  const onUnavailable = z
    .enum(["error", "abstain"])
    .optional()
    .describe(
      'judge and endpoint graders (and parts): when the model or endpoint does not answer, the thread\'s result is an error (502 on /grade; "error", the default) or an abstention ("abstain")',
    );
  const GradeBody = z.object({ thread: Thread, version, onUnavailable }).describe("the thread to grade");
  const GradeBatchBody = z
    .object({
      threads: z.array(Thread).min(1, "threads must hold at least one thread").describe("the threads to grade, in order"),
      version,
      onUnavailable,
      deadlineMs: z
        .number()
        .int()
        .min(1)
        .max(MAX_DEADLINE_MS)
        .optional()
        .describe(
          "answer within this many milliseconds of the request's arrival: every result finished by then, and every other thread " +
            "abstained with DEADLINE_EXCEEDED; the unfinished work is cancelled",
        ),
      groupBy: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .describe(
          "group the threads by this metadata field (e.g. prompt_id): a group grader's gradeGroup receives each group; threads without the field are groups of one",
        ),
      groups: z
        .array(z.number().int().min(0))
        .optional()
        .describe("group the threads explicitly: one group index per thread (threads with the same index form a group)"),
      summary: z
        .union([
          z.boolean(),
          z
            .object({
              bins: z.number().int().min(1).max(100).optional().describe("histogram bins (default 10)"),
              threshold: z.number().finite().optional().describe("a score at or above it passes: pass@k over the groups"),
              answerKey: z
                .string()
                .min(1)
                .max(200)
                .optional()
                .describe("with threshold: the results' metadata field holding the answer, for majority@k over the groups"),
            })
            .strict(),
        ])
        .optional()
        .describe("add the batch's summary (counts by outcome, mean, spread, quantiles, a histogram; group statistics when grouped)"),
    })
    .describe("the threads to grade");
  fastBodies.set(Thread, thread);
  fastBodies.set(GradeBody, plainGradeBody(thread));
  fastBodies.set(GradeBatchBody, plainBatchBody(thread));
  return { Thread, GradeBody, GradeBatchBody };
}

// The grading routes' bodies on their common path. zod walks every turn of every thread and
// copies each object it accepts (about 1.3 µs per 1.7 KB thread, as much as packing it), yet
// almost every body is already exactly what zod would return. A fast check says "this body is
// plain": only known keys, every value of the type and within the bounds zod's schema demands.
// Then zod is skipped and the parsed body is used as it is. On any doubt (an unknown key, a
// `version`, a wrong type, a bound reached) zod runs as before and words the error or strips
// what it strips: the check decides only whether zod may be skipped, never what is refused.
// (A plain body keeps its keys in the client's order, where zod's copy had the schema's: JSON
// objects are unordered, and an endpoint grader receives the turns as the client sent them.)
// test/fast-body.test.ts holds the two to that: whatever the check passes, zod accepts
// unchanged.

import { z } from "zod";
import type { $ZodType } from "zod/v4/core";
import { ROLES } from "../sdk/thread.ts";
import type { Config } from "./config.ts";
import { MAX_METADATA_DEPTH, nestsDeeperThan, threadSchema, VersionNumber } from "./schemas.ts";

const ROLE_SET: ReadonlySet<unknown> = new Set(ROLES);

/** Body checks by the zod schema they stand in for (server/app.ts's validator compiler asks here). */
export const fastBodies = new WeakMap<$ZodType, (body: unknown) => boolean>();

/** An object as JSON.parse makes it: not null, not an array, Object.prototype its prototype. */
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
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
      if (!ROLE_SET.has(turn.role) || typeof content !== "string" || content.length > maxContent) return false;
    }
    const metadata = thread.metadata;
    if (metadata === undefined) return !("metadata" in thread);
    return isPlainObject(metadata) && !nestsDeeperThan(metadata, MAX_METADATA_DEPTH);
  };
}

/** `{thread}`: POST …/grade without a pinned version */
function plainGradeBody(config: Pick<Config, "maxTurns" | "maxContent">): (body: unknown) => boolean {
  const thread = plainThread(config);
  return (body) => isPlainObject(body) && onlyKeys(body, ["thread"]) && thread(body.thread);
}

/** `{threads}`: POST …/grade-batch without a pinned version */
function plainBatchBody(config: Pick<Config, "maxTurns" | "maxContent">): (body: unknown) => boolean {
  const thread = plainThread(config);
  return (body) => {
    if (!isPlainObject(body) || !onlyKeys(body, ["threads"])) return false;
    const threads = body.threads;
    if (!Array.isArray(threads) || threads.length < 1) return false;
    for (let i = 0; i < threads.length; i++) if (!thread(threads[i])) return false;
    return true;
  };
}

/** The bodies of POST …/grade and …/grade-batch (zod, for the OpenAPI document and every error), with their fast checks. */
export function gradeBodies(config: Pick<Config, "maxTurns" | "maxContent">) {
  const Thread = threadSchema(config);
  const version = VersionNumber.optional().describe("grade with this version (function graders); absent: the current one");
  const GradeBody = z.object({ thread: Thread, version }).describe("the thread to grade");
  const GradeBatchBody = z
    .object({
      threads: z.array(Thread).min(1, "threads must hold at least one thread").describe("the threads to grade, in order"),
      version,
    })
    .describe("the threads to grade");
  fastBodies.set(GradeBody, plainGradeBody(config));
  fastBodies.set(GradeBatchBody, plainBatchBody(config));
  return { GradeBody, GradeBatchBody };
}

// The packed wire's body parser (sdk/packed-batch.ts): POST …/grade-batch with its threads packed,
// `<options JSON>\n<head>\n<text>` in UTF-8. The JSON path decodes, parses and walks every turn
// of every thread, then packs them again for the sandbox; here only the head is parsed (numbers
// and metadata), the contents are one string checked by its length, and the batch goes to the
// sandbox as it came. The checks are the JSON path's: the same limits, refused with the same codes.

import type { FastifyInstance } from "fastify";
import type { $ZodType } from "zod/v4/core";
import { PackedThreads } from "../sandbox/host/packed-threads.ts";
import { PACKED_BATCH_TYPE } from "../sdk/packed-batch.ts";
import { isRole, type Metadata, ROLE_RULE, ROLES } from "../sdk/thread.ts";
import type { Config } from "./config.ts";
import { AppError, checkBatchSize } from "./errors.ts";
import { isPlainObject } from "./fast-body.ts";
import { parseJsonOrRefuse, readUtf8Body } from "./json-body.ts";
import { MAX_METADATA_DEPTH, scanNesting } from "./schemas.ts";
import { checkBounded, issuesText } from "./validator.ts";

const NEWLINE = "\n";
const FORM = `a packed batch (${PACKED_BATCH_TYPE}) is the request's options as JSON, a newline, the batch's head as JSON, a newline, then every turn's content`;

type Limits = Pick<Config, "maxBatch" | "maxTurns" | "maxContent" | "bodyLimit">;

/**
 * Registers the parser on `app` (the grader routes' plugin): a packed body sent to any route but
 * grade-batch is refused with 415. `options` is the zod schema of the JSON body less `threads`.
 */
export function registerPackedParser(app: FastifyInstance, config: Limits, options: $ZodType): void {
  app.addContentTypeParser(PACKED_BATCH_TYPE, (req, payload, done) => {
    if (!req.routeOptions.url?.endsWith("/grade-batch")) {
      return done(new AppError("UNSUPPORTED_MEDIA_TYPE", `only POST …/grade-batch takes ${PACKED_BATCH_TYPE}; send application/json`));
    }
    readUtf8Body(req, payload, config.bodyLimit, "the packed batch", (error, text) => {
      if (error || text === undefined) return done(error);
      try {
        done(null, parsePacked(text, config, options));
      } catch (error) {
        done(error as Error, undefined);
      }
    });
  });
}

/** The body of a packed grade-batch (decoded from UTF-8): its options as the JSON body has them, and `threads` a PackedThreads. Throws AppError. */
export function parsePacked(body: string, config: Limits, options: $ZodType): Record<string, unknown> & { threads: PackedThreads } {
  const first = body.indexOf(NEWLINE);
  const second = first < 0 ? -1 : body.indexOf(NEWLINE, first + 1);
  if (second < 0) throw new AppError("INVALID_REQUEST", `${FORM}; this body has ${first < 0 ? "no" : "one"} newline`);
  const opts = parseJsonOrRefuse(body.slice(0, first), "the packed batch's options");
  if (typeof opts !== "object" || opts === null || Array.isArray(opts))
    throw new AppError("INVALID_REQUEST", `${FORM}; the options are not a JSON object`);
  if ("threads" in opts) throw new AppError("INVALID_REQUEST", "a packed batch's threads are its head and contents, not an options field");
  // zod words what is wrong as it does for a JSON body: its first issues, found with bounded work
  const checked = checkBounded(options, opts);
  if ("issues" in checked) throw new AppError("INVALID_REQUEST", issuesText(checked.issues, checked.more));
  const head = body.slice(first + 1, second);
  const text = body.slice(second + 1);
  const { nums, metadata, others, normalize } = checkHead(parseJsonOrRefuse(head, "the packed batch's head"), text.length, config);
  // a metadata number JSON would not keep (Infinity, -0): the isolate gets what the JSON path would send it
  const sent = normalize ? PackedThreads.head(nums, metadata, others) : head;
  return { ...(checked.value as Record<string, unknown>), threads: new PackedThreads(sent, text, nums, metadata, others) };
}

const isInt = (v: unknown, min: number, max: number): v is number => typeof v === "number" && Number.isInteger(v) && v >= min && v <= max;
/** a value in an error message by its kind: never the value itself, which may be megabytes or nested past the stack */
function describe(v: unknown): string {
  if (typeof v === "number") return String(v);
  if (v === null) return "null";
  if (v === undefined) return "missing";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/**
 * The head's shape (sdk/packed-batch.ts's PackedBatch.head, without groups: grouping is the
 * request's groupBy or groups), every thread within the JSON path's limits, every other role
 * used by a turn, and the contents exactly as long as the head's lengths add up to. Throws
 * AppError naming the first thread at fault. `normalize`: a metadata number JSON would not keep
 * as it is (the head is then made again from the parsed metadata, as the JSON path's is).
 */
export function checkHead(
  parsed: unknown,
  textLength: number,
  config: Limits,
): { nums: number[]; metadata: Array<Metadata | null>; others: string[]; normalize: boolean } {
  const bad = (message: string) => new AppError("INVALID_REQUEST", `the packed batch's head: ${message}`);
  if (!Array.isArray(parsed) || (parsed.length !== 2 && parsed.length !== 4)) {
    throw bad("must be [numbers, metadata] or [numbers, metadata, null, other roles]");
  }
  const [nums, metadata] = parsed as [unknown, unknown];
  if (!Array.isArray(nums) || !Array.isArray(metadata)) throw bad("its numbers and its metadata must be arrays");
  let others: string[] = [];
  if (parsed.length === 4) {
    const roles = parsed[3] as unknown;
    if (parsed[2] !== null || !Array.isArray(roles) || roles.length === 0) {
      throw bad("a third element must be null and a fourth the other roles");
    }
    for (const role of roles) {
      if (!isRole(role))
        throw bad(`other role ${typeof role === "string" ? JSON.stringify(role.slice(0, 80)) : describe(role)}: ${ROLE_RULE}`);
      if ((ROLES as readonly string[]).includes(role))
        throw bad(`other role "${role}" is a known role: use its index (${ROLES.indexOf(role as never)})`);
    }
    if (new Set(roles).size !== roles.length) throw bad("an other role is listed twice: list each once");
    others = roles as string[];
  }
  const count = metadata.length;
  if (count < 1) throw new AppError("INVALID_REQUEST", "body.threads: threads must hold at least one thread");
  checkBatchSize(count, config.maxBatch);
  const roles = ROLES.length + others.length;
  const used = new Uint8Array(others.length);
  let normalize = false;
  let n = 0;
  let total = 0;
  for (let t = 0; t < count; t++) {
    const turns = nums[n++];
    if (!isInt(turns, 1, config.maxTurns)) {
      throw bad(`thread ${t}: a thread has 1 to ${config.maxTurns} turns (GRADEBOX_MAX_TURNS); its count is ${describe(turns)}`);
    }
    for (let i = 0; i < turns; i++, n += 2) {
      const role = nums[n];
      if (!isInt(role, 0, roles - 1)) throw bad(`thread ${t}, turn ${i}: no role has index ${describe(role)}`);
      if (role >= ROLES.length) used[role - ROLES.length] = 1;
      const length = nums[n + 1];
      if (!isInt(length, 0, config.maxContent)) {
        throw bad(
          `thread ${t}, turn ${i}: a content length is a whole number up to ${config.maxContent} (GRADEBOX_MAX_CONTENT); this one is ${describe(length)}`,
        );
      }
      total += length;
    }
    const m = metadata[t];
    if (m === null) continue;
    if (!isPlainObject(m)) throw bad(`thread ${t}: metadata must be null or an object, not ${describe(m)}`);
    const problem = scanNesting(m, MAX_METADATA_DEPTH, true);
    if (problem === "deep") {
      throw bad(
        `thread ${t}: metadata nests objects and arrays more than ${MAX_METADATA_DEPTH} levels deep; the limit is ${MAX_METADATA_DEPTH}: flatten it`,
      );
    }
    if (problem === "numbers") normalize = true;
  }
  if (n !== nums.length) throw bad(`its numbers hold ${nums.length - n} more than ${count} threads' turns`);
  const unused = used.indexOf(0);
  if (unused >= 0) throw bad(`other role ${JSON.stringify(others[unused])} is used by no turn: list only the roles the turns use`);
  if (total !== textLength) {
    throw bad(
      `the turns' lengths add up to ${total} characters, but the contents hold ${textLength} (a length counts UTF-16 code units, as JavaScript's string length, not bytes)`,
    );
  }
  return { nums: nums as number[], metadata: metadata as Array<Metadata | null>, others, normalize };
}

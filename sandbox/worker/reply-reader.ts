// The worker's strict reader of what an isolate returns (the format: isolate/reply.ts). Nothing
// here trusts the isolate: the reader never loops past the number of items the worker asked for,
// checks every record against the score rules again, and treats any deviation as the grader's
// fault.

import { MAX_MESSAGE, MAX_RESULT } from "../protocol/replies.ts";
import { type GradeOutcome, type GradeScore, SANDBOX_ERROR_CODES } from "../validate/checks.ts";

/** the longest record: a structured result or an error message, with its tag and lengths */
const MAX_RECORD = MAX_RESULT + 32;

export interface DecodedReply {
  /** an error's line and column, when present, are still positions in grader.js (the engine maps them) */
  outcomes: GradeOutcome[];
  /** the item after the last outcome never settled */
  pending: boolean;
}

/** The isolate broke the reply format or the score rules: the grader's fault. */
export class ReplyViolation extends Error {}

const DIGITS = /^\d{1,6}$/;

function readLength(text: string, at: number, end: string): [number, number] {
  const stop = text.indexOf(end, at);
  if (stop < 0 || stop - at > 6) throw new ReplyViolation("a record's length is unreadable");
  const digits = text.slice(at, stop);
  if (!DIGITS.test(digits)) throw new ReplyViolation("a record's length is not a number");
  return [Number(digits), stop + 1];
}

/**
 * Reads at most `asked` records. Throws ReplyViolation for anything else: more records than
 * asked, a malformed record, a result that breaks the rules, trailing bytes, or no progress.
 */
export function decodeReply(text: unknown, asked: number): DecodedReply {
  if (typeof text !== "string") throw new ReplyViolation("the reply is not a string");
  if (text.length > asked * MAX_RECORD + 1)
    throw new ReplyViolation(`the reply is ${text.length} characters, more than ${asked} items can fill`);
  const outcomes: GradeOutcome[] = [];
  let at = 0;
  while (outcomes.length < asked && at < text.length - 1) {
    const tag = text[at];
    if (tag === "n") {
      const stop = text.indexOf(";", at);
      if (stop < 0 || stop - at > 32) throw new ReplyViolation("a score record is unreadable");
      const score = Number(text.slice(at + 1, stop));
      if (!Number.isFinite(score) || text.slice(at + 1, stop).trim() === "") throw new ReplyViolation("a score is not a finite number");
      outcomes.push({ score });
      at = stop + 1;
    } else if (tag === "r") {
      const [length, start] = readLength(text, at + 1, ":");
      if (length > MAX_RESULT) throw new ReplyViolation(`a result is ${length} characters of JSON; the limit is ${MAX_RESULT}`);
      if (start + length > text.length) throw new ReplyViolation("a result record is cut short");
      outcomes.push(checkResultJson(text.slice(start, start + length)));
      at = start + length;
    } else if (tag === "e") {
      const [code, afterCode] = readLength(text, at + 1, ",");
      const [line, afterLine] = readLength(text, afterCode, ",");
      const [column, afterColumn] = readLength(text, afterLine, ",");
      const [length, start] = readLength(text, afterColumn, ":");
      const name = SANDBOX_ERROR_CODES[code];
      if (name === undefined || length > MAX_MESSAGE + 1) throw new ReplyViolation("an error record is malformed");
      // a position comes whole (both or neither) and only with an error the grader's code threw
      if ((line === 0) !== (column === 0) || (line !== 0 && name !== "GRADER_ERROR"))
        throw new ReplyViolation("an error record's position is malformed");
      if (start + length > text.length) throw new ReplyViolation("an error record is cut short");
      const message = text.slice(start, start + length);
      outcomes.push({ error: line === 0 ? { code: name, message } : { code: name, message, line, column } });
      at = start + length;
    } else if (tag === "a") {
      const [length, start] = readLength(text, at + 1, ":");
      if (length > MAX_MESSAGE + 1) throw new ReplyViolation("an abstention's reason is longer than a message may be");
      if (start + length > text.length) throw new ReplyViolation("an abstention record is cut short");
      // the only abstention a grader can make: the other codes are the host's (a deadline, an unavailable judge)
      outcomes.push({ abstained: { code: "GRADER_ABSTAINED", reason: text.slice(start, start + length) } });
      at = start + length;
    } else {
      throw new ReplyViolation(`an unknown record tag at character ${at}`);
    }
  }
  if (at !== text.length - 1) throw new ReplyViolation("the reply does not end where its records do");
  const trailer = text[at];
  if (trailer !== "." && trailer !== "p") throw new ReplyViolation("the reply's trailer is malformed");
  const pending = trailer === "p";
  if (pending && outcomes.length >= asked) throw new ReplyViolation("a pending item past the items asked for");
  if (outcomes.length === 0 && !pending) throw new ReplyViolation("the call made no progress");
  return { outcomes, pending };
}

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);
const isRecord = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

/** Keys that requests may not carry may not come back in results either. */
function forbiddenKey(value: unknown): string | undefined {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const x of v) if (x !== null && typeof x === "object") stack.push(x);
    } else if (v !== null && typeof v === "object") {
      for (const key of Object.keys(v)) {
        if (FORBIDDEN_KEYS.has(key)) return key;
        const x = (v as Record<string, unknown>)[key];
        if (x !== null && typeof x === "object") stack.push(x);
      }
    }
  }
  return undefined;
}

const invalid = (message: string): GradeOutcome => ({ error: { code: "INVALID_SCORE", message } });

/**
 * A structured result's JSON, checked as if the prelude had never seen it. A record is one
 * item's: a result that breaks a rule (toJSON hooks in its metadata can make it say anything)
 * is INVALID_SCORE for that item alone.
 */
export function checkResultJson(json: string): GradeOutcome {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return invalid("the result did not serialize to JSON");
  }
  if (!isRecord(value) || typeof value.score !== "number" || !Number.isFinite(value.score)) {
    return invalid("the result's score must be a finite number");
  }
  const { score, reason, metadata, subscores, ...rest } = value;
  if (Object.keys(rest).length > 0) return invalid(`the result has unknown fields: ${Object.keys(rest).slice(0, 5).join(", ")}`);
  if (reason !== undefined && typeof reason !== "string") return invalid("the result's reason must be a string");
  if (metadata !== undefined && !isRecord(metadata)) return invalid("the result's metadata must serialize to an object");
  if (subscores !== undefined && !Array.isArray(subscores)) return invalid("the result's subscores must serialize to an array");
  const key = forbiddenKey(value);
  if (key !== undefined) {
    return invalid(`the result carries a "${key}" key; results may not use __proto__, constructor or prototype as keys`);
  }
  const out: GradeScore = { score };
  if (reason !== undefined) out.reason = reason as string;
  if (metadata !== undefined) out.metadata = metadata as Record<string, unknown>;
  if (subscores !== undefined) out.subscores = subscores as unknown[];
  return out;
}

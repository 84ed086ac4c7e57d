// Trusted code that runs first in every isolate, before any grader code.
// It defines StringThread, removes what a grader has no use for (and what isolated-vm cannot
// account for), and builds the batch runner. The host takes the runner's three functions as
// References and deletes the global that carried them, so grader code never sees them.
//
// Everything the runner needs from the language is captured here, before grader code can
// replace JSON.parse, Array.prototype.push or Date.now. What leaves the isolate is one string
// built with `+` from primitives (reply.ts), which the worker reads strictly.

import { adoptThread, StringThread } from "../../sdk/thread.ts";
import { MAX_MESSAGE, MAX_RESULT } from "../protocol/replies.ts";
import { BatchReader } from "./batch-reader.ts";
import { encodeError, encodeNumber, encodeResult, MAX_POSITION } from "./reply.ts";
import { SLOT } from "./slot.ts";

type Result = { score: number; reason?: string; metadata?: unknown; subscores?: unknown };
/** an item's record, already encoded (see reply.ts) */
type Encoded = string;

const g = globalThis as Record<string, unknown>;
const jsonStringify = JSON.stringify;
const objectCreate = Object.create;
const sliceString = Function.prototype.call.bind(String.prototype.slice) as (text: string, start: number, end: number) => string;
const indexOfString = Function.prototype.call.bind(String.prototype.indexOf) as (text: string, search: string, from: number) => number;
const charCodeAt = Function.prototype.call.bind(String.prototype.charCodeAt) as (text: string, at: number) => number;
const now = Date.now;
const numberIsFinite = Number.isFinite;
const min = Math.min;
const StringFn = String;
const defineProperty = Object.defineProperty;
const reflectApply = Reflect.apply;
const isArray = Array.isArray;
const Float64ArrayCtor = Float64Array;

for (const name of ["WebAssembly", "SharedArrayBuffer", "Atomics", "FinalizationRegistry"]) {
  delete g[name];
}
// Errors never cross to the host as objects (the prelude formats them under the call's time
// limit), but V8 formats a stack through Error.prepareStackTrace whenever one is read, outside
// any limit: pin it to the built-in formatter and a short trace before grader code runs.
defineProperty(Error, "prepareStackTrace", { value: undefined, writable: false, configurable: false });
defineProperty(Error, "stackTraceLimit", { value: 10, writable: false, configurable: false });
defineProperty(g, "StringThread", { value: StringThread, writable: true, configurable: true });
// tsx/esbuild inject __name(fn, "name") calls into fn.toString(); graders sent that way need it.
defineProperty(g, "__name", {
  value: (target: unknown, value: string) => defineProperty(target, "name", { value, configurable: true }),
  writable: true,
  configurable: true,
});

let grade: ((thread: StringThread) => unknown) | undefined;

/**
 * A module runtime that grades a whole slice in one crossing (python/isolate/shim.ts): `load`
 * takes each new packed batch (false: grade it item by item through `grade`), `run` grades items
 * from..end-1 of the last batch it took in order, calling `emit` with each item's value (or, with
 * `failed`, what it threw) and stopping when `emit` returns false. Installed only through
 * `__gradebox_slicer`, which the trusted shim takes before any grader code runs.
 */
interface Slicer {
  load(head: string, text: string): boolean;
  run(from: number, end: number, emit: (value: unknown, failed: boolean) => boolean): void;
}
let slicer: Slicer | undefined;
/** the slicer took the loaded batch */
let sliced = false;
defineProperty(g, "__gradebox_slicer", {
  value: (s: Slicer) => {
    slicer = s;
  },
  configurable: true,
});
/** set by the module wrapper when the grader's module body threw (see worker/engine.ts) */
let loadError: string | undefined;

function describe(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "number") return StringFn(value);
  if (typeof value === "object") return isArray(value) ? "an array" : "an object";
  return `a ${typeof value}`;
}

function messageOf(error: unknown): string {
  let text: string;
  try {
    if (error !== null && typeof error === "object" && "message" in error) {
      const name = (error as { name?: unknown }).name;
      text = `${typeof name === "string" ? name : "Error"}: ${StringFn((error as { message: unknown }).message)}`;
    } else {
      text = `threw ${typeof error === "string" ? jsonStringify(error) : describe(error)}`;
    }
  } catch {
    text = "threw a value that could not be read";
  }
  if (typeof text !== "string") text = "threw a value that could not be read";
  return text.length > MAX_MESSAGE ? `${sliceString(text, 0, MAX_MESSAGE)}…` : text;
}

// Where grader code threw: the first frame of `error.stack` in the grader's script. V8's default
// formatter (pinned above) writes a frame as "    at name (grader.js:L:C)" or "    at grader.js:L:C",
// at most 10 of them, after the message; the engine maps L:C back to the user's source.
const SCRIPT_NAME = "grader.js:";
/** characters at the end of a stack that are searched: its frames follow a message of any length */
const STACK_TAIL = 16 * 1024;
/**
 * Reads a decimal number of at most 6 digits at `at`: [where it ends, its value], or [-1, 0].
 * Array literals define their elements, and the callers read them by index: no prototype
 * setter or iterator of grader code runs.
 */
function readDigits(text: string, at: number): [number, number] {
  let value = 0;
  let end = at;
  while (end < text.length && end - at < 7) {
    const c = charCodeAt(text, end);
    if (c < 48 || c > 57) break;
    value = value * 10 + (c - 48);
    end++;
  }
  return end === at || end - at > 6 ? [-1, 0] : [end, value];
}

/**
 * [line, column] in grader.js of the first grader frame of the error's stack; [0, 0] when none.
 * Runs under the call's time limit (the stack is formatted when read, calling the error's name
 * and message getters) and trusts nothing: a `stack` getter that throws, or a stack that is not
 * a string, means no position.
 */
function positionOf(error: unknown): [number, number] {
  let stack: unknown;
  try {
    if (error === null || (typeof error !== "object" && typeof error !== "function")) return [0, 0];
    stack = (error as { stack?: unknown }).stack;
  } catch {
    return [0, 0];
  }
  if (typeof stack !== "string") return [0, 0];
  const text = stack.length > STACK_TAIL ? sliceString(stack, stack.length - STACK_TAIL, stack.length) : stack;
  let from = 0;
  for (;;) {
    const found = indexOfString(text, SCRIPT_NAME, from);
    if (found < 0) return [0, 0];
    from = found + SCRIPT_NAME.length;
    const before = found > 0 ? charCodeAt(text, found - 1) : -1;
    const bracketed = before === 40; // (
    if (!bracketed && !(before === 32 && found >= 3 && sliceString(text, found - 3, found) === "at ")) continue;
    // index reads, not destructuring: destructuring runs the array iterator, which grader code can replace
    const lineRead = readDigits(text, from);
    const lineEnd = lineRead[0];
    const line = lineRead[1];
    if (lineEnd < 0 || charCodeAt(text, lineEnd) !== 58) continue; // :
    const columnRead = readDigits(text, lineEnd + 1);
    let end = columnRead[0];
    const column = columnRead[1];
    if (end < 0) continue;
    if (bracketed) {
      if (charCodeAt(text, end) !== 41) continue; // )
      end++;
    }
    if (end < text.length && charCodeAt(text, end) !== 10) continue; // \n
    if (line < 1 || column < 1 || line > MAX_POSITION || column > MAX_POSITION) return [0, 0];
    return [line, column];
  }
}

/**
 * An error a trusted module shim (python/isolate/shim.ts) reports for grader code it ran itself,
 * with its own code and position: the shim takes the maker (`__gradebox_fail`) before any grader
 * code runs, and only it can make one (a private brand, which no proxy or prototype can fake).
 */
class Coded {
  #brand = true;
  constructor(
    readonly code: "GRADER_ERROR" | "INVALID_SCORE" | "GRADER_MEMORY_LIMIT",
    readonly message: string,
    readonly line: number,
    readonly column: number,
    /** the interpreter is not fit for another item: the slice ends here, and the worker starts a fresh one */
    readonly endsSlice: boolean,
  ) {}
  static is(value: unknown): value is Coded {
    return value !== null && typeof value === "object" && #brand in value;
  }
}
const position = (n: unknown) => (typeof n === "number" && n >= 1 && n <= MAX_POSITION && n === (n | 0) ? n : 0);
defineProperty(g, "__gradebox_fail", {
  value: (code: unknown, message: unknown, line: unknown, column: unknown, endsSlice: unknown) => {
    const known = code === "INVALID_SCORE" || code === "GRADER_MEMORY_LIMIT" ? code : "GRADER_ERROR";
    let text = typeof message === "string" ? message : "the grader failed";
    if (text.length > MAX_MESSAGE) text = `${sliceString(text, 0, MAX_MESSAGE)}…`;
    // the reply format places only a GRADER_ERROR, and always by line and column: a line alone is at its start
    const at = known === "GRADER_ERROR" ? position(line) : 0;
    return new Coded(known, text, at, at === 0 ? 0 : position(column) || 1, endsSlice === true);
  },
  configurable: true,
});

/** What grader code threw, as a GRADER_ERROR record with where it was thrown. */
function thrown(error: unknown): Encoded {
  if (Coded.is(error)) return encodeError(error.code, error.message, error.line, error.column);
  const message = messageOf(error);
  const position = positionOf(error);
  return encodeError("GRADER_ERROR", message, position[0], position[1]);
}

const invalid = (message: string) => encodeError("INVALID_SCORE", message);

/** A number, or {score | reward, reason?, metadata?, subscores?} as JSON: one encoded record. */
function checkResult(value: unknown): Encoded {
  if (typeof value === "number") {
    return numberIsFinite(value) ? encodeNumber(value) : invalid(`grade must resolve to a finite number, got ${describe(value)}`);
  }
  if (value === null || typeof value !== "object" || isArray(value)) {
    return invalid(`grade must resolve to a finite number or {score, reason?, metadata?, subscores?}, got ${describe(value)}`);
  }
  const v = value as Record<string, unknown>;
  const score = "score" in v ? v.score : v.reward;
  if (typeof score !== "number" || !numberIsFinite(score))
    return invalid(`the result's score must be a finite number, got ${describe(score)}`);
  // null prototype: JSON.stringify finds no toJSON hook on the envelope itself
  const out = objectCreate(null) as Result;
  out.score = score;
  const reason = v.reason;
  if (reason !== undefined) {
    if (typeof reason !== "string") return invalid(`the result's reason must be a string, got ${describe(reason)}`);
    out.reason = reason;
  }
  const metadata = v.metadata;
  if (metadata !== undefined) {
    if (metadata === null || typeof metadata !== "object" || isArray(metadata)) {
      return invalid(`the result's metadata must be an object, got ${describe(metadata)}`);
    }
    out.metadata = metadata;
  }
  const subscores = v.subscores;
  if (subscores !== undefined) {
    if (!isArray(subscores)) return invalid(`the result's subscores must be an array, got ${describe(subscores)}`);
    out.subscores = subscores;
  }
  let text: unknown;
  try {
    text = jsonStringify(out);
  } catch (error) {
    return invalid(`the result is not JSON: ${messageOf(error)}`);
  }
  // a toJSON hook may return anything; the host parses and checks the text again
  if (typeof text !== "string") return invalid("the result is not JSON");
  if (text.length > MAX_RESULT) return invalid(`the result is ${text.length} characters of JSON; the limit is ${MAX_RESULT}`);
  return encodeResult(text);
}

/** The module wrapper's catch clause calls this (worker/engine.ts wraps every grader module). */
defineProperty(g, "__gradebox_load_failed", {
  value: (error: unknown) => {
    loadError = messageOf(error);
  },
  configurable: true,
});

/** "" when grade is ready; otherwise why not. Never throws: nothing crosses as an object. */
function install(): string {
  const candidate = g.__gradebox_grade;
  delete g.__gradebox_grade;
  delete g.__gradebox_load_failed;
  delete g.__gradebox_fail;
  delete g.__gradebox_slicer;
  if (loadError !== undefined) return loadError;
  if (typeof candidate !== "function") return `TypeError: grade is not callable after the module ran (it is ${describe(candidate)})`;
  grade = candidate as (thread: StringThread) => unknown;
  return "";
}

/** the worker's call slot (slot.ts), shared memory: the watchdog reads which item is running */
let slot: Float64Array | undefined;
function progress(buffer: SharedArrayBuffer): void {
  slot = new Float64ArrayCtor(buffer);
}

let loaded: BatchReader | undefined;
/** the records of the last call, and whether its next item is still pending */
let records = "";
let pendingItem = false;

/**
 * Grades up to `maxItems` of the loaded batch from `from` on, one after another, until
 * `sliceMs` has passed (at least one item). A non-empty `head` loads a new packed batch (see
 * protocol/batch.ts); "" keeps the last. Returns at once; the work runs in microtasks, which
 * isolated-vm flushes (under the call's timeout) before the host call returns. There are no
 * macrotasks in an isolate, so anything still pending after that flush can never settle:
 * `collect` reports it as such.
 */
function run(head: string, text: string, from: number, maxItems: number, sliceMs: number): void {
  if (head !== "") {
    loaded = new BatchReader(head, text);
    sliced = false;
    if (slicer) {
      try {
        sliced = slicer.load(head, text) === true;
      } catch {
        // the batch is graded item by item instead
      }
    }
  }
  const batch = loaded as BatchReader;
  const end = min(from + maxItems, batch.count);
  records = "";
  pendingItem = false;
  const fn = grade;
  const t0 = now();
  if (sliced) {
    runSlice(slicer as Slicer, from, end, sliceMs, t0);
    return;
  }
  const loop = async () => {
    for (let i = from; i < end; i++) {
      if (i > from && now() - t0 >= sliceMs) break;
      pendingItem = true;
      if (slot) slot[SLOT.item] = i;
      let record: Encoded;
      let last = false;
      try {
        const thread = adoptThread(batch.turns(i), batch.metadataOf(i));
        record = checkResult(await reflectApply(fn as () => unknown, undefined, [thread]));
      } catch (error) {
        record = thrown(error);
        last = Coded.is(error) && error.endsSlice;
      }
      records = records + record;
      pendingItem = false;
      if (last) break;
    }
  };
  loop();
}

/**
 * run() through the slicer: the same records, time slice and progress slot as the loop above,
 * with the items graded by the module runtime in one crossing. `emit` is the only way a record
 * is added, never past `end` nor after the run returned (grader code may reach it); the item in
 * flight when the runtime throws gets the error, and one it left without a result gets one too,
 * so a call always moves on.
 */
function runSlice(s: Slicer, from: number, end: number, sliceMs: number, t0: number): void {
  let i = from;
  let live = true;
  const add = (record: Encoded) => {
    records = records + record;
    pendingItem = false;
    i++;
  };
  const emit = (value: unknown, failed: boolean): boolean => {
    if (!live || i >= end) return false;
    let record: Encoded;
    try {
      record = failed === true ? thrown(value) : checkResult(value);
    } catch (error) {
      record = thrown(error);
    }
    add(record);
    // an interpreter an item left unfit grades nothing more: the worker goes on in a fresh one
    if (failed === true && Coded.is(value) && value.endsSlice) return false;
    if (i >= end || now() - t0 >= sliceMs) return false;
    pendingItem = true;
    if (slot) slot[SLOT.item] = i;
    return true;
  };
  pendingItem = true;
  if (slot) slot[SLOT.item] = i;
  try {
    s.run(from, end, emit);
  } catch (error) {
    if (pendingItem) add(thrown(error));
  }
  if (pendingItem) add(encodeError("GRADER_ERROR", "the runtime returned without a result for this item"));
  live = false;
}

/** The records of the last call and its trailer (see reply.ts): one primitive string. */
function collect(): string {
  return records + (pendingItem ? "p" : ".");
}

defineProperty(g, "__gradebox_host", { value: { install, run, collect, progress }, configurable: true });

// Trusted code that runs first in every isolate, before any grader code.
// It defines StringThread, removes what a grader has no use for (and what isolated-vm cannot
// account for), and builds the batch runner. The host takes the runner's three functions as
// References and deletes the global that carried them, so grader code never sees them.
//
// Everything the runner needs from the language is captured here, before grader code can
// replace JSON.parse, Array.prototype.push or Date.now. What leaves the isolate is one string
// built with `+` from primitives (reply.ts), which the worker reads strictly.

import { StringThread } from "../../sdk/thread.ts";
import { MAX_MESSAGE, MAX_RESULT } from "../protocol/replies.ts";
import { BatchReader } from "./batch-reader.ts";
import { encodeAbstain, encodeError, encodeNumber, encodeResult, MAX_POSITION } from "./reply.ts";
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
/**
 * The brand of an abstention (sdk/graders.ts's Abstain puts it on its prototype): a registered
 * symbol, so it survives bundling, where the class a grader imports is a copy of its own and
 * instanceof could not recognise it. Anything that carries it abstains, which any grader may do.
 */
const ABSTAIN = Symbol.for("gradebox.abstain");

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
/** the module's gradeGroup (Python: grade_group): a group's threads in, one result per thread out */
let gradeGroup: ((threads: StringThread[]) => unknown) | undefined;

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

/** Bounds a reason as a message is bounded. */
const bounded = (text: string) => (text.length > MAX_MESSAGE ? `${sliceString(text, 0, MAX_MESSAGE)}…` : text);

/**
 * The reason of a value carrying the abstention brand (thrown or returned), or undefined when it
 * carries none. Reading the brand and the reason may run grader code (getters, proxies): it runs
 * under the call's time limit, and anything it throws is the caller's to report.
 */
function abstention(value: unknown): string | undefined {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return undefined;
  if ((value as Record<symbol, unknown>)[ABSTAIN] !== true) return undefined;
  const reason = (value as { reason?: unknown }).reason;
  return typeof reason === "string" && reason !== "" ? bounded(reason) : "the grader abstained";
}

/** What grader code threw, as a GRADER_ERROR record with where it was thrown, or an abstention (Abstain). */
function thrown(error: unknown): Encoded {
  if (Coded.is(error)) return encodeError(error.code, error.message, error.line, error.column);
  let reason: string | undefined;
  try {
    reason = abstention(error);
  } catch {
    // a brand or reason that throws when read is no abstention: the error is reported as thrown
  }
  if (reason !== undefined) return encodeAbstain(reason);
  const message = messageOf(error);
  const position = positionOf(error);
  return encodeError("GRADER_ERROR", message, position[0], position[1]);
}

const invalid = (message: string) => encodeError("INVALID_SCORE", message);

/**
 * A number, or {score | reward, reason?, metadata?, subscores?} as JSON: one encoded record; null
 * (or an Abstain) abstains. undefined stays INVALID_SCORE: a forgotten return must not abstain.
 */
function checkResult(value: unknown, what = "grade"): Encoded {
  if (typeof value === "number") {
    return numberIsFinite(value) ? encodeNumber(value) : invalid(`${what} must resolve to a finite number, got ${describe(value)}`);
  }
  if (value === null) return encodeAbstain(`${what} returned null`);
  if (typeof value !== "object" || isArray(value)) {
    const hint = value === undefined ? " (did it forget to return? return null to abstain)" : "";
    return invalid(`${what} must resolve to a finite number or {score, reason?, metadata?, subscores?}, got ${describe(value)}${hint}`);
  }
  const abstained = abstention(value);
  if (abstained !== undefined) return encodeAbstain(abstained);
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

/** `record`, `n` times over: one per thread of a group. */
function repeat(record: Encoded, n: number): Encoded {
  let out = "";
  for (let k = 0; k < n; k++) out = out + record;
  return out;
}

/** One element of gradeGroup's array: a trusted shim's coded error, or what grade may return. */
function checkItem(value: unknown): Encoded {
  try {
    if (Coded.is(value)) return encodeError(value.code, value.message, value.line, value.column);
    return checkResult(value, "gradeGroup");
  } catch (error) {
    return thrown(error);
  }
}

/**
 * What gradeGroup resolved to, for a group of `n`: exactly `n` records. An array of exactly `n`
 * results (each as grade may return it: a number, a result, null to abstain); anything else
 * costs every thread of the group the same INVALID_SCORE, and an element that cannot be read
 * the error reading it threw.
 */
function checkGroup(value: unknown, n: number): Encoded {
  if (!isArray(value)) {
    return repeat(invalid(`gradeGroup must resolve to an array of ${n} results (one per thread, in order), got ${describe(value)}`), n);
  }
  let length: unknown;
  try {
    length = (value as unknown[]).length;
  } catch (error) {
    return repeat(thrown(error), n);
  }
  if (length !== n) {
    return repeat(
      invalid(
        `gradeGroup returned ${typeof length === "number" ? StringFn(length) : describe(length)} results for a group of ${n} threads: it must return exactly one per thread, in order`,
      ),
      n,
    );
  }
  let out = "";
  for (let k = 0; k < n; k++) {
    let item: unknown;
    try {
      item = (value as unknown[])[k];
    } catch (error) {
      return repeat(thrown(error), n);
    }
    out = out + checkItem(item);
  }
  return out;
}

const GROUP_ONLY =
  "this grader grades groups only (it exports gradeGroup, or grade_group in Python, and no grade): grade it with groups (grade-batch's groupBy or groups)";

/** The module wrapper's catch clause calls this (worker/engine.ts wraps every grader module). */
defineProperty(g, "__gradebox_load_failed", {
  value: (error: unknown) => {
    loadError = messageOf(error);
  },
  configurable: true,
});

/**
 * The module's shape ("thread", "group" or "both": which of grade and gradeGroup it set) when it
 * is ready; otherwise why not (a message, which always holds ": " or starts "threw", so it is
 * never a shape). Never throws: nothing crosses as an object.
 */
function install(): string {
  const candidate = g.__gradebox_grade;
  const groupCandidate = g.__gradebox_grade_group;
  delete g.__gradebox_grade;
  delete g.__gradebox_grade_group;
  delete g.__gradebox_load_failed;
  delete g.__gradebox_fail;
  delete g.__gradebox_slicer;
  if (loadError !== undefined) return loadError;
  const thread = typeof candidate === "function";
  const group = typeof groupCandidate === "function";
  if ((!thread && !group) || (candidate !== undefined && !thread)) {
    return `TypeError: grade is not callable after the module ran (it is ${describe(candidate)})`;
  }
  if (groupCandidate !== undefined && !group) {
    return `TypeError: gradeGroup is not callable after the module ran (it is ${describe(groupCandidate)})`;
  }
  if (thread) grade = candidate as (thread: StringThread) => unknown;
  if (group) gradeGroup = groupCandidate as (threads: StringThread[]) => unknown;
  return thread && group ? "both" : thread ? "thread" : "group";
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
 * Grades up to `maxItems` of the loaded batch from `from` on, one unit after another, until
 * `sliceMs` has passed (at least one unit). A unit is a group when the batch has groups (the
 * host starts and ends every call at group boundaries), else one thread: a grader with
 * gradeGroup gets each group whole in one call, one without grades its threads one by one. A
 * non-empty `head` loads a new packed batch (see protocol/batch.ts); "" keeps the last. Returns
 * at once; the work runs in microtasks, which isolated-vm flushes (under the call's timeout)
 * before the host call returns. There are no macrotasks in an isolate, so anything still
 * pending after that flush can never settle: `collect` reports it as such.
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
  const groupFn = batch.grouped ? gradeGroup : undefined;
  const t0 = now();
  if (sliced && groupFn === undefined && fn !== undefined) {
    runSlice(slicer as Slicer, batch, from, end, sliceMs, t0);
    return;
  }
  const loop = async () => {
    let i = from;
    while (i < end) {
      if (i > from && now() - t0 >= sliceMs) break;
      const stop = min(batch.unitEnd(i), end);
      let last = false;
      if (groupFn !== undefined) {
        pendingItem = true;
        // the watchdog's verdict names the group by its first thread; the host blames the whole group
        if (slot) slot[SLOT.item] = i;
        let group: Encoded;
        try {
          group = checkGroup(await reflectApply(groupFn, undefined, [batch.threads(i, stop)]), stop - i);
        } catch (error) {
          group = repeat(thrown(error), stop - i);
          last = Coded.is(error) && error.endsSlice;
        }
        records = records + group;
        pendingItem = false;
        i = stop;
      } else {
        for (; i < stop; i++) {
          pendingItem = true;
          if (slot) slot[SLOT.item] = i;
          let record: Encoded;
          try {
            record =
              fn === undefined
                ? encodeError("GRADER_ERROR", GROUP_ONLY)
                : checkResult(await reflectApply(fn, undefined, [batch.thread(i)]));
          } catch (error) {
            record = thrown(error);
            last = Coded.is(error) && error.endsSlice;
          }
          records = records + record;
          pendingItem = false;
          if (last) {
            i++;
            break;
          }
        }
        // a call ends at a unit's end: the threads of a group its interpreter can no longer grade get an error
        if (last) while (i < stop) i = notGraded(i);
      }
      if (last) break;
    }
  };
  loop();
}

const UNFIT_IN_GROUP =
  "not graded: an earlier thread of its group stopped the grader's runtime (out of memory or stack, or an error that escaped it)";
/** Thread i gets the error of a thread its interpreter could not grade; the next index. */
function notGraded(i: number): number {
  records = records + encodeError("GRADER_ERROR", UNFIT_IN_GROUP);
  return i + 1;
}

/**
 * run() through the slicer: the same records, time slice and progress slot as the loop above,
 * with the items graded by the module runtime in one crossing. `emit` is the only way a record
 * is added, never past `end` nor after the run returned (grader code may reach it); the item in
 * flight when the runtime throws gets the error, and one it left without a result gets one too,
 * so a call always moves on.
 */
function runSlice(s: Slicer, batch: BatchReader, from: number, end: number, sliceMs: number, t0: number): void {
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
    if (failed === true && Coded.is(value) && value.endsSlice) {
      live = false;
      return false;
    }
    // a slice ends only where a unit (a group) does
    if (i >= end || (batch.unitStart(i) && now() - t0 >= sliceMs)) return false;
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
  // the call ends at a unit's end, whatever stopped it inside one
  while (i < end && !batch.unitStart(i)) {
    records = records + encodeError("GRADER_ERROR", UNFIT_IN_GROUP);
    i++;
  }
}

/** The records of the last call and its trailer (see reply.ts): one primitive string. */
function collect(): string {
  return records + (pendingItem ? "p" : ".");
}

defineProperty(g, "__gradebox_host", { value: { install, run, collect, progress }, configurable: true });

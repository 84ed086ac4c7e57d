// Trusted code that runs first in every isolate, before any grader code.
// It defines StringThread, removes what a grader has no use for (and what isolated-vm cannot
// account for), and builds the batch runner. The host takes the runner's three functions as
// References and deletes the global that carried them, so grader code never sees them.
//
// Everything the runner needs from the language is captured here, before grader code can
// replace JSON.parse, Array.prototype.push or Date.now; the host type-checks results anyway.

import { adoptThread, StringThread } from "../sdk/thread.ts";
import { BatchReader } from "./batch.ts";

type Result = { score: number; reason?: string; metadata?: unknown; subscores?: unknown };
type Outcome = number | Result | { code: string; message: string };
interface CallState {
  results: Outcome[];
  /** index of the item running now (within this call), -1 when none */
  current: number;
  finished: boolean;
}

const g = globalThis as Record<string, unknown>;
const { parse: jsonParse, stringify: jsonStringify } = JSON;
const now = Date.now;
const numberIsFinite = Number.isFinite;
const min = Math.min;
const StringFn = String;
const defineProperty = Object.defineProperty;
const reflectApply = Reflect.apply;
const isArray = Array.isArray;
const MAX_MESSAGE = 2000;
/** JSON characters of one structured result (reason, metadata, subscores included) */
const MAX_RESULT = 16 * 1024;

for (const name of ["WebAssembly", "SharedArrayBuffer", "Atomics", "FinalizationRegistry"]) {
  delete g[name];
}
defineProperty(g, "StringThread", { value: StringThread, writable: true, configurable: true });
// tsx/esbuild inject __name(fn, "name") calls into fn.toString(); graders sent that way need it.
defineProperty(g, "__name", {
  value: (target: unknown, value: string) => defineProperty(target, "name", { value, configurable: true }),
  writable: true,
  configurable: true,
});

let grade: ((thread: StringThread) => unknown) | undefined;
let state: CallState = { results: [], current: -1, finished: true };

function describe(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "number") return StringFn(value);
  if (typeof value === "object") return Array.isArray(value) ? "an array" : "an object";
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
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text;
}

const invalid = (message: string) => ({ code: "INVALID_SCORE", message });

/** A number, or {score | reward, reason?, metadata?, subscores?} copied to plain JSON. */
function checkResult(value: unknown): Outcome {
  if (typeof value === "number") {
    return numberIsFinite(value) ? value : invalid(`grade must resolve to a finite number, got ${describe(value)}`);
  }
  if (value === null || typeof value !== "object" || isArray(value)) {
    return invalid(`grade must resolve to a finite number or {score, reason?, metadata?, subscores?}, got ${describe(value)}`);
  }
  const v = value as Record<string, unknown>;
  const score = "score" in v ? v.score : v.reward;
  if (typeof score !== "number" || !numberIsFinite(score))
    return invalid(`the result's score must be a finite number, got ${describe(score)}`);
  const out: Result = { score };
  if (v.reason !== undefined) {
    if (typeof v.reason !== "string") return invalid(`the result's reason must be a string, got ${describe(v.reason)}`);
    out.reason = v.reason;
  }
  if (v.metadata !== undefined) {
    if (v.metadata === null || typeof v.metadata !== "object" || isArray(v.metadata)) {
      return invalid(`the result's metadata must be an object, got ${describe(v.metadata)}`);
    }
    out.metadata = v.metadata;
  }
  if (v.subscores !== undefined) {
    if (!isArray(v.subscores)) return invalid(`the result's subscores must be an array, got ${describe(v.subscores)}`);
    out.subscores = v.subscores;
  }
  let text: string;
  try {
    text = jsonStringify(out);
  } catch (error) {
    return invalid(`the result is not JSON: ${messageOf(error)}`);
  }
  if (text.length > MAX_RESULT) return invalid(`the result is ${text.length} characters of JSON; the limit is ${MAX_RESULT}`);
  return jsonParse(text) as Result; // a plain copy: no getters, no prototypes, no cycles
}

function install(): void {
  const candidate = g.__gradebox_grade;
  delete g.__gradebox_grade;
  if (typeof candidate !== "function") {
    throw new TypeError(`grade is not callable after the module ran (it is ${describe(candidate)})`);
  }
  grade = candidate as (thread: StringThread) => unknown;
}

let loaded: BatchReader | undefined;

/**
 * Grades up to `maxItems` of the loaded batch from `from` on, one after another, until
 * `sliceMs` has passed (at least one item). A non-empty `head` loads a new packed batch (see
 * batch.ts); "" keeps the last. Returns at once; the work runs in microtasks, which
 * isolated-vm flushes (under the call's timeout) before the host call returns. There are no
 * macrotasks in an isolate, so anything still pending after that flush can never settle:
 * `collect` reports it as such.
 */
function run(head: string, text: string, from: number, maxItems: number, sliceMs: number): void {
  if (head !== "") loaded = new BatchReader(head, text);
  const batch = loaded as BatchReader;
  const end = min(from + maxItems, batch.count);
  const call: CallState = { results: [], current: -1, finished: false };
  state = call;
  const fn = grade;
  const t0 = now();
  const loop = async () => {
    for (let i = from; i < end; i++) {
      if (i > from && now() - t0 >= sliceMs) break;
      call.current = i - from;
      let outcome: Outcome;
      try {
        const thread = adoptThread(batch.turns(i), batch.metadataOf(i));
        outcome = checkResult(await reflectApply(fn as () => unknown, undefined, [thread]));
      } catch (error) {
        outcome = { code: "GRADER_ERROR", message: messageOf(error) };
      }
      defineProperty(call.results, i - from, { value: outcome, enumerable: true, writable: true, configurable: true });
      call.current = -1;
    }
    call.finished = true;
  };
  loop();
}

function collect(): string {
  return jsonStringify(state);
}

defineProperty(g, "__gradebox_host", { value: { install, run, collect }, configurable: true });

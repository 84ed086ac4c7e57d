// JavaScript runs, each in a fresh isolated-vm Context (a new realm: its own globals and
// intrinsics, nothing of an earlier run's) of one isolate the runner keeps warm. A context is
// complete enough: two contexts share no JavaScript object, and a run that took the isolate down
// (its memory limit) gets a new isolate. The harness is made in each context before the program:
//
// - stdin: `require("fs").readFileSync(0 | "/dev/stdin")`, `require("readline").createInterface`
//   with its "line"/"close" events, `process.stdin.on("data"/"end")` (delivered after the
//   program's synchronous part, in that order), and the V8 shell's `readline()` (a line, or
//   undefined at the end) with `print()` — the patterns Codeforces/CodeContests JS solutions use;
// - stdout/stderr: `console.log/info/debug` and `print` to stdout, `console.error/warn` to stderr,
//   `process.stdout.write`/`process.stderr.write`, kept in the harness's closure, bounded;
// - `process.exit(code)`: records the code and stops the program (a throw of the harness's own).
//
// What the verdict reads (the outputs, the exit, `completed`, `returned`) is read through
// References the host took before the program ran: a program can replace globals, never these.

import ivm from "isolated-vm";
import { type CodeRunner, RunnerFailure, type RunRequest, type RunResult, type RunStatus } from "./run.ts";

const MAX_MESSAGE = 2000;
/** the lookup script's own variable (never looked up itself, so the tests' names cannot be shadowed by it) */
const KINDS = "__gradebox_kinds";
/** what `typeof` answers */
const TYPEOFS = new Set(["undefined", "object", "boolean", "number", "bigint", "string", "symbol", "function"]);
/** the program's names one test may reach (each costs a proxy or a copy) */
const MAX_NAMES = 200;
/** words that are no name to look up */
const RESERVED = new Set(
  "break case catch class const continue debugger default delete do else enum export extends false finally for function if import in instanceof new null return super switch this throw true try typeof var void while with undefined NaN Infinity".split(
    " ",
  ),
);
/**
 * In the tests' realm: a global function that calls the program's (served: see the harness's
 * serve) with copies, and throws the tests' own error of the same builtin name when it threw.
 */
const PROXY = `(function (name, served) {
"use strict";
const errors = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };
globalThis[name] = function (...args) {
  if (new.target !== undefined) {
    throw new TypeError("new " + name + "(): the tests cannot construct the program's classes (its objects do not cross into the tests' realm; tests call its functions with plain data)");
  }
  let r;
  try {
    r = served.applySync(undefined, args, { arguments: { copy: true }, result: { copy: true } });
  } catch (e) {
    if (e && /could not be cloned/.test(String(e.message))) {
      throw new TypeError(name + ": the arguments cross from the tests to the program as copies, and one of them is not plain data (functions and class instances' methods are not): " + e.message);
    }
    throw e;
  }
  if (r.ok) return r.value;
  if (r.exit) throw new Error("the program exited (process.exit) inside " + name);
  if ("notData" in r) throw new TypeError(name + " returned a value that cannot cross to the tests as a copy: " + r.notData);
  if ("thrown" in r) throw r.thrown;
  const C = Object.prototype.hasOwnProperty.call(errors, r.name) ? errors[r.name] : Error;
  const error = new C(r.message);
  if (C === Error && r.name !== "Error") error.name = r.name;
  throw error;
};
})`;
/** In the tests' realm: a global that is a copy of one of the program's values (served: the harness's serveValue), when it copies. */
const VALUE = `(function (name, served) {
"use strict";
const r = served.applySync(undefined, [], { result: { copy: true } });
if (r.ok) globalThis[name] = r.value;
})`;
/** `returned` as JSON text, read at most */
const MAX_RETURNED = 256 * 1024;
/**
 * a value crossing from the program to the tests, at most (its copy's bytes, strings counted at
 * each occurrence): as large as an honest answer gets (10^6 numbers), far below what a string
 * repeated in an array weighs once cloned (the clone's buffer is outside the isolate's limit)
 */
const MAX_COPY = 16 * 1024 * 1024;

/**
 * Memory the isolate's limit does not count: a WebAssembly.Memory, and resizable (growable)
 * buffers, whose pages are reserved outside V8's heap (300 MB passed a 16 MB limit). Gone from
 * each run's context before anything else runs: WebAssembly, and resize/grow (which throw).
 */
const CONFINE = `(() => {
"use strict";
delete globalThis.WebAssembly;
const refuse = function () { throw new RangeError("resizable buffers are not available to programs (their memory is outside the run's limit)"); };
for (const [C, m] of [[globalThis.ArrayBuffer, "resize"], [globalThis.SharedArrayBuffer, "grow"]]) {
  if (C && typeof C.prototype[m] === "function") Object.defineProperty(C.prototype, m, { value: refuse, writable: false, configurable: false });
}
})()`;
/** the runner's own scripts, compiled once per isolate */
const scripts = new WeakMap<ivm.Isolate, Map<string, ivm.Script>>();
function cachedScript(isolate: ivm.Isolate, name: string, source: string): ivm.Script {
  let byName = scripts.get(isolate);
  if (!byName) {
    byName = new Map();
    scripts.set(isolate, byName);
  }
  let script = byName.get(name);
  if (!script) {
    script = isolate.compileScriptSync(source, { filename: `gradebox:${name}` });
    byName.set(name, script);
  }
  return script;
}
function confine(isolate: ivm.Isolate, context: ivm.Context): void {
  cachedScript(isolate, "confine", CONFINE).runSync(context, { timeout: 1000 });
}

/** Made in each run's context before the program: the harness, as one function of the run's settings. */
const HARNESS = String.raw`(function (stdinText, limit) {
"use strict";
const g = globalThis;
const jsonStringify = JSON.stringify;
const getProto = Object.getPrototypeOf;
const isArray = Array.isArray;
const ObjectProto = Object.prototype;
const StringCtor = String;
const EXIT = Object.freeze({ exit: true });
const out = { text: "", bytes: 0 };
const err = { text: "", bytes: 0 };
let over = false;
let exited = false;
let exitCode = 0;
const utf8Length = (s) => { let n = 0; for (let i = 0; i < s.length; i++) { const c = s.charCodeAt(i); n += c < 0x80 ? 1 : c < 0x800 ? 2 : (c >= 0xd800 && c < 0xdc00) ? (i++, 4) : 3; } return n; };
function put(target, s) {
  if (exited) return;
  s = StringCtor(s);
  const n = utf8Length(s);
  if (target.bytes + n > limit) {
    over = true;
    throw EXIT;
  }
  target.text += s;
  target.bytes += n;
}
const fmt = (v) => {
  if (typeof v === "string") return v;
  try { const j = jsonStringify(v); return j === undefined ? StringCtor(v) : (typeof v === "object" && v !== null ? j : StringCtor(v)); } catch { return StringCtor(v); }
};
const line = (target) => (...args) => put(target, args.map(fmt).join(" ") + "\n");
const lines = stdinText.split("\n");
if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
let lineAt = 0;
const listeners = { line: [], close: [], data: [], end: [] };
const stream = (target) => ({ write: (s) => { put(target, s); return true; } });
const stdinStream = {
  on(event, f) { if (event === "data" || event === "end") listeners[event].push(f); return stdinStream; },
  setEncoding() { return stdinStream; },
  resume() { return stdinStream; },
  fd: 0,
};
const process = {
  argv: ["node", "program"],
  env: {},
  stdin: stdinStream,
  stdout: stream(out),
  stderr: stream(err),
  exit(code) {
    exitCode = code === undefined ? 0 : (Number(code) | 0);
    exited = true;
    throw EXIT;
  },
  on() { return process; },
  hrtime: { bigint: () => 0n },
  nextTick: (f, ...a) => Promise.resolve().then(() => f(...a)),
};
const readlineModule = {
  createInterface() {
    const rl = {
      on(event, f) { if (event === "line" || event === "close") listeners[event].push(f); return rl; },
      close() {},
      [Symbol.asyncIterator]() { let k = lineAt; return { next: async () => (k < lines.length ? { value: lines[k++], done: false } : { value: undefined, done: true }) }; },
    };
    return rl;
  },
};
const fsModule = {
  readFileSync(path, encoding) {
    if (path === 0 || path === "/dev/stdin") return stdinText;
    throw new Error("ENOENT: no such file: " + StringCtor(path));
  },
};
// Node's assert, the part tests use (MultiPL-E's start with require("node:assert")), built only
// from what this harness captured before the program ran: patched prototypes, Object.is or
// JSON do not reach it, and require, console and console.assert cannot be replaced (they are
// fixed properties: a program's own declaration of them is a SyntaxError, an assignment ignored).
const ObjectIs = Object.is;
const objectKeys = Object.keys;
const hasOwn = Object.hasOwn;
const freeze = Object.freeze;
const defineProperty = Object.defineProperty;
const reflectApply = Reflect.apply;
const hasInstance = Function.prototype[Symbol.hasInstance];
const regexpExec = RegExp.prototype.exec;
const ArrayProto = Array.prototype;
const ErrorCtor = Error;
class AssertionError extends ErrorCtor {
  constructor(message) {
    super(message);
    defineProperty(this, "name", { value: "AssertionError", writable: true, configurable: true });
    defineProperty(this, "code", { value: "ERR_ASSERTION", writable: true, configurable: true });
  }
}
const shown = (v) => { try { const s = fmt(v); return s.length > 200 ? s.slice(0, 200) + "…" : s; } catch { return "(unprintable)"; } };
const isObj = (v) => v !== null && (typeof v === "object" || typeof v === "function");
const plainish = (v) => { const p = getProto(v); return isArray(v) ? p === ArrayProto : p === ObjectProto || p === null; };
// arrays and plain objects by their own enumerable keys; any other object only when it is the same object
function deepEq(a, b, strict, depth) {
  if (strict ? ObjectIs(a, b) : a === b) return true;
  if (!isObj(a) || !isObj(b)) return strict ? false : !isObj(a) && !isObj(b) && (a == b || (a !== a && b !== b));
  if (depth > 200 || typeof a === "function" || typeof b === "function" || !plainish(a) || !plainish(b)) return false;
  if (isArray(a) !== isArray(b) || (strict && getProto(a) !== getProto(b))) return false;
  if (isArray(a) && a.length !== b.length) return false;
  const ka = objectKeys(a);
  if (ka.length !== objectKeys(b).length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i];
    if (!hasOwn(b, k) || !deepEq(a[k], b[k], strict, depth + 1)) return false;
  }
  return true;
}
const fail = (message, fallback) => {
  if (message instanceof ErrorCtor) throw message;
  throw new AssertionError(message === undefined ? fallback : StringCtor(message));
};
function makeAssert(strict) {
  const ok = (v, message) => { if (!v) fail(message, "The expression evaluated to a falsy value: " + shown(v)); };
  const a = function assert(v, message) { ok(v, message); };
  const equal = (x, y, m) => { if (!(strict ? ObjectIs(x, y) : x == y || (x !== x && y !== y))) fail(m, "Expected values to be " + (strict ? "strictly" : "loosely") + " equal: " + shown(x) + " vs " + shown(y)); };
  const notEqual = (x, y, m) => { if (strict ? ObjectIs(x, y) : x == y || (x !== x && y !== y)) fail(m, "Expected " + shown(x) + " not to equal " + shown(y)); };
  const strictEqual = (x, y, m) => { if (!ObjectIs(x, y)) fail(m, "Expected values to be strictly equal: " + shown(x) + " !== " + shown(y)); };
  const notStrictEqual = (x, y, m) => { if (ObjectIs(x, y)) fail(m, "Expected " + shown(x) + " not to be strictly equal to " + shown(y)); };
  const deepEqual = (x, y, m) => { if (!deepEq(x, y, strict, 0)) fail(m, "Expected values to be " + (strict ? "strictly" : "loosely") + " deep-equal: " + shown(x) + " vs " + shown(y)); };
  const notDeepEqual = (x, y, m) => { if (deepEq(x, y, strict, 0)) fail(m, "Expected " + shown(x) + " not to deep-equal " + shown(y)); };
  const deepStrictEqual = (x, y, m) => { if (!deepEq(x, y, true, 0)) fail(m, "Expected values to be strictly deep-equal: " + shown(x) + " vs " + shown(y)); };
  const notDeepStrictEqual = (x, y, m) => { if (deepEq(x, y, true, 0)) fail(m, "Expected " + shown(x) + " not to strictly deep-equal " + shown(y)); };
  const throws = (f, expected, m) => {
    if (typeof expected === "string") { m = expected; expected = undefined; }
    let threw = false;
    let error;
    try { f(); } catch (e) { if (e === EXIT) throw e; threw = true; error = e; }
    if (!threw) fail(m, "Missing expected exception.");
    if (typeof expected === "function" && !reflectApply(hasInstance, expected, [error])) fail(m, "The error is not an instance of the expected class");
    if (isObj(expected) && typeof expected !== "function") {
      let matched = false;
      try { matched = reflectApply(regexpExec, expected, [StringCtor(error)]) !== null; } catch { matched = true; }
      if (!matched) fail(m, "The error does not match the expected pattern");
    }
  };
  const methods = { ok, equal, notEqual, strictEqual, notStrictEqual, deepEqual, notDeepEqual, deepStrictEqual, notDeepStrictEqual, throws,
    fail: (m) => fail(m, "Failed"), AssertionError };
  const ks = objectKeys(methods);
  for (let i = 0; i < ks.length; i++) defineProperty(a, ks[i], { value: methods[ks[i]], enumerable: true });
  return a;
}
const strictAssert = makeAssert(true);
const assertModule = makeAssert(false);
defineProperty(assertModule, "strict", { value: strictAssert, enumerable: true });
defineProperty(strictAssert, "strict", { value: strictAssert, enumerable: true });
freeze(assertModule);
freeze(strictAssert);
const modules = {
  fs: fsModule, "node:fs": fsModule, readline: readlineModule, "node:readline": readlineModule,
  assert: assertModule, "node:assert": assertModule, "assert/strict": strictAssert, "node:assert/strict": strictAssert,
};
freeze(modules);
defineProperty(g, "require", {
  value: (name) => {
    if (typeof name !== "string" || !hasOwn(modules, name)) throw new ErrorCtor("Cannot find module '" + StringCtor(name) + "'");
    return modules[name];
  },
  writable: false,
  configurable: false,
  enumerable: false,
});
g.process = process;
// console.assert: as Node's (a line on stderr) while the program runs; in the tests, a failed test
let testing = false;
const consoleAssert = (v, ...message) => {
  if (v) return;
  const text = message.length > 0 ? message.map(fmt).join(" ") : "";
  if (testing) throw new AssertionError(text === "" ? "console.assert" : text);
  put(err, "Assertion failed" + (text === "" ? "" : ": " + text) + "\n");
};
const consoleObject = { log: line(out), info: line(out), debug: line(out), error: line(err), warn: line(err) };
defineProperty(consoleObject, "assert", { value: consoleAssert, writable: false, configurable: false, enumerable: true });
defineProperty(g, "console", { value: consoleObject, writable: false, configurable: false, enumerable: false });
g.print = line(out);
g.readline = () => (lineAt < lines.length ? lines[lineAt++] : undefined);
g.module = { exports: {} };
g.exports = g.module.exports;

function isPlain(v, depth) {
  if (depth > 100) return false;
  if (v === null || typeof v === "boolean" || typeof v === "string") return true;
  if (typeof v === "number") return true;
  if (typeof v !== "object") return false;
  if (isArray(v)) { for (let i = 0; i < v.length; i++) if (!isPlain(v[i], depth + 1)) return false; return true; }
  const p = getProto(v);
  if (p !== ObjectProto && p !== null) return false;
  for (const k in v) if (!isPlain(v[k], depth + 1)) return false;
  return true;
}

// What crosses to the tests' realm: a copy made here of plain data (structured-clone-like: arrays,
// objects' own enumerable properties, Map, Set, Date, RegExp, buffers, errors), from intrinsics
// captured before the program ran, of at most MAX_COPY bytes counted per occurrence (a string
// repeated a million times is a million strings once cloned: the clone's buffer is outside the
// isolate's limit). Getters and Proxy traps run while it is made, never while it is cloned.
const MapCtor = Map;
const SetCtor = Set;
const DateCtor = Date;
const RegExpCtor = RegExp;
const ArrayBufferCtor = ArrayBuffer;
const mapGet = Map.prototype.get;
const mapSet = Map.prototype.set;
const mapEntries = Map.prototype.entries;
const mapIterNext = getProto(new Map().entries()).next;
const setAdd = Set.prototype.add;
const setValues = Set.prototype.values;
const setIterNext = getProto(new Set().values()).next;
const dateGetTime = Date.prototype.getTime;
const getterOf = (o, k) => Object.getOwnPropertyDescriptor(o, k).get;
const regexpSource = getterOf(RegExp.prototype, "source");
const regexpFlags = getterOf(RegExp.prototype, "flags");
const abByteLength = getterOf(ArrayBuffer.prototype, "byteLength");
const abSlice = ArrayBuffer.prototype.slice;
const TypedArrayProto = getProto(Uint8Array.prototype);
const taTag = getterOf(TypedArrayProto, Symbol.toStringTag);
const taBuffer = getterOf(TypedArrayProto, "buffer");
const taOffset = getterOf(TypedArrayProto, "byteOffset");
const taLength = getterOf(TypedArrayProto, "length");
const typed = { Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array };
const errorCtors = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };
const errorHas = (v) => reflectApply(hasInstance, ErrorCtor, [v]);
const brand = (method, v) => { try { reflectApply(method, v, []); return true; } catch { return false; } };
const NOT_DATA = freeze({ notData: true });
const TOO_BIG = freeze({ tooBig: true });
const own = (o, k, value) => defineProperty(o, k, { value, writable: true, enumerable: true, configurable: true });
function copyOut(root) {
  const seen = new MapCtor();
  let left = ${MAX_COPY};
  const spend = (n) => { left -= n; if (left < 0) throw TOO_BIG; };
  const c = (v, depth) => {
    const t = typeof v;
    if (t === "string") { spend(8 + v.length); return v; }
    if (t === "number" || t === "boolean" || t === "undefined" || v === null) { spend(9); return v; }
    if (t === "bigint") { spend(16); return v; }
    if (t !== "object") throw NOT_DATA;
    const hit = reflectApply(mapGet, seen, [v]);
    if (hit !== undefined) { spend(8); return hit; }
    if (depth > 1000) throw NOT_DATA;
    spend(16);
    let out;
    if (isArray(v)) {
      const n = v.length;
      if (typeof n !== "number") throw NOT_DATA;
      out = [];
      reflectApply(mapSet, seen, [v, out]);
      const keys = objectKeys(v);
      for (let i = 0; i < keys.length; i++) { spend(8); own(out, keys[i], c(v[keys[i]], depth + 1)); }
      out.length = n;
      return out;
    }
    if (brand(mapEntries, v)) {
      out = new MapCtor();
      reflectApply(mapSet, seen, [v, out]);
      const it = reflectApply(mapEntries, v, []);
      for (let s = reflectApply(mapIterNext, it, []); !s.done; s = reflectApply(mapIterNext, it, [])) {
        const k = c(s.value[0], depth + 1);
        reflectApply(mapSet, out, [k, c(s.value[1], depth + 1)]);
      }
      return out;
    }
    if (brand(setValues, v)) {
      out = new SetCtor();
      reflectApply(mapSet, seen, [v, out]);
      const it = reflectApply(setValues, v, []);
      for (let s = reflectApply(setIterNext, it, []); !s.done; s = reflectApply(setIterNext, it, [])) reflectApply(setAdd, out, [c(s.value, depth + 1)]);
      return out;
    }
    if (brand(dateGetTime, v)) { out = new DateCtor(reflectApply(dateGetTime, v, [])); reflectApply(mapSet, seen, [v, out]); return out; }
    if (brand(regexpSource, v)) {
      const src = reflectApply(regexpSource, v, []);
      spend(src.length);
      out = new RegExpCtor(src, reflectApply(regexpFlags, v, []));
      reflectApply(mapSet, seen, [v, out]);
      return out;
    }
    if (brand(abByteLength, v)) {
      spend(reflectApply(abByteLength, v, []));
      out = reflectApply(abSlice, v, []);
      reflectApply(mapSet, seen, [v, out]);
      return out;
    }
    const tag = brand(taTag, v) ? reflectApply(taTag, v, []) : undefined;
    if (tag !== undefined) {
      const C = typed[tag];
      const n = reflectApply(taLength, v, []);
      spend(n * C.BYTES_PER_ELEMENT);
      const offset = reflectApply(taOffset, v, []);
      out = new C(reflectApply(abSlice, reflectApply(taBuffer, v, []), [offset, offset + n * C.BYTES_PER_ELEMENT]));
      reflectApply(mapSet, seen, [v, out]);
      return out;
    }
    if (errorHas(v)) {
      let name = "Error";
      let message = "";
      try { name = StringCtor(v.name); message = StringCtor(v.message).slice(0, ${MAX_MESSAGE}); } catch {}
      out = new (hasOwn(errorCtors, name) ? errorCtors[name] : ErrorCtor)(message);
      reflectApply(mapSet, seen, [v, out]);
      return out;
    }
    out = {};
    reflectApply(mapSet, seen, [v, out]);
    const keys = objectKeys(v);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      spend(8 + k.length);
      own(out, k, c(v[k], depth + 1));
    }
    return out;
  };
  return c(root, 0);
}
// a value returned to the tests: { ok, value }, or why it cannot cross
function copied(v) {
  try {
    return { ok: true, value: copyOut(v) };
  } catch (e) {
    if (e === EXIT) return { exit: true };
    if (e === TOO_BIG) return { ok: false, notData: "it is larger than ${MAX_COPY >> 20} MB as a copy" };
    if (e === NOT_DATA) return { ok: false, notData: "it is not plain data (functions, symbols and class instances' methods are not)" };
    let name = "Error";
    let message = "";
    try { name = StringCtor(e.name).slice(0, ${MAX_MESSAGE}); message = StringCtor(e.message).slice(0, ${MAX_MESSAGE}); } catch {}
    return { ok: false, name, message };
  }
}

return {
  // the "line"/"close" and "data"/"end" listeners the program registered, after its synchronous part
  deliver() {
    try {
      for (const f of listeners.data) f(stdinText);
      for (const f of listeners.end) f();
      for (; lineAt < lines.length; ) { const l = lines[lineAt++]; for (const f of listeners.line) f(l); }
      for (const f of listeners.close) f();
      return "";
    } catch (e) { return e === EXIT ? "" : describe(e); }
  },
  returned(v) {
    try {
      if (!isPlain(v, 0)) return "\u0000opaque";
      const j = jsonStringify(v);
      return j === undefined ? "\u0000opaque" : j;
    } catch (e) { return e === EXIT ? "\u0000exit" : "\u0000opaque"; }
  },
  // a function of the program the tests call from their own context: what it returned, or threw, as
  // data made here (copyOut), so the clone that carries it to the tests runs none of the program's code
  serve(f) {
    return function (...args) {
      let value;
      try {
        value = reflectApply(f, undefined, args);
      } catch (e) {
        if (e === EXIT) return { exit: true };
        if (e !== null && (typeof e === "object" || typeof e === "function")) {
          let name = "Error";
          let message = "";
          try { name = StringCtor(e.name).slice(0, ${MAX_MESSAGE}); message = StringCtor(e.message).slice(0, ${MAX_MESSAGE}); } catch {}
          return { ok: false, name, message };
        }
        try { return { ok: false, thrown: copyOut(e) }; } catch { return { ok: false, name: "Error", message: "the program threw a value too large to copy" }; }
      }
      return copied(value);
    };
  },
  // one of the program's values, copied once for the tests (undefined when it is no data)
  serveValue(v) {
    return () => {
      const r = copied(v);
      return r.ok ? r : { ok: false };
    };
  },
  state: () => jsonStringify({ out: out.text, err: err.text, over, exited, exitCode }),
  // the tests start: a failed console.assert is a failed test from here on
  testing() { testing = true; },
};
function describe(e) {
  try {
    if (e && typeof e === "object" && typeof e.name === "string") return (e.name + ": " + StringCtor(e.message)).slice(0, ${MAX_MESSAGE});
    return ("Uncaught " + StringCtor(e)).slice(0, ${MAX_MESSAGE});
  } catch { return "Uncaught exception"; }
}
})`;

export class JsRunner implements CodeRunner {
  private isolate: ivm.Isolate | undefined;
  private isolateMb = 0;
  private harness: ivm.Script | undefined;
  readonly stats = { isolates: 0, runs: 0 };

  /** `maxMb`: the worker's own memory limit, which no run's limit goes past (its watchdog bounds the process by it) */
  constructor(private readonly maxMb = Number.POSITIVE_INFINITY) {}

  private mbFor(memoryMb: number): number {
    return Math.max(8, Math.min(memoryMb, this.maxMb));
  }

  /** the isolate for runs of `memoryMb` is up */
  startedFor(memoryMb: number): boolean {
    return this.isolate !== undefined && !this.isolate.isDisposed && this.isolateMb === this.mbFor(memoryMb);
  }

  warm(memoryMb: number): void {
    this.ensure(this.mbFor(memoryMb));
  }

  private ensure(memoryMb: number): ivm.Isolate {
    if (this.isolate && !this.isolate.isDisposed && this.isolateMb === memoryMb) return this.isolate;
    if (this.isolate && !this.isolate.isDisposed) this.isolate.dispose();
    this.isolate = new ivm.Isolate({ memoryLimit: memoryMb });
    this.isolateMb = memoryMb;
    this.harness = this.isolate.compileScriptSync(HARNESS, { filename: "gradebox:js-harness" });
    this.stats.isolates++;
    return this.isolate;
  }

  run(request: RunRequest): RunResult {
    const isolate = this.ensure(this.mbFor(request.limits.memoryMb));
    this.stats.runs++;
    const cpuBefore = isolate.cpuTime;
    const started = Date.now();
    let context: ivm.Context;
    try {
      context = isolate.createContextSync();
      confine(isolate, context);
    } catch (error) {
      // the isolate is spent (a context could not be made within its limit): the next run gets a new one
      this.dispose();
      throw new RunnerFailure(`the JavaScript runner could not make a context: ${error instanceof Error ? error.message : String(error)}`);
    }
    /** every Reference into the contexts: released with them, or they keep the contexts alive */
    const held: ivm.Reference[] = [];
    /** the run's contexts: the program's, and the tests' (assert-style tests) */
    const contexts: ivm.Context[] = [context];
    const keep = <T extends ivm.Reference>(r: T): T => {
      held.push(r);
      return r;
    };
    const cpu = () => (isolate.isDisposed ? Date.now() - started : Number(isolate.cpuTime - cpuBefore) / 1e6);
    let h: ivm.Reference | undefined;
    try {
      // the time limit runs from the harness on: a time-out of the harness itself is the run's
      const left = () => Math.max(1, request.limits.cpuMs - Math.floor(cpu()));
      const make = keep((this.harness as ivm.Script).runSync(context, { reference: true }) as ivm.Reference);
      h = keep(
        make.applySync(undefined, [request.stdin ?? "", request.limits.outputBytes], { result: { reference: true } }) as ivm.Reference,
      );
      const harness = h;
      const ref = (name: string) => keep(harness.getSync(name, { reference: true }) as ivm.Reference);
      const state = ref("state");
      const returnedOf = ref("returned");
      let status: RunStatus = "ok";
      let message: string | undefined;
      let completed = false;
      let returned: unknown;
      let returnedOpaque = false;
      let script: ivm.Script;
      try {
        script = isolate.compileScriptSync(request.program, { filename: "program.js" });
      } catch (error) {
        return this.finish(
          state,
          { status: "syntax_error", message: errorText(error), exitCode: 1, completed: false },
          cpu(),
          request.limits.outputBytes,
        );
      }
      const thrown = (error: unknown): boolean => {
        // the harness's own throw (process.exit, output past its limit) is no exception of the program's
        if (error instanceof Error && /^(Script execution timed out|Isolate was disposed)/.test(error.message)) throw error;
        return true;
      };
      let failed = false;
      try {
        if (request.before !== undefined) {
          try {
            isolate.compileScriptSync(request.before, { filename: "setup.js" }).runSync(context, { timeout: left() });
          } catch (error) {
            thrown(error);
            return this.finish(
              state,
              { status: "runtime_error", message: `the tests' setup code failed: ${errorText(error)}`, exitCode: 1, completed: false },
              cpu(),
              request.limits.outputBytes,
            );
          }
        }
        script.runSync(context, { timeout: left() });
        // the tests' setup, after the program, in its context (MBPP's order)
        if (request.setup !== undefined)
          isolate.compileScriptSync(request.setup, { filename: "setup.js" }).runSync(context, { timeout: left() });
        const delivered = ref("deliver").applySync(undefined, [], { timeout: left() });
        if (typeof delivered === "string" && delivered !== "") {
          failed = true;
          status = "runtime_error";
          message = delivered.slice(0, MAX_MESSAGE);
        }
      } catch (error) {
        thrown(error);
        failed = !this.harnessStop(state);
        if (failed) {
          status = "runtime_error";
          message = errorText(error);
        }
      }
      const s = this.readState(state);
      if (s.exited || s.over) failed = true;
      /** the tests' harness state, once made: what they printed is kept whether they pass or not */
      const tests: { state?: ivm.Reference } = {};
      if (!failed && request.after !== undefined) {
        try {
          this.runTests(request, context, harness, keep, left, contexts, tests);
          completed = true;
        } catch (error) {
          thrown(error);
          if (!this.harnessStop(state) && !(tests.state && this.harnessStop(tests.state))) {
            status = "runtime_error";
            message = errorText(error);
          }
        }
      } else if (!failed && request.call !== undefined) {
        try {
          const name = request.call.name;
          if (!/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)?$/.test(name)) throw new Error(`cannot call ${name}`);
          const [head, method] = name.split(".");
          const target = method === undefined ? head : `(() => { const o = new ${head}(); return o.${method}.bind(o); })()`;
          const fn = keep(
            isolate
              .compileScriptSync(`(${target})`, { filename: "call.js" })
              .runSync(context, { reference: true, timeout: left() }) as ivm.Reference,
          );
          const value = keep(
            fn.applySync(undefined, request.call.args, {
              timeout: left(),
              arguments: { copy: true },
              result: { reference: true },
            }) as ivm.Reference,
          );
          const text = returnedOf.applySync(undefined, [value.derefInto()], { timeout: left() });
          if (text === "\u0000exit") {
            // process.exit inside the call: the harness never saw its value
          } else {
            completed = true;
            if (typeof text !== "string" || text.length > MAX_RETURNED || text === "\u0000opaque") returnedOpaque = true;
            else returned = JSON.parse(text);
          }
        } catch (error) {
          thrown(error);
          if (!this.harnessStop(state)) {
            status = "runtime_error";
            message = errorText(error);
          }
        }
      }
      return this.finish(
        state,
        { status, message, exitCode: status === "runtime_error" ? 1 : 0, completed, returned, returnedOpaque },
        cpu(),
        request.limits.outputBytes,
        tests.state,
      );
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      if (/^Script execution timed out/.test(text))
        return { status: "time_limit", stdout: "", stderr: "", exitCode: 1, completed: false, cpuMs: cpu() };
      if (isolate.isDisposed || /memory limit|disposed/i.test(text)) {
        this.isolate = undefined;
        return {
          status: "memory_limit",
          stdout: "",
          stderr: "",
          exitCode: 1,
          completed: false,
          cpuMs: cpu(),
          message: "memory limit: the run went past its isolate's memory",
        };
      }
      throw new RunnerFailure(`the JavaScript runner failed: ${text}`);
    } finally {
      if (!isolate.isDisposed) {
        for (const r of held) r.release();
        for (const c of contexts) c.release();
      }
    }
  }

  /** the throw was the harness's own (process.exit, or output past its limit): its closure says so, whatever the program caught or threw */
  private harnessStop(state: ivm.Reference): boolean {
    const s = this.readState(state);
    return s.exited || s.over;
  }

  private readState(state: ivm.Reference): { out: string; err: string; over: boolean; exited: boolean; exitCode: number } {
    const raw = state.applySync(undefined, [], { timeout: 1000 });
    if (typeof raw !== "string") throw new RunnerFailure("the JavaScript harness answered in an unknown form");
    const s = JSON.parse(raw) as { out: string; err: string; over: boolean; exited: boolean; exitCode: number };
    return s;
  }

  /**
   * Assert-style tests in a context of their own (a second realm of the isolate, with its own
   * harness): the program's names the tests use arrive as copies, its functions as proxies that
   * call it with copies of their arguments (structured clone) and return a copy of its value.
   * A program then cannot patch what the tests call (JSON.stringify, Math.abs, Array.prototype.every,
   * the assert module) nor read them: none of it is in its realm. The tests' harness state is
   * put in `tests` as soon as it exists.
   */
  private runTests(
    request: RunRequest,
    program: ivm.Context,
    programHarness: ivm.Reference,
    keep: <T extends ivm.Reference>(r: T) => T,
    left: () => number,
    contexts: ivm.Context[],
    tests: { state?: ivm.Reference },
  ): void {
    const isolate = this.isolate as ivm.Isolate;
    const context = isolate.createContextSync();
    contexts.push(context);
    confine(isolate, context);
    const make = keep((this.harness as ivm.Script).runSync(context, { reference: true }) as ivm.Reference);
    const th = keep(
      make.applySync(undefined, [request.stdin ?? "", request.limits.outputBytes], { result: { reference: true } }) as ivm.Reference,
    );
    keep(th.getSync("testing", { reference: true }) as ivm.Reference).applySync(undefined, [], { timeout: left() });
    tests.state = keep(th.getSync("state", { reference: true }) as ivm.Reference);
    const serve = keep(programHarness.getSync("serve", { reference: true }) as ivm.Reference);
    const serveValue = keep(programHarness.getSync("serveValue", { reference: true }) as ivm.Reference);
    // the tests' free names: every identifier in their text (a superset) the tests' realm does not define
    const own = new Set(isolate.compileScriptSync("Object.getOwnPropertyNames(globalThis)").runSync(context, { copy: true }) as string[]);
    const names = [...new Set((request.after as string).match(/[A-Za-z_$][\w$]*/g) ?? [])].filter(
      (n) => !own.has(n) && !RESERVED.has(n) && n !== KINDS,
    );
    // what each is in the program's realm, in one script: `typeof` of each, joined by primitive
    // string concatenation (nothing the program can patch), "" where it throws (a let before its line)
    const kinds =
      names.length === 0
        ? ""
        : isolate
            .compileScriptSync(
              `(() => { let ${KINDS} = ""; ${names.map((n) => `try { ${KINDS} += typeof ${n}; } catch {} ${KINDS} += ",";`).join(" ")} return ${KINDS}; })()`,
            )
            .runSync(program, { timeout: left() });
    const kindOf = typeof kinds === "string" ? kinds.split(",") : [];
    const proxyScript = cachedScript(isolate, "proxy", PROXY);
    const valueScript = cachedScript(isolate, "value", VALUE);
    let made = 0;
    for (const [i, name] of names.entries()) {
      const kind = kindOf[i];
      if (made >= MAX_NAMES || !TYPEOFS.has(kind) || kind === "undefined") continue;
      made++;
      if (kind === "function") {
        const f = keep(isolate.compileScriptSync(`(${name})`).runSync(program, { reference: true, timeout: left() }) as ivm.Reference);
        const served = keep(serve.applySync(undefined, [f.derefInto()], { result: { reference: true }, timeout: left() }) as ivm.Reference);
        const proxy = keep(proxyScript.runSync(context, { reference: true }) as ivm.Reference);
        proxy.applySync(undefined, [name, served], { timeout: left() });
      } else {
        // copied inside the isolate by the program's harness: never through the host's heap
        const v = keep(isolate.compileScriptSync(`(${name})`).runSync(program, { reference: true, timeout: left() }) as ivm.Reference);
        const served = keep(
          serveValue.applySync(undefined, [v.derefInto()], { result: { reference: true }, timeout: left() }) as ivm.Reference,
        );
        const copy = keep(valueScript.runSync(context, { reference: true }) as ivm.Reference);
        copy.applySync(undefined, [name, served], { timeout: left() });
      }
    }
    // a strict function of its own, called as it is (on the same first line, so line numbers hold)
    isolate
      .compileScriptSync(`(function () { "use strict"; ${request.after}\n})();`, { filename: "tests.js" })
      .runSync(context, { timeout: left() });
  }

  private finish(
    state: ivm.Reference,
    r: { status: RunStatus; message?: string; exitCode: number; completed: boolean; returned?: unknown; returnedOpaque?: boolean },
    cpuMs: number,
    outputBytes: number,
    /** the tests' context's harness: what the tests printed follows what the program printed */
    testsState?: ivm.Reference,
  ): RunResult {
    const s = this.readState(state);
    if (testsState) {
      const t = this.readState(testsState);
      s.out += t.out;
      s.err += t.err;
      if (t.over) s.over = true;
    }
    let status = r.status;
    let exitCode = r.exitCode;
    let message = r.message;
    if (s.over) {
      status = "output_limit";
      message = `output limit: more than ${outputBytes} bytes of output`;
    } else if (s.exited) {
      exitCode = s.exitCode;
      status = s.exitCode === 0 ? (status === "syntax_error" ? status : "ok") : "runtime_error";
      message = s.exitCode !== 0 ? `process.exit(${s.exitCode})` : undefined;
    }
    return {
      status,
      stdout: s.out,
      stderr: s.err,
      exitCode,
      completed: r.completed && !s.exited && !s.over,
      cpuMs,
      ...(message === undefined ? {} : { message: message.slice(0, MAX_MESSAGE) }),
      ...(r.returnedOpaque ? { returnedOpaque: true } : r.completed && r.returned !== undefined ? { returned: r.returned } : {}),
    };
  }

  dispose(): void {
    if (this.isolate && !this.isolate.isDisposed) this.isolate.dispose();
    this.isolate = undefined;
  }
}

function errorText(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`.slice(0, MAX_MESSAGE);
  return `Uncaught ${String(error)}`.slice(0, MAX_MESSAGE);
}

// Trusted code that runs as the "module" of a Python isolate, after the prelude and before any
// grader code: it takes the booted interpreter (isolate/boot.ts) and the shell (env.ts) off the
// global, reseeds Python's randomness, seals WebAssembly, and sets `__gradebox_grade` for the
// prelude's batch runner, which calls into the in-sandbox library (gradebox._sandbox). So the
// prelude's reply encoder, time slices and progress slot stay the one path for every language.
//
// The host reaches the library's check and load through `__gradebox_py`, which it takes as
// References and deletes like the prelude's functions. Everything crossing back is a primitive.

type PyCallable = (...args: unknown[]) => unknown;
interface Pyodide {
  runPython(code: string): unknown;
  pyimport(name: string): Record<string, PyCallable>;
}

const g = globalThis as Record<string, unknown>;
const boot = g.__gradebox_py_boot as { pyodide(): Pyodide };
const env = g.__gradebox_py_env as { seal(): void };
const fail = g.__gradebox_fail as (code: string, message: string, line?: number, column?: number, endsSlice?: boolean) => unknown;
const setSlicer = g.__gradebox_slicer as (slicer: {
  load(head: string, text: string): boolean;
  run(from: number, end: number, emit: (value: unknown, failed: boolean) => boolean): void;
}) => void;
delete g.__gradebox_py_boot;
delete g.__gradebox_py_env;
delete g.__gradebox_fail;
delete g.__gradebox_slicer;

const jsonStringify = JSON.stringify;
const jsonParse = JSON.parse;
const py = boot.pyodide();
// Restored isolates share the template's memory, so its random state too: os.urandom now reads
// this isolate's host randomness (env.ts), and `random`'s global generator starts from it.
py.runPython("import random as _r\n_r.seed()\ndel _r");
env.seal();
const sandbox = py.pyimport("gradebox._sandbox");
const pyGrade = sandbox.grade;
const pyGradeGroup = sandbox.grade_group;
const pyShape = sandbox.shape;
const pyLoad = sandbox.load;
const pyCheck = sandbox.check;
const pyLoadBatch = sandbox.load_batch;
const pyGradeSlice = sandbox.grade_slice;
const regExpTest = Function.prototype.call.bind(RegExp.prototype.test) as (re: RegExp, text: string) => boolean;
const SURROGATE = /[\uD800-\uDFFF]/;
/** a character past Latin-1 (the class is every character from U+0100 on) */
const WIDE = /[\u0100-\uffff]/;
const charCodeAt = Function.prototype.call.bind(String.prototype.charCodeAt) as (text: string, at: number) => number;
const Bytes = Uint8Array;
const Units = Uint16Array;

/**
 * The batch's text as the bytes Python decodes at C speed (Pyodide converts a long string
 * character by character: 1.7 ms for 312 KB, against 0.4 ms this way): Latin-1 when every
 * character fits a byte, else UTF-16; undefined when it has surrogates, whose pairs would make
 * Python's code points disagree with the batch's lengths (UTF-16 units).
 */
function encodeText(text: string): Uint8Array | Uint16Array | undefined {
  const wide = regExpTest(WIDE, text);
  if (wide && regExpTest(SURROGATE, text)) return undefined;
  const n = text.length;
  const out = wide ? new Units(n) : new Bytes(n);
  for (let i = 0; i < n; i++) out[i] = charCodeAt(text, i);
  return out;
}
const memory = (py as unknown as { _module: { memory: WebAssembly.Memory } })._module.memory;
const bufferOf = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(memory), "buffer")?.get as () => ArrayBuffer;
const byteLengthOf = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength")?.get as () => number;
const reflectApply = Reflect.apply;

/** What Python raised outside the library's own handling (it reports grader errors as values). */
function describe(error: unknown): string {
  try {
    const text = (error as { message?: unknown })?.message;
    return typeof text === "string" ? text.slice(-2000) : "the Python runtime failed";
  } catch {
    return "the Python runtime failed";
  }
}

const asText = (value: unknown) =>
  typeof value === "string" ? value : jsonStringify({ message: "the library answered in an unknown form" });

Object.defineProperty(g, "__gradebox_py", {
  value: {
    check: (source: string) => {
      try {
        return asText(pyCheck(source));
      } catch (error) {
        return jsonStringify({ ok: false, failure: { check: "syntax", message: describe(error) } });
      }
    },
    load: (source: string) => {
      try {
        return asText(pyLoad(source));
      } catch (error) {
        return jsonStringify({ message: describe(error) });
      }
    },
    /** which of grade and grade_group the loaded module defines ("thread", "group" or "both") */
    shape: () => {
      try {
        return asText(pyShape());
      } catch {
        return "";
      }
    },
    /** whether an item left the interpreter unfit for another (the worker then starts a fresh one) */
    unfit: () => unfit,
    /** the interpreter's wasm memory, which isolated-vm's heap statistics leave out */
    wasmBytes: () => reflectApply(byteLengthOf, reflectApply(bufferOf, memory, []), []),
  },
  configurable: true,
});

interface PyError {
  code?: unknown;
  message?: unknown;
  line?: unknown;
  column?: unknown;
}

/**
 * Set after an item that may have left the interpreter broken: out of memory, a recursion that
 * reached the C stack (a raised recursion limit), or anything that escaped the library. That item
 * ends its slice, and no item after it runs in this interpreter.
 */
let unfit = false;
const UNFIT = /\b(MemoryError|RecursionError|Maximum call stack)\b/;

/** What escaped the library (MemoryError does when there is not even memory left to report it): the interpreter is done. */
function escaped(error: unknown): unknown {
  const message = describe(error);
  unfit = true;
  return fail(message.includes("MemoryError") ? "GRADER_MEMORY_LIMIT" : "GRADER_ERROR", message, undefined, undefined, true);
}

/** The prelude's brand of an abstention (sdk/graders.ts's Abstain carries it too): a registered symbol. */
const ABSTAIN = Symbol.for("gradebox.abstain");
const objectCreate = Object.create;
const isArray = Array.isArray;

/** An abstention the prelude recognises, with the library's reason (grade returned None, or raised Abstain). */
function abstention(reason: unknown): unknown {
  const out = objectCreate(null) as Record<string | symbol, unknown>;
  out[ABSTAIN] = true;
  out.reason = typeof reason === "string" ? reason : "the grader abstained";
  return out;
}

/** The coded error of the library's {"error": …}, flagging the interpreter unfit when the error says it is. */
function codedError(e: PyError): unknown {
  // an interpreter that ran out of memory or stack grades nothing more: the rest of the batch gets a fresh one
  const code = String(e.code);
  const message = String(e.message);
  if (code === "GRADER_MEMORY_LIMIT" || UNFIT.test(message)) unfit = true;
  return fail(code, message, e.line as number, e.column as number, unfit);
}

/** One parsed value of the library's: a score or result as it is; an error or abstention as the prelude's value for one. */
function readValue(result: unknown): { value: unknown; failed: boolean } {
  if (result !== null && typeof result === "object") {
    if ("error" in result) return { value: codedError((result as { error?: PyError }).error ?? {}), failed: true };
    if ("abstained" in result)
      return { value: abstention((result as { abstained?: { reason?: unknown } }).abstained?.reason), failed: true };
  }
  return { value: result, failed: false };
}

/** An item's value from the library (a float, or JSON of a result, an error or an abstention): the result, or throws the error or abstention. */
function resultOf(value: unknown): unknown {
  if (typeof value === "number") return value;
  if (typeof value !== "string") throw fail("GRADER_ERROR", "the Python library answered in an unknown form");
  const read = readValue(jsonParse(value));
  if (read.failed) throw read.value;
  return read.value;
}

g.__gradebox_grade = (thread: { getTurns(): unknown; metadata: unknown }) => {
  let value: unknown;
  try {
    value = pyGrade(jsonStringify(thread.getTurns()), jsonStringify(thread.metadata));
  } catch (error) {
    throw escaped(error);
  }
  return resultOf(value);
};

// A group: its threads' turns and metadata in, one crossing, and one value per thread back (the
// prelude checks each as it checks grade's), or the one error or abstention of the whole group.
g.__gradebox_grade_group = (threads: Array<{ getTurns(): unknown; metadata: unknown }>) => {
  const n = threads.length;
  let turns = "[";
  let metadata = "[";
  for (let k = 0; k < n; k++) {
    turns += (k === 0 ? "" : ",") + jsonStringify(threads[k].getTurns());
    metadata += (k === 0 ? "" : ",") + jsonStringify(threads[k].metadata);
  }
  let value: unknown;
  try {
    value = pyGradeGroup(`${turns}]`, `${metadata}]`);
  } catch (error) {
    throw escaped(error);
  }
  if (typeof value !== "string") throw fail("GRADER_ERROR", "the Python library answered in an unknown form");
  const parsed = jsonParse(value) as unknown;
  if (!isArray(parsed)) {
    const read = readValue(parsed);
    throw read.failed ? read.value : fail("GRADER_ERROR", "the Python library answered in an unknown form");
  }
  for (let k = 0; k < parsed.length; k++) {
    const read = readValue(parsed[k]);
    // an element that left the interpreter unfit ends the group, and the slice with it
    if (unfit && read.failed) throw read.value;
    parsed[k] = read.value;
  }
  return parsed;
};

// The prelude's batches, a slice per crossing: Python slices the batch's text itself and hands
// each item's value back through emit, which the prelude encodes as it does grade's. A text with
// surrogates goes item by item (encodeText).
setSlicer({
  load(head: string, text: string): boolean {
    const bytes = encodeText(text);
    if (bytes === undefined) return false;
    pyLoadBatch(head, bytes, bytes.BYTES_PER_ELEMENT === 2);
    return true;
  },
  run(from: number, end: number, emit: (value: unknown, failed: boolean) => boolean): void {
    const each = (value: unknown): boolean => {
      let result: unknown;
      try {
        result = resultOf(value);
      } catch (error) {
        return emit(error, true);
      }
      return emit(result, false);
    };
    try {
      pyGradeSlice(from, end, each);
    } catch (error) {
      throw escaped(error);
    }
  },
});

// The Python template of a worker: Pyodide (the pinned npm package: the binary, its glue and
// the standard library ship in it, nothing is fetched) booted once in an isolate of its own, the
// modules graders commonly use and the in-sandbox library imported, and its memory taken as a
// snapshot. The template's isolate is then disposed: the host keeps the compiled binary (shared
// by every Python isolate of the worker), the snapshot and the standard library, and each
// grader's isolate starts from them (startInterpreter). Made lazily, at a worker's first Python
// grader or validation: a worker that never sees Python never pays for it.

import { randomBytes } from "node:crypto";
import { globSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ivm from "isolated-vm";
import { loadPythonScripts } from "./bundle.ts";
import { capMemory } from "./wasm-limits.ts";

const MB = 1024 * 1024;
const PAGE = 64 * 1024;
/** how many times the host re-enters a booting isolate (each drains its microtasks) before giving up */
const MAX_POLLS = 10_000;
/** the template's own isolate: the interpreter's JavaScript side while it boots from nothing */
const TEMPLATE_LIMIT_MB = 512;

/** What the template imports before its snapshot: what graders commonly use, then the library. */
const PRELOADED = [
  "re",
  "json",
  "math",
  "string",
  "collections",
  "itertools",
  "functools",
  "statistics",
  "difflib",
  "unicodedata",
  "random",
  "datetime",
  "decimal",
  "fractions",
  "typing",
  "dataclasses",
  "asyncio",
  "gradebox._sandbox",
];

export interface PythonTemplate {
  /** the binary with its memory maximum lowered to the template's memory + the grader's limit */
  module: ivm.ExternalCopy<WebAssembly.Module>;
  stdlib: ivm.ExternalCopy<ArrayBuffer>;
  snapshot: ivm.ExternalCopy<ArrayBuffer>;
  snapshotBytes: number;
  /** the most wasm memory a grader's interpreter may have */
  maxWasmBytes: number;
  lock: string;
  /** the library's files, [path under site-packages, text] */
  files: [string, string][];
  /** how long the boot and snapshot took (ms of wall time) */
  bootMs: number;
  /** V8's code cache for the Pyodide bundle (1.6 MB of JavaScript): a grader's isolate then skips its parse (~20 ms) */
  bootCache: ivm.ExternalCopy<ArrayBuffer> | undefined;
}

const pyodideDir = dirname(createRequire(import.meta.url).resolve("pyodide/package.json"));

/** The in-sandbox library (lib/): its modules, not its tests. */
function libraryFiles(): [string, string][] {
  const root = fileURLToPath(new URL("./lib/", import.meta.url));
  const files = globSync("**/*.py", { cwd: root, exclude: (f) => f === "tests" || f.startsWith("tests/") })
    .map((f) => f.replaceAll("\\", "/"))
    .filter((f) => !f.startsWith("tests/"))
    .sort();
  if (!files.includes("gradebox/_sandbox.py")) throw new Error(`the in-sandbox Python library (${root}gradebox/_sandbox.py) is missing`);
  return files.map((f) => [f, readFileSync(join(root, f), "utf8")]);
}

interface StartOptions {
  module: ivm.ExternalCopy<WebAssembly.Module>;
  stdlib: ivm.ExternalCopy<ArrayBuffer>;
  lock: string;
  files: [string, string][];
  snapshot?: ivm.ExternalCopy<ArrayBuffer>;
  bootCache?: ivm.ExternalCopy<ArrayBuffer>;
  timeoutMs: number;
}

/**
 * Starts the interpreter in a fresh context: the shell, then Pyodide from nothing or from the
 * snapshot. Throws when it does not come up within `timeoutMs` of isolate time per call.
 * Returns the bundle's code cache when none was given (the template's boot makes it).
 */
export function startInterpreter(
  isolate: ivm.Isolate,
  context: ivm.Context,
  options: StartOptions,
): ivm.ExternalCopy<ArrayBuffer> | undefined {
  const scripts = loadPythonScripts();
  const random = new ivm.ExternalCopy(new Uint8Array(randomBytes(64 * 1024)).buffer);
  context.evalClosureSync("globalThis.__gradebox_py_input = { module: $0, stdlib: new Uint8Array($1), random: new Uint8Array($2) };", [
    options.module.copyInto(),
    options.stdlib.copyInto(),
    random.copyInto({ release: true }),
  ]);
  isolate.compileScriptSync(scripts.env, { filename: "gradebox:python-env" }).runSync(context, { timeout: options.timeoutMs });
  const boot = isolate.compileScriptSync(scripts.boot, {
    filename: "gradebox:python-boot",
    ...(options.bootCache ? { cachedData: options.bootCache } : { produceCachedData: true }),
  });
  boot.runSync(context, { timeout: options.timeoutMs });
  const start = context.global.getSync("__gradebox_py_boot", { reference: true });
  const state = start.getSync("state", { reference: true });
  start
    .getSync("start", { reference: true })
    .applySync(
      undefined,
      [new ivm.ExternalCopy({ lock: options.lock, files: options.files }).copyInto({ release: true }), options.snapshot?.copyInto()],
      { timeout: options.timeoutMs },
    );
  for (let i = 0; i < MAX_POLLS; i++) {
    const now = state.applySync(undefined, [], { timeout: options.timeoutMs }) as string;
    if (now === "ready") return options.bootCache ? undefined : (boot as ivm.Script & ivm.CachedDataResult).cachedData;
    if (now !== "booting") throw new Error(`the Python interpreter did not start: ${now}`);
  }
  throw new Error("the Python interpreter did not start: its loader never settled");
}

/** Boots the template for graders of `memoryMb` (their memory limit) and takes its snapshot. */
export function makeTemplate(memoryMb: number): PythonTemplate {
  const started = performance.now();
  const binary = readFileSync(join(pyodideDir, "pyodide.asm.wasm"));
  const stdlibBytes = readFileSync(join(pyodideDir, "python_stdlib.zip"));
  const stdlib = new ivm.ExternalCopy(stdlibBytes.buffer.slice(stdlibBytes.byteOffset, stdlibBytes.byteOffset + stdlibBytes.byteLength));
  const lock = readFileSync(join(pyodideDir, "pyodide-lock.json"), "utf8");
  const files = libraryFiles();
  // the binary's own minimum is the interpreter's memory as it boots; the grader's limit comes on top
  const { minPages } = capMemory(new Uint8Array(binary), 65536);
  const pages = minPages + memoryMb * (MB / PAGE);
  // the template boots on the very module every grader's isolate will use: the code it compiled
  // while booting is then shared by all of them
  const module = new ivm.ExternalCopy(new WebAssembly.Module(capMemory(new Uint8Array(binary), pages).bytes));
  const isolate = new ivm.Isolate({ memoryLimit: TEMPLATE_LIMIT_MB });
  let snapshot: ivm.ExternalCopy<ArrayBuffer>;
  let bootCache: ivm.ExternalCopy<ArrayBuffer> | undefined;
  try {
    const context = isolate.createContextSync();
    bootCache = startInterpreter(isolate, context, { module, stdlib, lock, files, timeoutMs: 60_000 });
    const imports = PRELOADED.map((m) => `import ${m}`).join("\n");
    snapshot = context.evalClosureSync(
      `const py = globalThis.__gradebox_py_boot.pyodide();
       py.runPython($0);
       const bytes = py.makeMemorySnapshot();
       return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);`,
      [imports],
      { timeout: 60_000, result: { externalCopy: true } },
    ) as ivm.ExternalCopy<ArrayBuffer>;
  } finally {
    isolate.dispose();
  }
  const snapshotBytes = snapshot.copy().byteLength;
  return {
    module,
    stdlib,
    snapshot,
    snapshotBytes,
    maxWasmBytes: pages * PAGE,
    lock,
    files,
    bootMs: performance.now() - started,
    bootCache,
  };
}

/** Releases what the template holds outside any isolate (a worker that keeps a compiled module's copy does not exit). */
export function releaseTemplate(template: PythonTemplate): void {
  template.module.release();
  template.stdlib.release();
  template.snapshot.release();
  template.bootCache?.release();
}

// Trusted code that runs first in a Python isolate, before Pyodide's loader and glue: what they
// take from a "shell" (Emscripten's bare V8 environment) is made here from what the host copied
// in, and handed to the Pyodide bundle as lexical names (python/bundle.ts wraps the bundle in a
// function whose parameters they are), never as globals grader code could reach.
//
// - WebAssembly: a facade over the real namespace, captured here before the prelude deletes the
//   global. Instantiating the Pyodide binary uses the module the host compiled once (shared by
//   every isolate of the worker) and runs synchronously: an asynchronous compile never settles
//   inside isolated-vm. Once sealed (after boot), it makes no memory and compiles no module
//   that defines one: the only wasm memory is the interpreter's, whose maximum the host lowered
//   to the grader's limit, because isolated-vm's memory limit does not count wasm memory.
// - readbuffer/read/load: the loader believes it runs in a shell and reads its files here.
// - os.system: Emscripten's shell source of randomness (`head -c N /dev/urandom | base64`),
//   answered from host randomness copied in, so restored isolates do not share random state.

import { TextDecoder, TextEncoder } from "./text-codec.ts";

interface PyInput {
  /** the Pyodide binary, compiled once by the host */
  module: WebAssembly.Module;
  /** python_stdlib.zip */
  stdlib: Uint8Array;
  /** random bytes from the host's CSPRNG */
  random: Uint8Array;
}

interface PyEnv {
  WebAssembly: typeof WebAssembly;
  read: (path: string) => string;
  load: (path: string) => void;
  readbuffer: (path: string) => ArrayBuffer;
  os: { system: (command: string, args: string[]) => string };
  performance: { now: () => number };
  console: Record<string, () => void>;
  TextEncoder: typeof TextEncoder;
  TextDecoder: typeof TextDecoder;
  Error: ErrorConstructor;
  seal: () => void;
}

const g = globalThis as Record<string, unknown>;
const input = g.__gradebox_py_input as PyInput;
delete g.__gradebox_py_input;
const real = WebAssembly;
const RealModule = real.Module;
const RealInstance = real.Instance;
const RealMemory = real.Memory;
const shared = input.module;
let sealed = false;

/** The sections of a wasm binary: true when it defines a memory of its own (section 5). */
function definesMemory(bytes: Uint8Array): boolean {
  let at = 8;
  const leb = () => {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (at >= bytes.length) return -1;
      const b = bytes[at++];
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
      shift += 7;
      if (shift > 35) return -1;
    }
  };
  while (at < bytes.length) {
    const id = bytes[at++];
    const size = leb();
    if (size < 0) return true;
    if (id === 5) return true;
    at += size;
  }
  return false;
}

function compile(source: BufferSource): WebAssembly.Module {
  const bytes = ArrayBuffer.isView(source)
    ? new Uint8Array(source.buffer, source.byteOffset, source.byteLength)
    : new Uint8Array(source as ArrayBuffer);
  // the loader reads the binary as an empty file: the host compiled it (see readbuffer)
  if (bytes.length === 0) return shared;
  if (sealed && definesMemory(bytes)) throw new Error("this sandbox runs no WebAssembly module with a memory of its own");
  return new RealModule(bytes);
}

function Module(this: unknown, source: BufferSource): WebAssembly.Module {
  return compile(source);
}
Module.customSections = RealModule.customSections;
Module.exports = RealModule.exports;
Module.imports = RealModule.imports;
Object.defineProperty(Module, Symbol.hasInstance, { value: (v: unknown) => v instanceof RealModule });

function Memory(this: unknown, descriptor: WebAssembly.MemoryDescriptor): WebAssembly.Memory {
  if (sealed) throw new Error("this sandbox makes no WebAssembly memory");
  return new RealMemory(descriptor);
}
Object.defineProperty(Memory, Symbol.hasInstance, { value: (v: unknown) => v instanceof RealMemory });

const facade = Object.create(null) as Record<string, unknown>;
for (const name of Object.getOwnPropertyNames(real)) facade[name] = (real as unknown as Record<string, unknown>)[name];
facade.Module = Module;
facade.Memory = Memory;
facade.compile = (source: BufferSource) => Promise.resolve(compile(source));
facade.instantiate = (source: BufferSource | WebAssembly.Module, imports?: WebAssembly.Imports) => {
  try {
    if (source instanceof RealModule) return Promise.resolve(new RealInstance(source, imports));
    const module = compile(source);
    return Promise.resolve({ module, instance: new RealInstance(module, imports) });
  } catch (error) {
    return Promise.reject(error);
  }
};
// the interpreter never streams: it reads its binary through readbuffer
delete facade.instantiateStreaming;
delete facade.compileStreaming;

// Host randomness, base64 as `base64 --wrap=0` writes it. Past the bytes copied in (64 KiB),
// V8's Math.random, which each isolate seeds from the system's entropy, fills the rest.
let pool = input.random;
let used = 0;
const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
function randomBase64(count: number): string {
  const bytes = new Uint8Array(count);
  for (let i = 0; i < count; i++) bytes[i] = used < pool.length ? pool[used++] : (Math.random() * 256) | 0;
  if (used >= pool.length) pool = new Uint8Array(0);
  let out = "";
  for (let i = 0; i < count; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63];
    out += i + 1 < count ? B64[(n >> 6) & 63] : "=";
    out += i + 2 < count ? B64[n & 63] : "=";
  }
  return out;
}

// Pyodide's PythonError raises Error.stackTraceLimit while it is made, which the prelude pins (a
// stack is formatted outside any time limit): the bundle's Error has a limit of its own to set,
// and is the real Error to everything else (instanceof included).
const RealError = Error;
class ShellError extends RealError {}
Object.defineProperty(ShellError, "stackTraceLimit", { value: 10, writable: true });
Object.defineProperty(ShellError, Symbol.hasInstance, { value: (v: unknown) => v instanceof RealError });

const env: PyEnv = {
  WebAssembly: facade as unknown as typeof WebAssembly,
  read: () => {
    throw new Error("no file to read");
  },
  load: () => {
    throw new Error("no script to load");
  },
  readbuffer(path: string): ArrayBuffer {
    if (path.endsWith("pyodide.asm.wasm")) return new ArrayBuffer(0);
    if (path.endsWith("python_stdlib.zip")) {
      const stdlib = input.stdlib;
      return stdlib.buffer.slice(stdlib.byteOffset, stdlib.byteOffset + stdlib.byteLength) as ArrayBuffer;
    }
    throw new Error(`no file ${path}`);
  },
  os: {
    system(_command: string, args: string[]): string {
      const count = /head -c(\d+) /.exec(args?.[1] ?? "");
      if (!count) throw new Error("no command runs in this sandbox");
      return randomBase64(Number(count[1]));
    },
  },
  // the interpreter's clocks (time.time, time.perf_counter): an isolate has Date, not performance
  performance: { now: () => Date.now() },
  // the glue reports its own troubles here; nothing reads them
  console: { log() {}, warn() {}, error() {}, info() {}, debug() {} },
  TextEncoder,
  TextDecoder,
  Error: ShellError as unknown as ErrorConstructor,
  seal() {
    sealed = true;
    // an instance's `constructor` would hand Python (which reaches every object Pyodide holds)
    // the real constructors: wasm memory made by them escapes the isolate's memory limit
    for (const name of Object.getOwnPropertyNames(real)) {
      const value = (real as unknown as Record<string, unknown>)[name];
      if (typeof value === "function" && value.prototype) delete value.prototype.constructor;
    }
  },
};
Object.defineProperty(g, "__gradebox_py_env", { value: env, configurable: true });

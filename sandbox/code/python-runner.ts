// Python runs with fresh state for every run, inside ONE isolate started from the worker's
// Pyodide template (python/template.ts). After the interpreter is up and the runner's own Python
// is defined, the "baseline" is taken: a copy of the interpreter's whole WebAssembly memory, its
// stack pointer, the function table's length, the JS values its reference table (hiwire) holds,
// the file system's cwd and open streams. Before every run all of it is put back (memory past
// the copy, which a run may have grown, is zeroed), so the Python heap, sys.modules, builtins,
// random state, the recursion limit and every object a run made are exactly the baseline's again.
// The file system lives in JavaScript: every call that changes it marks the runner dirty, and a
// dirty runner (or one whose interpreter failed, or whose memory grew too far) is replaced by a
// new isolate from the snapshot, the slow path (0.3–1.5 s) taken only by programs that write files.
//
// The verdict's parts are read outside Python: stdout/stderr from the interpreter's fd-level
// device (below print and sys.stdout), and `returned` from `marshal.dumps` (C: exact builtin types
// only, no __eq__ or __class__ runs) decoded here. An assert-style test runs its tests in a second
// runner (the "tests" peer), which never runs program code: `completed` is its _gb_tests returning,
// and what crosses between the two is bytes the host checks (plainMarshal, handles). The helpers
// the program's side runs (_gb_guard, _gb_invoke, _gb_lookup) are Python a program can re-code
// through gc: they only carry what the program could return itself, and the host checks their
// every answer.

import ivm from "isolated-vm";
import type { PythonTemplate } from "../python/template.ts";
import { startInterpreter } from "../python/template.ts";
import { NonFiniteFloat } from "./compare.ts";
import { type CodeRunner, RunnerFailure, type RunRequest, type RunResult, type RunStatus } from "./run.ts";

/** the runner isolate's JavaScript heap: Pyodide's glue, the stdlib's bytes, the file system */
const HEAP_MB = 160;
/** a run whose memory grew past the baseline by more than this gets a new isolate after it (the grown pages are never given back) */
const REBUILD_GROWTH = 64 * 1024 * 1024;
/** bytes of files a run may write (MEMFS keeps them in the isolate's JavaScript heap, HEAP_MB, and copies a file as it grows) */
const FILE_BYTES = 32 * 1024 * 1024;
/** a message (exception text) read back is cut to this */
const MAX_MESSAGE = 2000;
/** `returned`, as marshal bytes, read back at most */
const MAX_RETURNED = 256 * 1024;
/**
 * a reply of the program's side to the tests' side (a value an assert-style test's call returns),
 * as marshal bytes, at most: as large as the tests' own arguments may be (a list of 10^5 ints is
 * 500 KB; an honest `assert len(primes(10**6)) == 78498` needs it)
 */
const MAX_REPLY = 4 * 1024 * 1024;
const START_MS = 30_000;
/** `returned`, decoded, at most this many values once expanded (back-references counted in full) */
const MAX_RETURNED_NODES = 100_000;

/**
 * The trusted script run once in the runner's isolate after the interpreter started: it takes
 * the interpreter off the global, defines the run, and takes the baseline. `__gradebox_code_run`
 * is the host's one entry point: a JSON request in, a JSON result out.
 */
const HARNESS = String.raw`(() => {
"use strict";
const g = globalThis;
const boot = g.__gradebox_py_boot;
const env = g.__gradebox_py_env;
delete g.__gradebox_py_boot;
delete g.__gradebox_py_env;
const py = boot.pyodide();
const M = py._module;
const FS = py.FS;
const U8 = Uint8Array;
const jsonStringify = JSON.stringify;
const jsonParse = JSON.parse;
const reflectApply = Reflect.apply;
const bufferOf = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(M.memory), "buffer").get;
const u8set = U8.prototype.set;
const u8fill = U8.prototype.fill;
const u8subarray = U8.prototype.subarray;
const byteLengthOf = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength").get;
const memory = M.memory;
const decoder = new env.TextDecoder("utf-8", { fatal: false });
const encoder = new env.TextEncoder();
const decode = (bytes) => decoder.decode(bytes);

function destroyAll(...proxies) { for (const p of proxies) { try { if (p && typeof p.destroy === "function") p.destroy(); } catch {} } }

// The JS modules Python could import (js, pyodide_js) hand it JavaScript objects, whose state
// outlives a memory restore: gone before the baseline.
py.runPython("import sys\nfor _m in ('js', 'pyodide_js'):\n    sys.modules.pop(_m, None)\ndel _m");
try { py.unregisterJsModule("js"); } catch {}
try { py.unregisterJsModule("pyodide_js"); } catch {}
py.runPython("import random as _r\n_r.seed()\ndel _r");
// A PyProxy made during a run points into memory the next restore replaces: a finalizer that
// decrefs it later would corrupt a baseline object. Runs destroy theirs; none is finalized.
M.finalizationRegistry = { register() {}, unregister() {} };
env.seal();

// The tests' side of an assert-style test (the runner the host made with a bridge) reaches the
// program's side through the host: Python writes a request to this device, whose handler asks the
// host (which asks the program's interpreter) and keeps the reply for Python to read. Bytes only:
// no JavaScript object reaches Python. Without a bridge (the program's side) the device answers EIO.
const bridge = g.__gradebox_code_bridge;
delete g.__gradebox_code_bridge;
let reply = new U8(0);
let replyAt = 0;
const device = FS.makedev(64, 0);
FS.registerDevice(device, {
  open() {},
  close() {},
  read(stream, buffer, offset, length) {
    const n = Math.min(length, reply.length - replyAt);
    for (let i = 0; i < n; i++) buffer[offset + i] = reply[replyAt + i];
    replyAt += n;
    return n;
  },
  write(stream, buffer, offset, length) {
    if (!bridge) throw new FS.ErrnoError(29);
    let request = "";
    for (let i = 0; i < length; i += 4096) {
      const end = Math.min(length, i + 4096);
      const part = [];
      for (let k = i; k < end; k++) part.push(buffer[offset + k] & 0xff);
      request += String.fromCharCode.apply(undefined, part);
    }
    const answer = bridge.applySync(undefined, [request]);
    const text = typeof answer === "string" ? answer : "A";
    reply = new U8(text.length);
    for (let i = 0; i < text.length; i++) reply[i] = text.charCodeAt(i) & 0xff;
    replyAt = 0;
    return length;
  },
});
FS.mkdev("/dev/gradebox", 0o600, device);
const bridgeFd = FS.open("/dev/gradebox", "r+").fd;

// The run's Python, defined before the baseline (so restored before every run, untouched).
py.runPython(${"`"}
import builtins as _gb_builtins, marshal as _gb_marshal, sys as _gb_sys, gc as _gb_gc, itertools as _gb_itertools
import types as _gb_types, os as _gb_os
def _gb_describe(e, type=type, str=str):
    try:
        m = str(e)
    except BaseException:
        m = ""
    return str(type(e).__name__) + (": " + m if m else "")
def _gb_guard(f, *a, _gb_describe=_gb_describe):
    # a call the host makes into the program's objects: its exception returned, not raised (see _gb_tests)
    try:
        return (True, f(*a))
    except BaseException as e:
        return (False, _gb_describe(e))
class _gb_Stop(BaseException):
    """the host refused a request (the program's side stopped, or answered in no known form): the tests end"""
def _gb_plain_of(type=type, issubclass=issubclass, dict=dict, list=list, tuple=tuple, set=set, frozenset=frozenset, int=int, float=float, complex=complex, str=str, bytes=bytes, bool=bool):
    # A copy of v as exact plain types: what an honest program returns is often a subclass of one
    # (collections.Counter, defaultdict, OrderedDict, a namedtuple, an IntEnum), which marshal
    # refuses but the tests compare as the dict, tuple or int it is. Read through the base type's C
    # methods: what comes out is plain data whatever the subclass overrides (checked again by the host).
    def plain(v, depth=0):
        t = type(v)
        if v is None or t is bool or t is int or t is float or t is complex or t is str or t is bytes:
            return v
        if depth > 100:
            raise ValueError("nested too deeply")
        if issubclass(t, int):
            return int.__int__(v)
        if issubclass(t, float):
            return float.__float__(v)
        if issubclass(t, complex):
            return complex(complex.real.__get__(v), complex.imag.__get__(v))
        if issubclass(t, str):
            return str.__str__(v)
        if issubclass(t, bytes):
            return bytes.__bytes__(v)
        if issubclass(t, dict):
            return {plain(k, depth + 1): plain(x, depth + 1) for k, x in dict.items(v)}
        if issubclass(t, tuple):
            return tuple([plain(x, depth + 1) for x in tuple.__iter__(v)])
        if issubclass(t, list):
            return [plain(x, depth + 1) for x in list.__iter__(v)]
        if issubclass(t, frozenset):
            return frozenset([plain(x, depth + 1) for x in frozenset.__iter__(v)])
        if issubclass(t, set):
            return {plain(x, depth + 1) for x in set.__iter__(v)}
        raise TypeError("not plain data")
    return plain
_gb_plain = _gb_plain_of()
def _gb_dumps(v, dumps=_gb_marshal.dumps, plain=_gb_plain):
    # marshal bytes of v, or of its plain copy (see _gb_plain)
    try:
        return dumps(v, 4)
    except (ValueError, TypeError):
        return dumps(plain(v), 4)
_gb_held = []
_gb_HANDLE = "\\x00gradebox:handle"
def _gb_keep(v, held=_gb_held, type=type, str=str):
    # an object of the program's that is no plain data (a Node, a Pair): it stays here; the tests'
    # side gets a handle it can only pass back (the program's __eq__ or __bool__ never decide a test)
    held.append(v)
    return b"H" + str(len(held) - 1).encode() + b":" + str(type(v).__name__)[:100].encode("utf-8", "replace")
def _gb_walk(x, swap, KEEP=object(), type=type, tuple=tuple, list=list, dict=dict):
    # x rebuilt through its tuples, lists and dicts, with swap(v) for each part v it takes (swap
    # returns KEEP, its second argument, for the parts it leaves): both sides of a handle's crossing
    def go(x):
        y = swap(x, KEEP)
        if y is not KEEP:
            return y
        t = type(x)
        if t is tuple:
            return tuple(go(i) for i in x)
        if t is list:
            return [go(i) for i in x]
        if t is dict:
            return {k: go(v) for k, v in x.items()}
        return x
    return go(x)
def _gb_unwrap(x, held=_gb_held, HANDLE=_gb_HANDLE, walk=_gb_walk, type=type, len=len, tuple=tuple):
    # the tests' arguments: their handles, (HANDLE, i), back into the program's objects
    def swap(v, keep):
        if type(v) is tuple and len(v) == 2 and type(v[0]) is str and v[0] == HANDLE and type(v[1]) is int:
            return held[v[1]]
        return keep
    return walk(x, swap)
def _gb_fit(b, len=len):
    # a reply past the bound is said in a byte, before JavaScript copies it out
    return b if len(b) <= ${MAX_REPLY} + 1 else b"L"
def _gb_lookup(ns, name, dumps=_gb_dumps, callable=callable, type=type, ModuleType=_gb_types.ModuleType, keep=_gb_keep, fit=_gb_fit):
    # The program's side: what one of its names is, for the tests' side (another interpreter).
    if name not in ns:
        return b"N"
    v = ns[name]
    if type(v) is ModuleType:
        return b"M" + str(v.__name__).encode("utf-8", "replace")
    if callable(v):
        return b"F"
    try:
        return fit(b"D" + dumps(v))
    except (ValueError, TypeError, RecursionError):
        return keep(v)
def _gb_invoke(ns, name, payload, handles, loads=_gb_marshal.loads, dumps=_gb_dumps, type=type, str=str, keep=_gb_keep, unwrap=_gb_unwrap, fit=_gb_fit):
    # The program's side of a call the tests make: its function, the tests' arguments (plain
    # copies), its value back as marshal bytes. Nothing of the tests is in this interpreter.
    try:
        args, kwargs = loads(payload)
        if handles:
            args, kwargs = unwrap(args), unwrap(kwargs)
        v = ns[name](*args, **kwargs)
        try:
            return fit(b"R" + dumps(v))
        except (ValueError, TypeError, RecursionError):
            pass
        if hasattr(type(v), "__next__"):
            # a generator, map, filter…: its items (the tests' side gets an iterator over them)
            return fit(b"I" + dumps(list(v)))
        return keep(v)
    except BaseException as e:
        base = BaseException
        for c in type(e).__mro__:
            if c.__module__ == "builtins":
                base = c
                break
        try:
            message = str(e)[:2000]
        except BaseException:
            message = ""
        return b"E" + dumps((str(base.__name__), message))
class _gb_Handle:
    """An object of the program's, in the tests' interpreter: passed back to the program's functions, nothing else."""
    __slots__ = ("_gb_i", "_gb_what")
    def __init__(self, i, what):
        self._gb_i = i
        self._gb_what = what
    def _gb_refuse(self, *a, **k):
        raise TypeError("the program's " + self._gb_what + " object reaches the tests as a handle: it can be passed back to the program's functions, not read, compared or tested here (tests compare plain data)")
    __bool__ = __len__ = __iter__ = __getitem__ = __contains__ = __call__ = __float__ = __int__ = __index__ = _gb_refuse
    def __getattr__(self, name):
        self._gb_refuse()
    def __repr__(self):
        return "<the program's " + self._gb_what + ">"
def _gb_tests(source, before, fd, _gb_describe=_gb_describe, base=dict(vars(_gb_builtins)), os=_gb_os, loads=_gb_marshal.loads, dumps=_gb_dumps, Stop=_gb_Stop, Handle=_gb_Handle, HANDLE=_gb_HANDLE, walk=_gb_walk, instructions=__import__("dis").get_instructions):
    # The tests' side: they run in this interpreter, which never runs the program: every name of
    # the program they use is a proxy that asks the program's interpreter through the host (the
    # device at fd), with plain copies both ways. A program cannot read the tests' frames or
    # constants, nor patch what they import: none of it is in its interpreter.
    def ask(message):
        os.write(fd, message)
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    def failed_with(body):
        tname, message = loads(body)
        t = base.get(tname)
        # (StopIteration out of a call would end the tests' map() or zip() early, as if
        # every item passed: a RuntimeError, as PEP 479 makes it out of a generator)
        if isinstance(t, type) and issubclass(t, Exception) and not issubclass(t, (StopIteration, StopAsyncIteration)):
            raise t(message)
        raise RuntimeError(tname + (": " + message if message else ""))
    handed = [0]
    def handle(body):
        i, _, what = body.partition(b":")
        handed[0] += 1
        return Handle(int(i), what.decode("utf-8", "replace"))
    def wrap(x):
        # handles among the arguments go back as (HANDLE, i)
        return walk(x, lambda v, keep: (HANDLE, object.__getattribute__(v, "_gb_i")) if type(v) is Handle else keep)
    def proxy(name):
        def call(*args, **kwargs):
            if handed[0]:
                args, kwargs = wrap(args), wrap(kwargs)
            try:
                payload = dumps((args, kwargs))
            except (ValueError, TypeError, RecursionError):
                raise TypeError("the tests passed " + name + " an argument that is not plain data (None, bool, int, float, complex, str, bytes, tuple, list, dict, set): programs are called with copies") from None
            reply = ask((b"K" if handed[0] else b"C") + name.encode("utf-8") + b"\\0" + payload)
            kind, body = reply[:1], reply[1:]
            if kind == b"R":
                return loads(body)
            if kind == b"H":
                return handle(body)
            if kind == b"I":
                return iter(loads(body))
            if kind == b"E":
                failed_with(body)
            raise Stop()
        call.__name__ = call.__qualname__ = name
        return call
    # every exception ends here, in Python: one that reached JavaScript would have Pyodide swap
    # stderr to format it (a file-system change, so a new isolate for the next run)
    try:
        ns = {"__name__": "__main__", "__builtins__": dict(base)}
        if before is not None:
            exec(compile(before, "<setup>", "exec", dont_inherit=True), ns)
        code = compile(source, "<tests>", "exec", dont_inherit=True)
        # the names the tests read as globals (not attributes: co_names holds both)
        names = set()
        todo = [code]
        while todo:
            c = todo.pop()
            names.update(i.argval for i in instructions(c) if i.opname in ("LOAD_NAME", "LOAD_GLOBAL", "LOAD_FROM_DICT_OR_GLOBALS"))
            todo.extend(k for k in c.co_consts if type(k) is type(code))
        # the tests see the builtins, never a program's top-level abs, len… (as MBPP's rows assume)
        for name in sorted(names - set(base) - set(ns)):
            reply = ask(b"G" + name.encode("utf-8") + b"\\0")
            kind, body = reply[:1], reply[1:]
            if kind == b"F":
                ns[name] = proxy(name)
            elif kind == b"D":
                ns[name] = loads(body)
            elif kind == b"H":
                ns[name] = handle(body)
            elif kind == b"E":
                failed_with(body)
            elif kind == b"M":
                try:
                    ns[name] = __import__(body.decode("utf-8"))
                except Exception:
                    pass
            elif kind != b"N":
                raise Stop()
        exec(code, ns)
    except Stop:
        return "stopped"
    except BaseException as e:
        return _gb_describe(e)
    return ""
def _gb_ns(_gb_builtins=_gb_builtins):
    return {"__name__": "__main__", "__builtins__": _gb_builtins}
def _gb_atend(sys=_gb_sys, run_exitfuncs=__import__("atexit")._run_exitfuncs):
    # what CPython does as a program ends: atexit's handlers, then the streams flushed (a
    # program's own sys.stdout, PyRival's FastIO, writes through to fd 1 on flush)
    try:
        run_exitfuncs()
    except BaseException:
        pass
    for name in ("stdout", "stderr"):
        try:
            getattr(sys, name).flush()
        except BaseException:
            pass
def _gb_program(source, ns):
    try:
        code = compile(source, "<program>", "exec", dont_inherit=True)
    except BaseException as e:
        return ("syntax", type(e).__name__ + ": " + str(e), 0)
    try:
        exec(code, ns)
    except SystemExit as e:
        c = e.code
        if c is None: return ("exit", "", 0)
        if isinstance(c, int) and not isinstance(c, bool): return ("exit", "", c)
        return ("exit", str(c), 1)
    except BaseException as e:
        return ("error", type(e).__name__ + ": " + str(e), 1)
    return ("ok", "", 0)
${"`"});
const pyGlobals = py.globals;
const nsOf = pyGlobals.get("_gb_ns");
const lookup = pyGlobals.get("_gb_lookup");
const invoke = pyGlobals.get("_gb_invoke");
const runTests = pyGlobals.get("_gb_tests");
const guard = pyGlobals.get("_gb_guard");
const runProgram = pyGlobals.get("_gb_program");
const atEnd = pyGlobals.get("_gb_atend");
const cGetattr = pyGlobals.get("_gb_builtins").getattr;
const cDumps = pyGlobals.get("_gb_marshal").dumps;
const cLoads = pyGlobals.get("_gb_marshal").loads;
const cNext = pyGlobals.get("_gb_builtins").next;
const cStarmap = pyGlobals.get("_gb_itertools").starmap;
const cEncode = pyGlobals.get("_gb_builtins").str.encode;
const cGcCollect = pyGlobals.get("_gb_gc").collect;
const stdoutObj = pyGlobals.get("_gb_sys").__stdout__;
const stderrObj = pyGlobals.get("_gb_sys").__stderr__;
const flushOut = stdoutObj.flush;
const flushErr = stderrObj.flush;
py.runPython("del _gb_builtins, _gb_marshal, _gb_sys, _gb_gc, _gb_itertools, _gb_ns, _gb_program, _gb_lookup, _gb_invoke, _gb_tests, _gb_Stop, _gb_describe, _gb_guard, _gb_atend, _gb_held, _gb_HANDLE, _gb_keep, _gb_unwrap, _gb_walk, _gb_Handle, _gb_fit, _gb_types, _gb_os, _gb_plain_of, _gb_plain, _gb_dumps");

// the name blocked builtin modules are given (allocated at the first)
let gone = 0;
// No way from Python to JavaScript (nor to raw memory): a JsProxy reaches Function, hence the
// isolate's globals and Pyodide's API (its FS, its module), whose state no memory restore puts
// back; ctypes rewrites any object's bytes. Pyodide's Python layer goes (sys.modules, the import
// hook, every PyProxy the API held of it, so nothing keeps it alive), the two builtin modules are
// taken out of the interpreter's table of builtins (an import, or a re-import after a program's
// own del sys.modules[...], finds nothing), and an audit proves no JsProxy and no function of
// _pyodide_core is left for gc.get_objects() to find. The runner itself needs none of it: it
// calls Python through PyProxies held here, in JavaScript.
py.runPython(${"`"}
def _gb_purge():
    import sys
    layer = ("pyodide", "_pyodide", "pyodide_js", "js")
    for k in list(sys.modules):
        if k.split(".")[0] in layer or k in ("_pyodide_core", "_ctypes", "ctypes"):
            del sys.modules[k]
    sys.meta_path[:] = [f for f in sys.meta_path if str(getattr(f if isinstance(f, type) else type(f), "__module__", "")).split(".")[0] not in layer]
    sys.path_importer_cache.clear()
    # Pyodide's time.sleep needs its layer (JSPI): a sleep that waits on the run's own clock, so
    # the time limit ends it as it ends any loop
    import time
    def sleep(secs, _monotonic=time.monotonic):
        if secs < 0:
            raise ValueError("sleep length must be non-negative")
        end = _monotonic() + secs
        while _monotonic() < end:
            pass
    time.sleep = sleep
    # and its asyncio loop (the browser's): the standard library's own
    if "asyncio" in sys.modules:
        try:
            import asyncio, asyncio.runners
            asyncio.run = asyncio.runners.run
            asyncio.set_event_loop_policy(None)
            asyncio.events._set_running_loop(None)
        except Exception:
            pass
    # what still holds the layer (C statics, the interpreter's copy of a builtin module's dict)
    # keeps only emptied namespaces: no function, class or JsProxy is reachable through them
    import gc
    def ours(n):
        return isinstance(n, str) and (n.split(".")[0] in layer or n in ("_pyodide_core", "_ctypes", "ctypes"))
    for o in gc.get_objects():
        if type(o) is dict and ours(o.get("__name__")):
            o.clear()
        elif type(o).__name__ in ("JsFinder", "JsLoader"):
            o.__dict__.clear()
    gc.collect()
def _gb_audit():
    import gc
    gc.collect()
    bad = []
    for o in gc.get_objects():
        t = type(o)
        if type(t).__name__ == "_JsProxyMetaClass" or (t.__name__ in ("JsFinder", "JsLoader") and vars(o)):
            bad.append(t.__name__)
        elif getattr(o, "__module__", None) == "_pyodide_core" and not isinstance(o, type):
            bad.append(getattr(o, "__name__", "?"))
        else:
            # a JsProxy is not tracked by the collector: found through what refers to it
            for r in gc.get_referents(o):
                if type(type(r)).__name__ == "_JsProxyMetaClass":
                    bad.append("a JsProxy held by " + t.__name__)
                    break
        if t.__name__ == "module" and str(getattr(o, "__name__", "")).split(".")[0] in ("pyodide", "_pyodide", "_pyodide_core", "_ctypes", "ctypes", "js", "pyodide_js"):
            bad.append(o.__name__)
    return ",".join(bad[:20])
${"`"});
{
  const purge = pyGlobals.get("_gb_purge");
  const audit = pyGlobals.get("_gb_audit");
  pyGlobals.delete("_gb_purge");
  pyGlobals.delete("_gb_audit");
  purge();
  destroyAll(purge);
  const api = M.API ?? py._api;
  if (api) {
    for (const key of Object.keys(api)) {
      if (key === "globals") continue;
      let v;
      try { v = api[key]; } catch { continue; }
      try { if (v && api.isPyProxy && api.isPyProxy(v) && v !== pyGlobals) v.destroy(); } catch {}
    }
  }
  blockBuiltin("_pyodide_core");
  blockBuiltin("_ctypes");
  // CPython's own test modules: raw memory reads and writes, refcounts, frame evaluators
  for (const name of ["_testcapi", "_testinternalcapi", "_testlimitedcapi", "_testbuffer", "_testclinic", "_testclinic_limited", "_xxtestfuzz", "_remote_debugging"]) blockBuiltin(name);
  const left = audit();
  destroyAll(audit);
  if (left) throw new Error("the runner's Python can still reach JavaScript: " + left);
}

// Points the interpreter's table of builtin modules (the inittab and its runtime copy) away from
// this name: to a name no Python str can equal (non-ASCII bytes never match an import's name).
function blockBuiltin(name) {
  const heap = new U8(reflectApply(bufferOf, memory, []));
  const u32 = new Uint32Array(heap.buffer, 0, heap.length >>> 2);
  const needle = encoder.encode(name + "\0");
  const isName = (ptr) => {
    // (a neighbour blocked before: its name is the unmatchable one)
    if (ptr === gone && gone !== 0) return true;
    if (ptr <= 0 || ptr >= heap.length - 1) return false;
    for (let k = ptr; k < ptr + 64 && k < heap.length; k++) { const c = heap[k]; if (c === 0) return k > ptr; if (c < 33 || c > 126) return false; }
    return false;
  };
  // (a name may be the tail of a longer string the linker merged it into: no NUL before it)
  const strings = [];
  outer: for (let i = 1; i + needle.length <= heap.length; i++) {
    if (heap[i] !== needle[0]) continue;
    for (let k = 1; k < needle.length; k++) if (heap[i + k] !== needle[k]) continue outer;
    strings.push(i);
  }
  if (gone === 0) {
    gone = M._malloc(4);
    heap[gone] = 0xff; heap[gone + 1] = 0xfe; heap[gone + 2] = 0;
  }
  let patched = 0;
  for (const s of strings) {
    for (let p = 0; p + 3 < u32.length; p++) {
      if (u32[p] !== s) continue;
      // an inittab entry {name, initfunc}: a neighbour entry's name is a name too (or the table's end)
      const prev = p >= 2 ? u32[p - 2] : 0;
      const next = u32[p + 2];
      if (u32[p + 1] === 0 || !(isName(next) || (next === 0 && u32[p + 3] === 0)) || !(p < 2 || isName(prev) || prev === 0)) continue;
      u32[p] = gone;
      patched++;
    }
  }
  if (patched === 0) throw new Error("the builtin module " + name + " was not found in the interpreter's table");
}

// fd-level capture: what reaches the interpreter's stdout/stderr devices, bounded
let limit = 0;
let over = false;
const out = { chunks: [], bytes: 0 };
const err = { chunks: [], bytes: 0 };
function sink(target) {
  return {
    write(buffer) {
      const n = buffer.length;
      const room = limit - target.bytes;
      if (room > 0) {
        const take = n < room ? n : room;
        target.chunks.push(new U8(reflectApply(u8subarray, buffer, [0, take])));
        target.bytes += take;
      }
      if (n > room) {
        over = true;
        // EIO: print raises OSError, which ends a program that does not catch it (one that does meets its time limit)
        throw new FS.ErrnoError(29);
      }
      return n;
    },
    isatty: false,
  };
}
py.setStdout(sink(out));
py.setStderr(sink(err));
let stdin = new U8(0);
let stdinAt = 0;
py.setStdin({
  read(buffer) {
    const left = stdin.length - stdinAt;
    const n = left < buffer.length ? left : buffer.length;
    reflectApply(u8set, buffer, [reflectApply(u8subarray, stdin, [stdinAt, stdinAt + n])]);
    stdinAt += n;
    return n;
  },
  isatty: false,
});

// The file system is JavaScript: any change marks the runner dirty (it is then replaced).
let fsDirty = false;
// A file's bytes are JavaScript memory, outside the interpreter's: they count against the run's
// memory with it (a file of 100 MB passed a limit of 32), and at most FILE_BYTES (a file growing
// is copied whole: 64 MB of files filled the isolate's heap, "Array buffer allocation failed"),
// else the write fails (ENOSPC) and the run's verdict is its memory limit.
let fileBytes = 0;
let fsFull = false;
function spendFile(n) {
  n = Number(n);
  if (!(n > 0)) return;
  const now = reflectApply(byteLengthOf, reflectApply(bufferOf, memory, []), []);
  if (fileBytes + n > ${FILE_BYTES} || now + fileBytes + n > growTo) { fsFull = true; throw new FS.ErrnoError(28); }
  fileBytes += n;
}
const isFile = (mode) => (mode & 0o170000) === 0o100000;
// writes to a device (the captured stdout and stderr) change no file
for (const name of ["write", "ftruncate", "mmap", "msync"]) {
  const f = FS[name];
  if (typeof f !== "function") continue;
  FS[name] = function (stream, ...args) {
    let file = true;
    try { file = !stream || !stream.node || isFile(stream.node.mode); } catch {}
    if (file) {
      fsDirty = true;
      // write(stream, buffer, offset, length, …), ftruncate(fd, length)
      if (name === "write") spendFile(args[2]);
      else if (name === "ftruncate") spendFile(args[0]);
    }
    return reflectApply(f, this, [stream, ...args]);
  };
}
for (const name of ["mknod", "mkdir", "symlink", "rename", "rmdir", "unlink", "chmod", "lchmod", "fchmod", "chown",
  "lchown", "fchown", "truncate", "utime", "mount", "unmount", "createDataFile", "writeFile", "create", "chdir"]) {
  const f = FS[name];
  if (typeof f !== "function") continue;
  FS[name] = function (...args) {
    fsDirty = true;
    if (name === "truncate") spendFile(args[1]);
    return reflectApply(f, this, args);
  };
}
// closing a base stream (os.close(0), the close inside os.dup2) would leave it closed for every
// later run: the restore cannot reopen it, so the runner is replaced instead
let baseStreamSet;
for (const name of ["close", "closeStream"]) {
  const f = FS[name];
  if (typeof f !== "function") continue;
  FS[name] = function (stream, ...args) {
    try {
      const s = typeof stream === "number" ? FS.streams[stream] : stream;
      if (baseStreamSet && (baseStreamSet.has(s) || (typeof stream === "number" && stream <= 2))) fsDirty = true;
    } catch { fsDirty = true; }
    return reflectApply(f, this, [stream, ...args]);
  };
}
const fsOpen = FS.open;
FS.open = function (path, flags, ...rest) {
  // O_CREAT | O_TRUNC: an open that may make or empty a file
  if (typeof flags === "string" ? flags !== "r" : (flags & (0x40 | 0x200)) !== 0) fsDirty = true;
  return reflectApply(fsOpen, this, [path, flags, ...rest]);
};

// the baseline
cGcCollect();
const base = (() => {
  const buf = reflectApply(bufferOf, memory, []);
  const copy = new U8(reflectApply(byteLengthOf, buf, []));
  reflectApply(u8set, copy, [new U8(buf)]);
  return copy;
})();
const baseSp = M.___stack_pointer.value;
const baseCwd = FS.cwd();
const baseStreams = FS.streams.slice();
baseStreamSet = new Set(baseStreams.filter((x) => x));
// what fcntl and seeks change in place (flags, position): put back field by field
const baseStreamFields = baseStreams.map((x) => (x ? { fd: x.fd, shared: x.shared ? { ...x.shared } : undefined } : undefined));
const hiwire = [];
for (let i = 0; ; i++) {
  let v;
  try { v = M.__hiwire_get(i); } catch { break; }
  hiwire.push(v);
  if (i > 1_000_000) break;
}
let failed = "";

function restore() {
  const buf = reflectApply(bufferOf, memory, []);
  const view = new U8(buf);
  reflectApply(u8set, view, [base]);
  const length = reflectApply(byteLengthOf, buf, []);
  if (length > base.length) reflectApply(u8fill, view, [0, base.length, length]);
  M.___stack_pointer.value = baseSp;
  for (let i = 0; i < hiwire.length; i++) M.__hiwire_set(i, hiwire[i]);
  FS.currentPath = baseCwd;
  const streams = FS.streams;
  for (let i = streams.length - 1; i >= 0; i--) if (streams[i] !== baseStreams[i]) streams[i] = baseStreams[i];
  streams.length = baseStreams.length;
  for (let i = 0; i < baseStreams.length; i++) {
    const x = baseStreams[i];
    const f = baseStreamFields[i];
    if (!x || !f) continue;
    try { x.fd = f.fd; if (f.shared && x.shared) Object.assign(x.shared, f.shared); } catch { fsDirty = true; }
  }
}

const fromCharCode = String.fromCharCode;
function decode_latin1(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 4096) s += reflectApply(fromCharCode, undefined, Array.from(reflectApply(u8subarray, bytes, [i, i + 4096])));
  return s;
}

function joined(target) {
  const all = new U8(target.bytes);
  let at = 0;
  for (const c of target.chunks) { reflectApply(u8set, all, [c, at]); at += c.length; }
  return decode(all);
}

function pyMessage(e) {
  try {
    const t = e && e.type;
    const m = e && e.message;
    if (typeof m === "string") {
      const lines = m.trimEnd().split("\n");
      return lines[lines.length - 1].slice(0, ${MAX_MESSAGE});
    }
    return typeof t === "string" ? t : "the interpreter failed";
  } catch { return "the interpreter failed"; }
}


// the program's namespace while it serves the tests' calls (a run with serve), until "end"
let serving;

// the run's end: what it wrote, whether the interpreter or the file system needs a new isolate;
// a program's run (programEnded) first ends as CPython ends it (atexit, its streams flushed)
function finish(result, ns, programEnded) {
  if (programEnded && !failed) {
    try { atEnd(); } catch (e) { exitedHow(e, result); }
  }
  try { flushOut(); } catch {}
  try { flushErr(); } catch {}
  destroyAll(ns);
  if (over) result.status = "output_limit";
  else if (fsFull) {
    result.status = "memory_limit"; result.exitCode = 1; result.completed = false;
    result.message = "memory limit: the files the program wrote went past the run's memory";
  }
  result.stdout = joined(out);
  result.stderr = joined(err);
  const grown = reflectApply(byteLengthOf, reflectApply(bufferOf, memory, []), []) - base.length;
  result.grown = grown;
  result.fsDirty = fsDirty;
  // an interpreter that stopped (os._exit, a fatal error) runs nothing more: the host replaces the isolate
  result.dead = failed !== "";
  return jsonStringify(result);
}

// The run's memory limit: what the interpreter's memory may grow to past the baseline
// (memoryMb), enforced where Emscripten grows it: a refused grow is a failed malloc, Python's
// MemoryError. (The worker's binary caps it too: its maximum is the baseline + the worker's limit.)
let growTo = Infinity;
const wasmGrow = memory.grow;
Object.defineProperty(memory, "grow", {
  value(pages) {
    const now = reflectApply(byteLengthOf, reflectApply(bufferOf, memory, []), []);
    if (now + pages * 65536 > growTo) throw new RangeError("memory limit");
    return reflectApply(wasmGrow, memory, [pages]);
  },
});

// The interpreter stopped under the program: os._exit(n) is an exit with that code (what it
// wrote is kept, as a process's), anything else a runtime error. Either way it runs nothing
// more: the host replaces the isolate.
function exitedHow(e, result) {
  failed = "the interpreter stopped: " + pyMessage(e);
  let code;
  try { const m = /^Program terminated with exit\((-?\d+)\)$/.exec(String(e && e.message)); if (m) code = Number(m[1]); } catch {}
  if (code === undefined) {
    result.status = "runtime_error"; result.exitCode = 1; result.message = pyMessage(e);
  } else {
    result.exitCode = code;
    result.exited = true;
    if (code !== 0) { result.status = "runtime_error"; result.message = "os._exit(" + code + ")"; }
  }
}

// Code of the tests' own (MBPP's imports or setup) run in the program's namespace: "ok", or why it failed.
function testsCode(source, ns, result) {
  try {
    const s = runProgram(source, ns);
    const kind = s.get(0);
    const message = s.get(1);
    destroyAll(s);
    return kind === "ok" ? "ok" : "the tests' setup code failed: " + String(message || kind);
  } catch (e) {
    exitedHow(e, result);
    return "the tests' setup code stopped the interpreter";
  }
}

function start(req) {
  if (serving) { destroyAll(serving); serving = undefined; }
  growTo = typeof req.memoryMb === "number" ? base.length + req.memoryMb * 1048576 : Infinity;
  restore();
  limit = req.outputBytes;
  over = false;
  out.chunks = []; out.bytes = 0; err.chunks = []; err.bytes = 0;
  stdin = encoder.encode(req.stdin ?? "");
  stdinAt = 0;
  fsDirty = false;
  fileBytes = 0;
  fsFull = false;
}

g.__gradebox_code_run = (requestJson) => {
  const req = jsonParse(requestJson);
  if (failed) return jsonStringify({ failed });
  // a run stopped by its time limit never reported the files it wrote: the host replaces this isolate;
  // so does one whose memory an earlier run grew past this run's limit (grown pages are never given back)
  if (fsDirty) return jsonStringify({ dirty: true });
  if (typeof req.memoryMb === "number" && reflectApply(byteLengthOf, reflectApply(bufferOf, memory, []), []) - base.length > req.memoryMb * 1048576)
    return jsonStringify({ dirty: true });
  start(req);
  const result = { status: "ok", exitCode: 0, completed: false };
  if (typeof req.tests === "string") {
    // the tests' side: this interpreter runs only the tests, asking the program's through the bridge
    try {
      const error = runTests(req.tests, typeof req.before === "string" ? req.before : undefined, bridgeFd);
      if (error === "") result.completed = true;
      else { result.status = "runtime_error"; result.exitCode = 1; result.message = String(error).slice(0, ${MAX_MESSAGE}); }
    } catch (e) {
      failed = "the interpreter stopped: " + pyMessage(e);
      result.status = "runtime_error"; result.exitCode = 1; result.message = pyMessage(e);
    }
    return finish(result, undefined);
  }
  const ns = nsOf();
  let step;
  let setup = "ok";
  // the tests' imports (trusted data) in the namespace the program then runs in
  if (typeof req.before === "string") setup = testsCode(req.before, ns, result);
  if (setup !== "ok") {
    result.status = "runtime_error"; result.exitCode = 1; result.message = setup.slice(0, ${MAX_MESSAGE});
  } else try {
    step = runProgram(req.program, ns);
  } catch (e) {
    // what escaped the program's own try: the interpreter itself (os._exit, a fatal error)
    exitedHow(e, result);
  }
  if (step) {
    const kind = step.get(0);
    const message = step.get(1);
    const code = step.get(2);
    destroyAll(step);
    if (kind === "syntax") { result.status = "syntax_error"; result.exitCode = 1; result.message = String(message).slice(0, ${MAX_MESSAGE}); }
    else if (kind === "error") { result.status = "runtime_error"; result.exitCode = 1; result.message = String(message).slice(0, ${MAX_MESSAGE}); }
    else if (kind === "exit") {
      const c = typeof code === "number" ? code : 1;
      result.exitCode = c;
      if (c !== 0) { result.status = "runtime_error"; result.message = message ? String(message).slice(0, ${MAX_MESSAGE}) : "SystemExit: " + c; }
      result.exited = true;
    }
    if (kind === "ok" && !failed && !over) {
      if (req.serve === true && typeof req.setup === "string") {
        // the tests' setup, after the program, in its namespace (MBPP's test_setup_code builds its objects)
        const made = testsCode(req.setup, ns, result);
        if (made !== "ok") {
          result.status = "runtime_error"; result.exitCode = 1; result.message = made.slice(0, ${MAX_MESSAGE});
          return finish(result, ns, true);
        }
      }
      if (req.serve === true) {
        // the program ran: it now answers the tests' calls (__gradebox_code_call) until "end"
        serving = ns;
        // the standard input the program left: the tests read on from there (verl's assert_case rows)
        return jsonStringify({ serving: true, stdin: decode(reflectApply(u8subarray, stdin, [stdinAt])) });
      }
      if (req.call) {
        let value;
        // each step through _gb_guard: the program's exception comes back as a value (see _gb_tests)
        const step = (f, ...args) => {
          const r = guard(f, ...args);
          const ok = r.get(0);
          const v = r.get(1);
          destroyAll(r);
          if (!ok) { destroyAll(v); throw { message: String(v) }; }
          return v;
        };
        try {
          const parts = String(req.call.name).split(".");
          let f = ns.get(parts[0]);
          if (f === undefined) throw { message: "NameError: name '" + parts[0] + "' is not defined" };
          if (parts.length === 2) {
            // Class.method: the method of an instance made without arguments (LeetCode's Solution().f)
            const instance = step(cNext, cStarmap(f, cLoads(cEncode(req.noArgs, "latin-1"))));
            try { f = step(cGetattr, instance, parts[1]); } finally { destroyAll(instance); }
          }
          try { value = step(cNext, cStarmap(f, cLoads(cEncode(req.args, "latin-1")))); } finally { destroyAll(f); }
          result.completed = true;
        } catch (e) {
          result.status = "runtime_error"; result.exitCode = 1;
          // an Error is the interpreter's own failure (os._exit, a fatal error): the host replaces it
          result.message = e instanceof Error ? pyMessage(e) : String(e.message).slice(0, ${MAX_MESSAGE});
          if (e instanceof Error) failed = "the interpreter stopped: " + pyMessage(e);
        }
        if (result.completed) {
          if (typeof value === "number" && !Number.isFinite(value)) {
            // JSON would make NaN null: said apart, so it equals nothing a test expects
            result.nonFinite = value !== value ? "nan" : value > 0 ? "inf" : "-inf";
          } else if (value === undefined || value === null || typeof value !== "object") {
            result.primitive = typeof value === "bigint" ? String(value) : value === undefined ? null : value;
            result.big = typeof value === "bigint";
          } else {
            let bytes;
            const dumped = guard(cDumps, value, 4);
            try { if (dumped.get(0)) { const b = dumped.get(1); bytes = b.toJs(); destroyAll(b); } } catch { bytes = undefined; }
            destroyAll(dumped);
            destroyAll(value);
            if (bytes instanceof U8 && bytes.length <= ${MAX_RETURNED}) result.marshal = decode_latin1(bytes);
            else result.returnedOpaque = true;
          }
        }
      }
    }
  }
  return finish(result, ns, step !== undefined && result.status !== "syntax_error");
};

// The program's side of the tests' calls: op "G" (what a name is), "C" (call it with marshal
// arguments), "K" (the same, its arguments holding handles), "end" (the run's result, as
// __gradebox_code_run's). Answers are latin-1 text:
// G's and C's the reply bytes (see _gb_lookup, _gb_invoke), "A" when the interpreter cannot answer.
g.__gradebox_code_call = (op, name, payload) => {
  if (op === "end") {
    const ns = serving;
    serving = undefined;
    const result = { status: "ok", exitCode: 0, completed: false };
    return finish(result, ns, true);
  }
  if (!serving || failed) return "A";
  let answer;
  try {
    answer = op === "G" ? lookup(serving, name) : invoke(serving, name, cEncode(payload, "latin-1"), op === "K");
  } catch (e) {
    // what escaped _gb_invoke's own try: the interpreter itself (os._exit, a fatal error)
    failed = "the interpreter stopped: " + pyMessage(e);
    return "A";
  }
  let bytes;
  try { bytes = answer.toJs(); } catch { bytes = undefined; }
  destroyAll(answer);
  if (!(bytes instanceof U8)) return "A";
  // a reply past the bound is said in a byte ("L"), not copied out to the host first
  return bytes.length > ${MAX_REPLY} ? "L" : decode_latin1(bytes);
};
})();`;

export interface PythonRunnerStats {
  /** isolates started from the snapshot (the first, and each replacement) */
  isolates: number;
  runs: number;
  /** isolates kept after a time limit (a canary run answered right) */
  kept: number;
}

/** what the host answers the tests' side when the program's side cannot answer (stopped, not plain data, …): the tests end */
const ABORT = "A";
/** the program's side's end (its output read, its namespace let go) when the tests used the whole budget */
const END_GRACE_MS = 100;
/** the tests' arguments to one call of the program, as marshal bytes, at most */
const MAX_ARGUMENTS = MAX_REPLY;
/** a name the tests ask the program's side about */
const NAME = /^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]{0,199}$/u;

/**
 * One Python runner: an isolate restored to its baseline before every run; replaced when a run
 * left it unfit. An assert-style test (a request with `after`) runs in two of them: the program
 * in this one, the tests in its peer (the "tests" role), which never runs the program and reaches
 * it only through the host, by name and with plain copies (marshal bytes checked here both ways).
 * So the program cannot read the tests' frames or constants, nor patch what they import.
 */
export class PythonRunner implements CodeRunner {
  private isolate: ivm.Isolate | undefined;
  private entry: ivm.Reference | undefined;
  private callEntry: ivm.Reference | undefined;
  /** the tests' side of this runner's assert-style tests (made at the first) */
  private peer: PythonRunner | undefined;
  /** while the tests' side runs: how the host answers its requests */
  private bridgeTo: ((message: string) => string) | undefined;
  readonly stats: PythonRunnerStats = { isolates: 0, runs: 0, kept: 0 };

  constructor(
    private readonly template: PythonTemplate,
    private readonly role: "program" | "tests" = "program",
  ) {}

  /** the isolate is up (a run now costs a restore, not a start) */
  get started(): boolean {
    return this.entry !== undefined && this.isolate !== undefined && !this.isolate.isDisposed;
  }

  /** up for a run, and (tests) for an assert-style test, whose tests run in the peer */
  startedFor(tests = false): boolean {
    return this.started && (!tests || this.peer?.started === true);
  }

  /** the tests' side's counts (assert-style tests), once it exists */
  get testsStats(): PythonRunnerStats | undefined {
    return this.peer?.stats;
  }

  /** isolates this runner holds up (its own, and its peer's) */
  get isolateCount(): number {
    return (this.started ? 1 : 0) + (this.peer?.started ? 1 : 0);
  }

  /** Starts the isolate(s) now (the worker does, outside any watched call: a start grows the process by ~100 MB). */
  warm(tests = false): void {
    if (!this.started) this.start();
    if (tests) {
      this.peer ??= new PythonRunner(this.template, "tests");
      this.peer.warm();
    }
  }

  private start(): ivm.Reference {
    const t = this.template;
    const isolate = new ivm.Isolate({ memoryLimit: HEAP_MB });
    try {
      const context = isolate.createContextSync();
      startInterpreter(isolate, context, {
        module: t.module,
        stdlib: t.stdlib,
        lock: t.lock,
        files: t.files,
        snapshot: t.snapshot,
        bootCache: t.bootCache,
        timeoutMs: START_MS,
      });
      if (this.role === "tests") {
        context.global.setSync("__gradebox_code_bridge", new ivm.Reference((message: unknown) => this.answer(message)));
      }
      isolate.compileScriptSync(HARNESS, { filename: "gradebox:code-harness" }).runSync(context, { timeout: START_MS });
      this.entry = context.global.getSync("__gradebox_code_run", { reference: true });
      this.callEntry = context.global.getSync("__gradebox_code_call", { reference: true });
      context.global.deleteSync("__gradebox_code_run");
      context.global.deleteSync("__gradebox_code_call");
    } catch (error) {
      isolate.dispose();
      throw new RunnerFailure(`the Python runner did not start: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.isolate = isolate;
    this.stats.isolates++;
    return this.entry;
  }

  /** the tests' side asked (its isolate's device handler): never throws, since the interpreter would */
  private answer(message: unknown): string {
    try {
      return typeof message === "string" && this.bridgeTo ? this.bridgeTo(message) : ABORT;
    } catch {
      return ABORT;
    }
  }

  private replace(): void {
    if (this.isolate && !this.isolate.isDisposed) this.isolate.dispose();
    this.isolate = undefined;
    this.entry = undefined;
    this.callEntry = undefined;
  }

  run(request: RunRequest): RunResult {
    if (request.after !== undefined) return this.runWithTests(request);
    const payload = JSON.stringify({
      program: request.program,
      stdin: request.stdin ?? "",
      ...(request.before === undefined ? {} : { before: request.before }),
      ...(request.call === undefined
        ? {}
        : { call: { name: request.call.name }, args: latin1(encodeMarshal([request.call.args])), noArgs: latin1(encodeMarshal([[]])) }),
      outputBytes: request.limits.outputBytes,
      memoryMb: request.limits.memoryMb,
    });
    const entered = this.enterRun(payload, request.limits.cpuMs);
    if ("stopped" in entered) return entered.stopped;
    return this.read(entered.raw, request, entered.cpuMs, request.call !== undefined);
  }

  /**
   * One call of the run entry, within timeoutMs: its raw answer, or the result of a run its limit
   * stopped. A runner that must be replaced first (files written) is, and the call made again.
   */
  private enterRun(payload: string, timeoutMs: number): { raw: unknown; cpuMs: number } | { stopped: RunResult } {
    for (let attempt = 0; ; attempt++) {
      const entry = this.entry && this.isolate && !this.isolate.isDisposed ? this.entry : this.start();
      this.stats.runs++;
      const entered = this.enter(entry, [payload], timeoutMs);
      if ("stopped" in entered) return entered;
      // (the canary after a time limit finds this first: here only if it did not run)
      if (entered.raw === '{"dirty":true}' && attempt === 0) {
        this.replace();
        continue;
      }
      return entered;
    }
  }

  private enter(ref: ivm.Reference, args: string[], timeoutMs: number): { raw: unknown; cpuMs: number } | { stopped: RunResult } {
    const isolate = this.isolate as ivm.Isolate;
    const cpuBefore = isolate.cpuTime;
    const started = performance.now();
    try {
      const raw = ref.applySync(undefined, args, { timeout: Math.max(1, Math.ceil(timeoutMs)) });
      return { raw, cpuMs: Number(isolate.isDisposed ? 0n : isolate.cpuTime - cpuBefore) / 1e6 };
    } catch (error) {
      // the time it took, before a canary run or a new isolate blurs it (a dead isolate has no clock: the wall's then)
      const cpuMs = isolate.isDisposed ? performance.now() - started : Number(isolate.cpuTime - cpuBefore) / 1e6;
      const message = error instanceof Error ? error.message : String(error);
      const stop: RunStatus | undefined =
        message === "Script execution timed out." ? "time_limit" : /memory|disposed/i.test(message) ? "memory_limit" : undefined;
      // a run stopped by its time limit left nothing the next restore does not put back (memory,
      // stack pointer, reference table, cwd, streams; a file written makes the next call ask for
      // a new isolate): the isolate is kept when a canary run answers right, saving a 0.3–1.5 s start
      if (stop !== "time_limit" || !this.canary()) this.replace();
      if (!stop) throw new RunnerFailure(`the Python runner failed: ${message}`);
      const said = stop === "memory_limit" ? "memory limit: the run went past the interpreter's memory" : undefined;
      return {
        stopped: { status: stop, stdout: "", stderr: "", exitCode: 1, completed: false, cpuMs, ...(said ? { message: said } : {}) },
      };
    }
  }

  /**
   * An assert-style test: the program runs here and then serves the tests' calls; the tests run
   * in the peer. One budget (limits.cpuMs) bounds both sides; a stop on either ends the run.
   */
  private runWithTests(request: RunRequest): RunResult {
    // both interpreters up before the clock starts: a start is no run's time (the worker starts
    // them between items; a runner used directly pays it here)
    this.warm(true);
    const budget = request.limits.cpuMs;
    const began = performance.now();
    const left = () => Math.max(1, budget - (performance.now() - began));
    const opened = this.enterRun(
      JSON.stringify({
        program: request.program,
        stdin: request.stdin ?? "",
        ...(request.before === undefined ? {} : { before: request.before }),
        ...(request.setup === undefined ? {} : { setup: request.setup }),
        serve: true,
        outputBytes: request.limits.outputBytes,
        memoryMb: request.limits.memoryMb,
      }),
      budget,
    );
    if ("stopped" in opened) return opened.stopped;
    const serving =
      typeof opened.raw === "string" && opened.raw.startsWith('{"serving":true,')
        ? (JSON.parse(opened.raw) as { stdin?: unknown })
        : undefined;
    if (!serving) return this.read(opened.raw, request, opened.cpuMs, false);
    const peer = this.peer as PythonRunner;
    let cpuMs = opened.cpuMs;
    let stopped: RunResult | undefined;
    /** the runner's own failure inside a call: thrown once the tests' side is back, so the item abstains */
    let failure: unknown;
    const timeUp = (): RunResult => ({
      status: "time_limit",
      stdout: "",
      stderr: "",
      exitCode: 1,
      completed: false,
      cpuMs: 0,
      message: `time limit: the program and the tests together took more than ${budget} ms`,
    });
    peer.bridgeTo = (message) => {
      if (stopped || failure || !this.callEntry) return ABORT;
      // the tests' side's own clock pauses while the program runs: the budget is the two together, by the wall
      if (performance.now() - began >= budget) {
        stopped = timeUp();
        return ABORT;
      }
      const op = message[0];
      const nul = message.indexOf("\0");
      // the name's bytes are UTF-8 (the device moves bytes as latin-1 text)
      const name = nul > 0 ? bytesText(message.slice(1, nul)) : "";
      const args = message.slice(nul + 1);
      // the tests' side is the project's own data, still read strictly: a name, plain arguments
      // C: a call; K: a call whose arguments hold handles (see _gb_unwrap)
      const call = op === "C" || op === "K";
      if ((op !== "G" && !call) || !NAME.test(name)) return ABORT;
      if (call && (args.length > MAX_ARGUMENTS || !plainMarshal(bytesOf(args)))) return ABORT;
      let entered: ReturnType<PythonRunner["enter"]>;
      try {
        entered = this.enter(this.callEntry, [op, name, call ? args : ""], left());
      } catch (error) {
        failure = error;
        return ABORT;
      }
      if ("stopped" in entered) {
        stopped = entered.stopped;
        return ABORT;
      }
      cpuMs += entered.cpuMs;
      if (entered.raw === ABORT) {
        // the program's interpreter stopped (os._exit, a fatal error) inside the call
        stopped = {
          status: "runtime_error",
          stdout: "",
          stderr: "",
          exitCode: 1,
          completed: false,
          cpuMs: 0,
          message: "the program's interpreter stopped during the tests (os._exit or a fatal error)",
        };
        this.replace();
        return ABORT;
      }
      return this.checked(entered.raw, op);
    };
    let tests: RunResult;
    try {
      tests = peer.runTests({ ...request, stdin: typeof serving.stdin === "string" ? serving.stdin : "" }, left());
    } catch (error) {
      try {
        this.end(END_GRACE_MS);
      } catch {
        this.replace();
      }
      throw error;
    } finally {
      peer.bridgeTo = undefined;
    }
    cpuMs += tests.cpuMs;
    if (failure) {
      this.replace();
      throw failure instanceof RunnerFailure ? failure : new RunnerFailure(String(failure));
    }
    if (!stopped && performance.now() - began > budget) stopped = timeUp();
    if (stopped) {
      // the program's side is mid-serve: it gives back nothing worth its time (the next run restores it)
      return { ...stopped, cpuMs: cpuMs + stopped.cpuMs };
    }
    // the program's side: what it wrote over the whole run. Within what is left of the budget:
    // letting go of its namespace runs its objects' __del__, which may never return
    const ended = this.end(Math.max(left(), END_GRACE_MS));
    if (ended && "stopped" in ended) return { ...ended.stopped, cpuMs: cpuMs + ended.stopped.cpuMs };
    if (!ended) {
      return {
        status: "runtime_error",
        stdout: "",
        stderr: "",
        exitCode: 1,
        completed: false,
        cpuMs,
        message: "the program's interpreter stopped during the tests",
      };
    }
    const program = this.read(ended.raw, request, ended.cpuMs, false);
    cpuMs += ended.cpuMs;
    const failed = program.status !== "ok" ? program : tests.status !== "ok" ? tests : undefined;
    return {
      status: failed?.status ?? "ok",
      // what the tests printed follows what the program printed
      stdout: program.stdout + tests.stdout,
      stderr: program.stderr + tests.stderr,
      exitCode: failed ? failed.exitCode || 1 : 0,
      completed: tests.completed && program.status === "ok",
      cpuMs,
      ...(failed?.message === undefined ? {} : { message: failed.message }),
    };
  }

  /** the program's side's end: its run's answer (output, and whether it must be replaced), its limit, or undefined when it is gone */
  private end(timeoutMs: number): { raw: unknown; cpuMs: number } | { stopped: RunResult } | undefined {
    if (!this.callEntry || !this.started) return undefined;
    // (a RunnerFailure here is the runner's: it reaches the grade, which abstains)
    return this.enter(this.callEntry, ["end", "", ""], timeoutMs);
  }

  /** The program's side's answer to one request, passed on only in its known forms (see _gb_lookup, _gb_invoke). */
  private checked(raw: unknown, op: string): string {
    if (typeof raw !== "string" || raw.length === 0) return ABORT;
    const kind = raw[0];
    // (for a call or a name's value alike)
    if (raw === "L" || raw.length > MAX_REPLY + 1)
      return `E${latin1(encodeMarshal(["ValueError", `the value is larger than ${MAX_REPLY} bytes as data`]))}`;
    // a handle: "H<index>:<the type's name>"
    if (kind === "H") return /^H\d{1,9}:\P{Cc}{0,100}$/u.test(bytesText(raw)) ? raw : ABORT;
    if (op === "G") {
      if (kind === "N" || kind === "F") return raw.length === 1 ? raw : ABORT;
      if (kind === "M") return NAME.test(bytesText(raw.slice(1))) ? raw : "N";
      if (kind === "D") return plainMarshal(bytesOf(raw.slice(1))) ? raw : "N";
      return ABORT;
    }
    if (kind === "R" || kind === "I") {
      return plainMarshal(bytesOf(raw.slice(1))) ? raw : `E${latin1(encodeMarshal(["TypeError", "the value returned is not plain data"]))}`;
    }
    if (kind === "E") {
      const decoded = decodeMarshal(bytesOf(raw.slice(1)));
      const pair = decoded.ok ? decoded.value : undefined;
      if (Array.isArray(pair) && pair.length === 2 && typeof pair[0] === "string" && typeof pair[1] === "string" && NAME.test(pair[0]))
        return raw;
      return `E${latin1(encodeMarshal(["RuntimeError", "the program failed"]))}`;
    }
    return ABORT;
  }

  /** The tests' side of an assert-style test (this runner in the "tests" role): the tests, their setup, within timeoutMs. */
  private runTests(request: RunRequest, timeoutMs: number): RunResult {
    const payload = JSON.stringify({
      tests: request.after,
      stdin: request.stdin ?? "",
      ...(request.before === undefined ? {} : { before: request.before }),
      outputBytes: request.limits.outputBytes,
      memoryMb: request.limits.memoryMb,
    });
    const entered = this.enterRun(payload, timeoutMs);
    if ("stopped" in entered) return entered.stopped;
    return this.read(entered.raw, request, entered.cpuMs, true);
  }

  /** A known program on the kept isolate: its right answer says the interpreter is whole. */
  private canary(): boolean {
    try {
      const answer = this.entry?.applySync(
        undefined,
        [JSON.stringify({ program: "print(int(input()) * 2)", stdin: "21\n", outputBytes: 64 })],
        { timeout: START_MS },
      );
      if (typeof answer !== "string") return false;
      const r = JSON.parse(answer) as Record<string, unknown>;
      const whole = r.status === "ok" && r.stdout === "42\n" && r.dead !== true && r.fsDirty !== true && r.dirty !== true;
      if (whole) this.stats.kept++;
      return whole;
    } catch {
      return false;
    }
  }

  private read(raw: unknown, request: RunRequest, cpuMs: number, harness: boolean): RunResult {
    if (typeof raw !== "string" || raw.length > 16 * request.limits.outputBytes + 4 * MAX_RETURNED + 64 * 1024) {
      this.replace();
      throw new RunnerFailure("the Python runner answered in an unknown form");
    }
    const r = JSON.parse(raw) as Record<string, unknown>;
    if (typeof r.failed === "string") {
      this.replace();
      throw new RunnerFailure(r.failed);
    }
    const grown = typeof r.grown === "number" ? r.grown : 0;
    // a run that wrote files, grew memory far or stopped the interpreter: the next run gets a new isolate
    if (r.fsDirty === true || r.dead === true || grown > REBUILD_GROWTH) this.replace();
    const status = r.status as RunStatus;
    let message = typeof r.message === "string" ? r.message.slice(0, MAX_MESSAGE) : undefined;
    let final: RunStatus = status;
    if (status === "runtime_error" && message?.startsWith("MemoryError")) {
      final = "memory_limit";
      // CPython's MemoryError mostly says nothing ("MemoryError: ")
      const detail = message.replace(/^MemoryError:?\s*/, "");
      message = `memory limit: MemoryError${detail ? `: ${detail}` : " (the program ran out of memory)"}`;
    }
    // print past the limit raised OSError (EIO) in the program: the limit is what happened
    if (status === "output_limit") message = `output limit: more than ${request.limits.outputBytes} bytes of output`;
    const result: RunResult = {
      status: final,
      stdout: String(r.stdout ?? ""),
      stderr: String(r.stderr ?? ""),
      exitCode: typeof r.exitCode === "number" ? r.exitCode : 1,
      completed: r.completed === true && harness,
      cpuMs,
      ...(message === undefined ? {} : { message }),
    };
    if (request.call && r.completed === true) {
      if (typeof r.marshal === "string") {
        const decoded = decodeMarshal(Uint8Array.from(r.marshal, (c) => c.charCodeAt(0) & 0xff));
        if (decoded.ok) result.returned = decoded.value;
        else result.returnedOpaque = true;
      } else if (r.returnedOpaque === true) result.returnedOpaque = true;
      else if (typeof r.nonFinite === "string") result.returned = new NonFiniteFloat(r.nonFinite as "nan" | "inf" | "-inf");
      else if (r.big === true) {
        const big = BigInt(String(r.primitive));
        result.returned = Number.isSafeInteger(Number(big)) ? Number(big) : big;
      } else result.returned = r.primitive ?? null;
    }
    return result;
  }

  dispose(): void {
    this.replace();
    this.peer?.dispose();
    this.peer = undefined;
  }
}

const bytesOf = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0) & 0xff);
const bytesText = (text: string) => new TextDecoder("utf-8", { fatal: false }).decode(bytesOf(text));

/**
 * Marshal bytes (version 4) that hold only plain data: None, bool, int, float, complex, str,
 * bytes, tuple, list, dict, set, frozenset, and back-references to those. What one interpreter
 * passes the other goes through this first: marshal.loads is not safe on made-up bytes (a code
 * object among them, a length past the end), and either side may be hostile.
 */
export function plainMarshal(bytes: Uint8Array): boolean {
  let at = 0;
  let refs = 0;
  // the references of containers still being read: marshal hands a reference to one over half
  // made (a tuple with NULL items, hashed as a dict key, reads freed memory in the interpreter)
  const open = new Set<number>();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (n: number) => at + n <= bytes.length;
  const i32 = () => {
    if (!need(4)) return -1;
    const v = view.getInt32(at, true);
    at += 4;
    return v;
  };
  const value = (depth: number): boolean => {
    if (depth > 200 || !need(1)) return false;
    const byte = bytes[at++];
    const slot = byte & 0x80 ? refs++ : -1;
    const code = String.fromCharCode(byte & 0x7f);
    const items = (n: number): boolean => {
      if (slot >= 0) open.add(slot);
      for (let k = 0; k < n; k++) if (!value(depth + 1)) return false;
      open.delete(slot);
      return true;
    };
    switch (code) {
      case "N":
      case "T":
      case "F":
        return true;
      case "i":
        at += 4;
        return at <= bytes.length;
      case "g":
        at += 8;
        return at <= bytes.length;
      case "y":
        at += 16;
        return at <= bytes.length;
      case "l": {
        if (!need(4)) return false;
        const n = i32();
        const digits = Math.abs(n);
        if (!need(2 * digits)) return false;
        at += 2 * digits;
        return true;
      }
      case "u":
      case "t":
      case "a":
      case "A":
      case "s": {
        const n = i32();
        if (n < 0 || !need(n)) return false;
        at += n;
        return true;
      }
      case "z":
      case "Z": {
        if (!need(1)) return false;
        const n = bytes[at++];
        if (!need(n)) return false;
        at += n;
        return true;
      }
      case ")": {
        if (!need(1)) return false;
        return items(bytes[at++]);
      }
      case "(":
      case "[":
      case "<":
      case ">": {
        const n = i32();
        if (n < 0 || n > bytes.length - at) return false;
        return items(n);
      }
      case "{":
        if (slot >= 0) open.add(slot);
        for (;;) {
          if (!need(1)) return false;
          if (bytes[at] === 0x30) {
            at++;
            open.delete(slot);
            return true;
          }
          if (!value(depth + 1) || !value(depth + 1)) return false;
        }
      case "r": {
        const n = i32();
        return n >= 0 && n < refs && !open.has(n);
      }
      default:
        return false;
    }
  };
  return value(0) && at === bytes.length;
}

/**
 * marshal's format (version 4), for what plain data is: None, bool, int, float, str, tuple
 * (as an array), list, dict with string keys. Anything else (bytes, sets, complex, code, a
 * dict keyed otherwise) makes the value opaque.
 */
export function decodeMarshal(bytes: Uint8Array): { ok: true; value: unknown } | { ok: false } {
  const refs: unknown[] = [];
  let at = 0;
  let nodes = 0;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  class Opaque extends Error {}
  const need = (n: number) => {
    if (at + n > bytes.length) throw new Opaque();
  };
  const i32 = () => {
    need(4);
    const v = view.getInt32(at, true);
    at += 4;
    return v;
  };
  const text = (n: number, latin1: boolean) => {
    need(n);
    const slice = bytes.subarray(at, at + n);
    at += n;
    return latin1 ? String.fromCharCode(...slice) : new TextDecoder("utf-8", { fatal: true }).decode(slice);
  };
  // the value's size once expanded: a back-reference ('r') counts all it stands for, so a DAG
  // (v = [v, v], 26 times) is opaque here instead of 2^26 nodes for JSON.stringify later
  const sizes = new Map<unknown, number>();
  const read = (depth: number): unknown => {
    if (depth > 100 || ++nodes > MAX_RETURNED_NODES) throw new Opaque();
    need(1);
    const byte = bytes[at++];
    const flag = (byte & 0x80) !== 0;
    const code = String.fromCharCode(byte & 0x7f);
    let slot = -1;
    if (flag) {
      slot = refs.length;
      refs.push(undefined);
    }
    const keep = (v: unknown) => {
      if (slot >= 0) refs[slot] = v;
      return v;
    };
    switch (code) {
      case "N":
        return keep(null);
      case "T":
        return keep(true);
      case "F":
        return keep(false);
      case "i":
        return keep(i32());
      case "l": {
        const n = i32();
        const digits = Math.abs(n);
        if (digits > 1000) throw new Opaque();
        let v = 0n;
        need(2 * digits);
        for (let k = digits - 1; k >= 0; k--) v = (v << 15n) | BigInt(view.getUint16(at + 2 * k, true));
        at += 2 * digits;
        const big = n < 0 ? -v : v;
        const num = Number(big);
        // past 2^53 the digits are kept (a double would make …891 equal …890)
        return keep(Number.isSafeInteger(num) ? num : big);
      }
      case "g": {
        need(8);
        const v = view.getFloat64(at, true);
        at += 8;
        // NaN and ±inf equal nothing a test expects (not null, not the string "Infinity")
        return keep(Number.isFinite(v) ? v : new NonFiniteFloat(Number.isNaN(v) ? "nan" : v > 0 ? "inf" : "-inf"));
      }
      case "u":
      case "t":
        return keep(text(i32(), false));
      case "a":
      case "A":
        return keep(text(i32(), true));
      case "z":
      case "Z": {
        need(1);
        return keep(text(bytes[at++], true));
      }
      case "(":
      case "[":
      case ")": {
        let n: number;
        if (code === ")") {
          need(1);
          n = bytes[at++];
        } else n = i32();
        if (n < 0 || n > bytes.length) throw new Opaque();
        const arr: unknown[] = [];
        keep(arr);
        const before = nodes;
        for (let k = 0; k < n; k++) arr.push(read(depth + 1));
        sizes.set(arr, nodes - before + 1);
        return arr;
      }
      case "{": {
        const obj: Record<string, unknown> = Object.create(null);
        keep(obj);
        const before = nodes;
        for (;;) {
          need(1);
          if (bytes[at] === 0x30) {
            at++;
            break;
          }
          const key = read(depth + 1);
          if (typeof key !== "string") throw new Opaque();
          obj[key] = read(depth + 1);
        }
        const copy = { ...obj };
        if (slot >= 0) refs[slot] = copy;
        sizes.set(copy, nodes - before + 1);
        return copy;
      }
      case "r": {
        const n = i32();
        if (n < 0 || n >= refs.length || refs[n] === undefined) throw new Opaque();
        const v = refs[n];
        if (v !== null && typeof v === "object" && !(v instanceof NonFiniteFloat)) {
          // a reference to a container still being read is a cycle: not data
          const size = sizes.get(v);
          if (size === undefined) throw new Opaque();
          nodes += size;
          if (nodes > MAX_RETURNED_NODES) throw new Opaque();
        }
        return v;
      }
      default:
        throw new Opaque();
    }
  };
  try {
    const value = read(0);
    if (at !== bytes.length) return { ok: false };
    return { ok: true, value };
  } catch (error) {
    if (error instanceof Opaque || error instanceof RangeError || error instanceof TypeError) return { ok: false };
    throw error;
  }
}

const latin1 = (bytes: Uint8Array) => {
  let s = "";
  for (let i = 0; i < bytes.length; i += 4096) s += String.fromCharCode(...bytes.subarray(i, i + 4096));
  return s;
};

/**
 * JSON data as marshal (version 4) bytes, for the call's arguments: arrays become lists (the
 * outer one of encodeMarshal([[args]]) a list of one tuple… see the caller), objects dicts.
 * `tupleDepth` 1: the element at depth 1 is a tuple (starmap's argument tuple).
 */
export function encodeMarshal(value: unknown): Uint8Array {
  const out: number[] = [];
  const i32 = (n: number) => out.push(n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff);
  const utf8 = new TextEncoder();
  const write = (v: unknown, depth: number): void => {
    if (v === null || v === undefined) out.push(0x4e);
    else if (v === true) out.push(0x54);
    else if (v === false) out.push(0x46);
    else if (typeof v === "number" && Number.isInteger(v) && Math.abs(v) <= 0x7fffffff) {
      out.push(0x69);
      i32(v);
    } else if ((typeof v === "number" && Number.isSafeInteger(v)) || typeof v === "bigint") {
      let m = typeof v === "bigint" ? (v < 0n ? -v : v) : BigInt(Math.abs(v));
      const digits: number[] = [];
      while (m > 0n) {
        digits.push(Number(m & 0x7fffn));
        m >>= 15n;
      }
      out.push(0x6c);
      i32(v < 0 ? -digits.length : digits.length);
      for (const d of digits) out.push(d & 0xff, d >> 8);
    } else if (typeof v === "number") {
      out.push(0x67);
      const b = new Uint8Array(8);
      new DataView(b.buffer).setFloat64(0, v, true);
      out.push(...b);
    } else if (typeof v === "string") {
      const b = utf8.encode(v);
      out.push(0x75);
      i32(b.length);
      for (const x of b) out.push(x);
    } else if (Array.isArray(v)) {
      // depth 1 of [[args]]: the tuple starmap unpacks
      out.push(depth === 1 ? 0x28 : 0x5b);
      i32(v.length);
      for (const x of v) write(x, depth + 1);
    } else if (typeof v === "object") {
      out.push(0x7b);
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        write(k, depth + 1);
        write(x, depth + 1);
      }
      out.push(0x30);
    } else throw new TypeError(`a call argument of type ${typeof v} is not JSON data`);
  };
  write(value, 0);
  return Uint8Array.from(out);
}

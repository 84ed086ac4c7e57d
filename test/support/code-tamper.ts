// Programs that try to pass tests they fail, and programs that try to leave state for the next
// run (issue 29): the runners' tests (test/code-runner.test.ts) and the code grader's end-to-end
// tests use them. Every tamper case's function `f` answers wrong (f(2) is 4; the tests expect 5),
// so a pass can only come from tampering.

export interface TamperCase {
  name: string;
  program: string;
  /** the kind of test it attacks */
  test: "after" | "call";
  /** assert-style tests of its own (else TAMPER_AFTER): ones its tampering would pass were it not defended */
  after?: string;
}

/** assert-style test code every tamper case runs against (f(2) == 5 is false for each, and so is each other line) */
export const TAMPER_AFTER =
  "assert f(2) == 5, 'f(2) must be 5'\nassert f(2) > 4 and not f(2) < 5\nassert abs(f(2) - 5) < 1e-9\nassert len([f(2)]) == 5\n";
/** the function-call test: f(2), expected 5 */
export const TAMPER_CALL = { name: "f", args: [2], expected: 5 } as const;

const F = "def f(x):\n    return x * 2\n";

export const PYTHON_TAMPER: TamperCase[] = [
  { name: "patches builtins.print", test: "after", program: `${F}import builtins\nbuiltins.print = lambda *a, **k: None\n` },
  { name: "replaces sys.stdout", test: "after", program: `${F}import sys, io\nsys.stdout = io.StringIO()\n` },
  { name: "patches sys.exit", test: "after", program: `${F}import sys\nsys.exit = lambda *a: None\n` },
  {
    name: "patches builtins.AssertionError",
    test: "after",
    program: `${F}import builtins\nbuiltins.AssertionError = type('Quiet', (Exception,), {})\n`,
  },
  {
    name: "patches AssertionError through sys.modules",
    test: "after",
    program: `${F}import sys\nsys.modules['builtins'].AssertionError = KeyboardInterrupt\n`,
  },
  { name: "exits with 0 before the tests (sys.exit)", test: "after", program: `${F}import sys\nsys.exit(0)\n` },
  { name: "raises SystemExit(0) before the tests", test: "after", program: `${F}raise SystemExit(0)\n` },
  { name: "os._exit(0) before the tests", test: "after", program: `${F}import os\nos._exit(0)\n` },
  { name: "exits with 0 inside the tested function", test: "after", program: "import sys\ndef f(x):\n    sys.exit(0)\n" },
  { name: "exits with 0 inside the called function", test: "call", program: "import sys\ndef f(x):\n    sys.exit(0)\n" },
  {
    name: "returns an object equal to everything",
    test: "call",
    program:
      "class Any:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n    def __hash__(self): return 0\ndef f(x):\n    return Any()\n",
  },
  {
    name: "an object equal to everything, in assert-style tests",
    test: "after",
    after: "assert f(2) == 5\nassert not (f(2) != 5)\n",
    program:
      "class Any:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n    __hash__ = None\ndef f(x):\n    return Any()\n",
  },
  {
    name: "a truthy object compared with <, in assert-style tests",
    test: "after",
    after: "assert f(2) < 0 and f(2) > 10\nassert f(2)\n",
    program:
      "class Small:\n    def __lt__(self, o): return True\n    def __gt__(self, o): return True\n    def __bool__(self): return True\ndef f(x):\n    return Small()\n",
  },
  {
    name: "patches builtins the tests use (abs, isinstance, len)",
    test: "after",
    after: "assert abs(f(2) - 5) < 1e-9\nassert len([f(2)]) == 5\nassert isinstance(f(2), str)\n",
    program: `${F}import builtins\nbuiltins.len = lambda *a: 5\nbuiltins.abs = lambda *a: 0\nbuiltins.isinstance = lambda *a: True\n`,
  },
  {
    name: "leaves a trace function that skips the failing line",
    test: "after",
    after: "assert f(2) == 5\nok = True\n",
    program: `${F}import sys\ndef tr(frame, event, arg):\n    if event == 'line' and frame.f_code.co_filename == '<tests>':\n        try: frame.f_lineno = frame.f_lineno + 1\n        except Exception: pass\n    return tr\nsys.settrace(tr)\n`,
  },
  {
    name: "returns an int subclass equal to everything",
    test: "call",
    program: "class I(int):\n    def __eq__(self, o): return True\ndef f(x):\n    return I(4)\n",
  },
  {
    name: "returns a list whose __class__ lies",
    test: "call",
    program: "class L(list):\n    __class__ = int\n    def __eq__(self, o): return True\ndef f(x):\n    return L([4])\n",
  },
  {
    name: "patches the harness found through gc.get_objects",
    test: "after",
    program: `${F}import gc\nfor o in gc.get_objects():\n    if callable(o) and getattr(o, '__name__', '').startswith('_gb'):\n        try: o.__code__ = (lambda *a, **k: ('ok', '', 0)).__code__\n        except Exception: pass\n`,
  },
  {
    name: "rewrites its caller's frame (sys._getframe)",
    test: "after",
    program: `${F}import sys\nfr = sys._getframe(1)\nwhile fr is not None:\n    try: fr.f_locals.update({'f': lambda x: 5})\n    except Exception: pass\n    fr = fr.f_back\n`,
  },
  {
    name: "patches builtins.exec and compile",
    test: "after",
    program: `${F}import builtins\nbuiltins.exec = lambda *a, **k: None\nbuiltins.compile = lambda *a, **k: None\n`,
  },
  // the tests' side runs in another interpreter: nothing below finds the tests from the program's
  {
    name: "reads the expected value from the calling test's frame (sys._getframe)",
    test: "after",
    after: "assert f(2) == 5\n",
    program:
      "import sys\ndef f(x):\n    fr = sys._getframe(1)\n    while fr is not None:\n        for k in fr.f_code.co_consts:\n            if type(k) is int and k != x:\n                return k\n        fr = fr.f_back\n    return x * 2\n",
  },
  {
    name: "reads the expected value from a traceback's frames",
    test: "after",
    after: "def check(candidate):\n    expected = 5\n    assert candidate(2) == expected\ncheck(f)\n",
    program:
      "def f(x):\n    try:\n        raise ValueError\n    except ValueError as e:\n        fr = e.__traceback__.tb_frame.f_back\n    while fr is not None:\n        if 'expected' in fr.f_locals:\n            return fr.f_locals['expected']\n        fr = fr.f_back\n    return x * 2\n",
  },
  {
    name: "finds the tests' compiled constants through gc",
    test: "after",
    after: "assert f(2) == 5\n",
    program:
      "import gc, types\nSEEN = [k for o in gc.get_objects() if isinstance(o, types.CodeType) for k in o.co_consts if type(k) is int and k not in (0, 1, 2)]\ndef f(x):\n    more = [k for o in gc.get_objects() if isinstance(o, types.CodeType) and o.co_filename == '<tests>' for k in o.co_consts if type(k) is int and k != x]\n    return (more or SEEN or [x * 2])[0]\n",
  },
  {
    name: "patches a module the tests import (math.isclose)",
    test: "after",
    after: "import math\nassert math.isclose(f(2), 5)\n",
    program: `${F}import math\nmath.isclose = lambda *a, **k: True\n`,
  },
  {
    name: "patches a module from inside the tested function",
    test: "after",
    after: "import math\nassert math.isclose(f(2), 5)\n",
    program: "import math\ndef f(x):\n    math.isclose = lambda *a, **k: True\n    return x * 2\n",
  },
  {
    name: "mutates the tests' expected list to equal its answer",
    test: "after",
    after: "expected = [5]\nassert f(2) == expected\n",
    program:
      "import gc\ndef f(x):\n    for o in gc.get_objects():\n        if type(o) is list and o == [5]:\n            o[0] = 4\n    import sys\n    fr = sys._getframe(1)\n    if 'expected' in fr.f_globals:\n        fr.f_globals['expected'][0] = 4\n    return [4]\n",
  },
  {
    name: "hands the tests crafted marshal bytes (a code object) through the harness found by gc",
    test: "after",
    after: "assert f(2) == 5\n",
    program:
      "import gc, marshal\ndef evil(*a, **k):\n    return b'R' + __import__('marshal').dumps(compile('5', 'x', 'eval'))\nfor o in gc.get_objects():\n    if callable(o) and getattr(o, '__name__', '') == '_gb_invoke':\n        try: o.__code__ = evil.__code__\n        except Exception: pass\n" +
      F,
  },
  {
    name: "raises StopIteration so the tests' map() ends early, as if every item passed",
    test: "after",
    after: "assert all(map(lambda p: f(p[0]) == p[1], [(2, 5), (3, 7)]))\n",
    program: "def f(x):\n    raise StopIteration\n",
  },
  {
    // (evil runs with the harness's globals: it imports what it uses)
    name: "hands the tests StopIteration through the harness found by gc (its own exception kind)",
    test: "after",
    after: "for got in map(f, [2]):\n    assert got == 5\n",
    program:
      "import gc, marshal\ndef evil(*a, **k):\n    return b'E' + __import__('marshal').dumps(('StopIteration', ''))\nfor o in gc.get_objects():\n    if callable(o) and getattr(o, '__name__', '') == '_gb_invoke':\n        try: o.__code__ = evil.__code__\n        except Exception: pass\n" +
      F,
  },
];

/** Each leaks something if state survived a run: `probe` prints what the next run sees (compared with a fresh interpreter's answer). */
export interface LeakCase {
  name: string;
  setup: string;
  probe: string;
}

export const PYTHON_LEAKS: LeakCase[] = [
  { name: "a builtin added", setup: "import builtins\nbuiltins.LEAK = 1", probe: "import builtins\nprint(hasattr(builtins, 'LEAK'))" },
  { name: "builtins.print patched", setup: "import builtins\nbuiltins.print = lambda *a, **k: None", probe: "print('visible')" },
  {
    name: "a module mutated",
    setup: "import json\njson.dumps = None\njson.X = 1",
    probe: "import json\nprint(json.dumps is None, hasattr(json, 'X'))",
  },
  {
    name: "a module imported and planted",
    setup: "import sys, types\nsys.modules['planted'] = types.ModuleType('planted')\nimport statistics",
    probe: "import sys\nprint('planted' in sys.modules)",
  },
  { name: "random seeded", setup: "import random\nrandom.seed(1)", probe: "import random\nprint(random.random())" },
  {
    name: "the recursion limit raised",
    setup: "import sys\nsys.setrecursionlimit(100000)",
    probe: "import sys\nprint(sys.getrecursionlimit())",
  },
  { name: "cwd changed", setup: "import os\nos.chdir('/tmp')", probe: "import os\nprint(os.getcwd())" },
  { name: "a file written", setup: "open('/tmp/leak.txt', 'w').write('x')", probe: "import os\nprint(os.path.exists('/tmp/leak.txt'))" },
  { name: "sys.stdout replaced", setup: "import sys, io\nsys.stdout = io.StringIO()", probe: "print('visible')" },
  { name: "an environment variable set", setup: "import os\nos.environ['LEAK'] = '1'", probe: "import os\nprint(os.environ.get('LEAK'))" },
];

export const JS_TAMPER: TamperCase[] = [
  { name: "patches console.log", test: "after", program: "function f(x) { return x * 2 }\nconsole.log = () => {};" },
  { name: "process.exit(0) before the tests", test: "after", program: "function f(x) { return x * 2 }\nprocess.exit(0);" },
  { name: "process.exit(0) inside the function", test: "call", program: "function f(x) { process.exit(0) }" },
  {
    name: "returns an object equal to anything",
    test: "call",
    program: "function f(x) { return { valueOf() { return 5 }, equals() { return true } } }",
  },
  {
    name: "patches Error so the tests cannot throw",
    test: "after",
    program: "function f(x) { return x * 2 }\nglobalThis.Error = function () { return {} };",
  },
  // the tests run in a strict function of their own: nothing below reads their source
  {
    name: "reads its caller's source (f.caller)",
    test: "after",
    after: "function test() {\n  if (f(2) !== 5) throw new Error('f(2) must be 5');\n}\ntest();\n",
    program:
      "function f(x) {\n  const c = f.caller || (arguments.callee && arguments.callee.caller);\n  const m = c && /!== (\\d+)/.exec(String(c));\n  return m ? Number(m[1]) : x * 2;\n}\n",
  },
  {
    name: "reads its caller's source from a stack trace's frames (getFunction)",
    test: "after",
    after: "function test() {\n  if (f(2) !== 5) throw new Error('f(2) must be 5');\n}\ntest();\n",
    program:
      "function f(x) {\n  const keep = Error.prepareStackTrace;\n  Error.prepareStackTrace = (e, frames) => frames;\n  const frames = new Error().stack;\n  Error.prepareStackTrace = keep;\n  for (const fr of frames) {\n    const fn = fr.getFunction && fr.getFunction();\n    const m = fn && /!== (\\d+)/.exec(String(fn));\n    if (m) return Number(m[1]);\n  }\n  return x * 2;\n}\n",
  },
  {
    name: "reads the tests' global test() (MultiPL-E's name)",
    test: "after",
    after: "function test() {\n  if (f(2) !== 5) throw new Error('f(2) must be 5');\n}\ntest();\n",
    program:
      "function f(x) {\n  const t = globalThis.test;\n  const m = typeof t === 'function' && /!== (\\d+)/.exec(String(t));\n  return m ? Number(m[1]) : x * 2;\n}\n",
  },
  // the tests are called as they are: Function.prototype.call is the program's
  {
    name: "replaces Function.prototype.call, so the tests' function never runs",
    test: "after",
    program: "function f(x) { return x * 2 }\nFunction.prototype.call = function () {};",
  },
  {
    name: "reads the tests' source through Function.prototype.call, then runs them",
    test: "after",
    after: "function test() {\n  if (f(2) !== 5) throw new Error('f(2) must be 5');\n}\ntest();\n",
    program:
      "const call = Function.prototype.call;\nlet m;\nFunction.prototype.call = function (self, ...a) {\n  m = m || /!== (\\d+)/.exec(String(this));\n  Function.prototype.call = call;\n  return Reflect.apply(this, self, a);\n};\nfunction f(x) { return m ? Number(m[1]) : x * 2 }\n",
  },
  // the tests run in a realm of their own: what the program patches in its realm is not what they call
  {
    name: "patches JSON.stringify (HumanEval-X's console.assert of two stringifies)",
    test: "after",
    after: "console.assert(JSON.stringify(f(2)) === JSON.stringify(5));\n",
    program: "function f(x) { return x * 2 }\nJSON.stringify = () => 'x';",
  },
  {
    name: "patches Math.abs",
    test: "after",
    after: "if (Math.abs(f(2) - 5) > 1e-9) throw new Error('f(2) must be 5');\n",
    program: "function f(x) { return x * 2 }\nMath.abs = () => 0;",
  },
  {
    name: "patches Array.prototype.every and Object.is",
    test: "after",
    after: "if (![f(2)].every((v) => Object.is(v, 5))) throw new Error('f(2) must be 5');\n",
    program: "function f(x) { return x * 2 }\nArray.prototype.every = () => true;\nObject.is = () => true;",
  },
  {
    name: "patches the assert module's deepStrictEqual",
    test: "after",
    after: "const assert = require('node:assert');\nassert.deepStrictEqual(f(2), 5);\n",
    program:
      "function f(x) { require('node:assert').deepStrictEqual = () => {}; return x * 2 }\nrequire('assert').deepStrictEqual = () => {};",
  },
];
export const JS_TAMPER_AFTER = "if (f(2) !== 5) throw new Error('f(2) must be 5')";

export const JS_LEAKS: LeakCase[] = [
  { name: "a global set", setup: "globalThis.LEAK = 1", probe: "console.log(typeof LEAK)" },
  { name: "a prototype patched", setup: "Array.prototype.map = null", probe: "console.log(typeof [].map)" },
  { name: "console replaced", setup: "console.log = () => {}", probe: "console.log('visible')" },
];

/** Programs stopped by their time limit in the middle of something: the next run must see the baseline (PYTHON_LEAKS' probes). */
export const PYTHON_INTERRUPTED: string[] = [
  "import builtins, sys\nbuiltins.LEAK = 1\nsys.setrecursionlimit(50000)\nwhile True: pass",
  "d = {}\ni = 0\nwhile True:\n    d[i] = str(i) * 10\n    i += 1",
  "import json\njson.dumps = None\nwhile True:\n    print('x' * 10, end='')",
  "import os\nos.chdir('/tmp')\nopen('/tmp/interrupted.txt', 'w').write('x')\nwhile True: pass",
  "import random\nrandom.seed(7)\nwhile True: random.random()",
];

/**
 * Programs that try to leave Python for the runner's JavaScript (Pyodide's API, the isolate's
 * globals) or rewrite raw memory (ctypes): each must fail with an error, never print "escaped".
 */
export const PYTHON_ESCAPES: { name: string; program: string }[] = [
  {
    name: "a JsLoader's jsproxy found by gc.get_objects (Pyodide's API object)",
    program:
      "import gc\napi = next(o.jsproxy for o in gc.get_objects() if type(o).__name__ == 'JsLoader' and hasattr(o.jsproxy, 'FS'))\nG = api.constructor.constructor('return globalThis')()\nprint('escaped')\n",
  },
  {
    name: "any JsProxy left in the heap (tracked, or held by a tracked object)",
    program:
      "import gc\np = next(r for o in gc.get_objects() for r in [o, *gc.get_referents(o)] if type(type(r)).__name__ == '_JsProxyMetaClass')\nprint('escaped')\n",
  },
  {
    name: "pyodide.ffi.to_js([1]).constructor.constructor",
    program: "from pyodide.ffi import to_js\nG = to_js([1]).constructor.constructor('return globalThis')()\nprint('escaped')\n",
  },
  {
    name: "pyodide.ffi.create_proxy",
    program:
      "from pyodide.ffi import create_proxy\np = create_proxy(lambda: 1)\nG = p.constructor.constructor('return globalThis')()\nprint('escaped')\n",
  },
  { name: "import js", program: "import js\nprint('escaped', js.Object)\n" },
  { name: "import _pyodide_core", program: "import _pyodide_core\nprint('escaped')\n" },
  {
    name: "del sys.modules['_pyodide_core'] and import it again",
    program: "import sys\nsys.modules.pop('_pyodide_core', None)\nimport _pyodide_core\n_pyodide_core.to_js\nprint('escaped')\n",
  },
  {
    name: "_imp.create_builtin('_pyodide_core')",
    program: "import _imp, types\nm = _imp.create_builtin(types.SimpleNamespace(name='_pyodide_core'))\nm.to_js\nprint('escaped')\n",
  },
  {
    name: "ctypes rewrites the small int 4",
    program: "import ctypes\nctypes.c_uint32.from_address(id(4) + 12).value = 5\nprint('escaped')\n",
  },
  { name: "import _ctypes", program: "import _ctypes\nprint('escaped')\n" },
  // CPython's test modules are built into Pyodide's interpreter: raw reads and writes of memory
  { name: "import _testcapi", program: "import _testcapi\nprint('escaped')\n" },
  { name: "import _testinternalcapi", program: "import _testinternalcapi\nprint('escaped')\n" },
  { name: "import _testlimitedcapi", program: "import _testlimitedcapi\nprint('escaped')\n" },
  {
    name: "_imp.create_builtin of a test module",
    program: "import _imp, types\nm = _imp.create_builtin(types.SimpleNamespace(name='_testcapi'))\nm.__name__\nprint('escaped')\n",
  },
];

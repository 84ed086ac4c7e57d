// The code runners (issue 29) with real isolates and real Pyodide: statuses, limits, tamper
// cases that must fail, and leaks that must not reach the next run.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { NonFiniteFloat } from "../sandbox/code/compare.ts";
import { JsRunner } from "../sandbox/code/js-runner.ts";
import { decodeMarshal, encodeMarshal, PythonRunner, plainMarshal } from "../sandbox/code/python-runner.ts";
import type { RunRequest } from "../sandbox/code/run.ts";
import { ScriptRunner } from "../sandbox/code/typescript.ts";
import { packBatch } from "../sandbox/protocol/batch.ts";
import { makeTemplate, type PythonTemplate, releaseTemplate } from "../sandbox/python/template.ts";
import { CodeRunners, MAX_PYTHON_RUNNERS } from "../sandbox/worker/code-slice.ts";
import { Engine } from "../sandbox/worker/engine.ts";
import {
  JS_LEAKS,
  JS_TAMPER,
  JS_TAMPER_AFTER,
  PYTHON_ESCAPES,
  PYTHON_INTERRUPTED,
  PYTHON_LEAKS,
  PYTHON_TAMPER,
  TAMPER_AFTER,
  TAMPER_CALL,
} from "./support/code-tamper.ts";

const limits = { cpuMs: 2000, memoryMb: 128, outputBytes: 4096 };

describe("Python runner", () => {
  let template: PythonTemplate;
  let runner: PythonRunner;
  const run = (r: Partial<RunRequest> & { program: string }) => runner.run({ language: "python", limits, ...r });
  before(() => {
    template = makeTemplate(128);
    runner = new PythonRunner(template);
  });
  after(() => {
    runner.dispose();
    releaseTemplate(template);
  });

  test("stdin to stdout", () => {
    const r = run({ program: "a, b = map(int, input().split())\nprint(a + b)", stdin: "2 3\n" });
    assert.deepEqual([r.status, r.stdout, r.exitCode], ["ok", "5\n", 0]);
  });
  test("statuses: exception, syntax error, exit codes", () => {
    const e = run({ program: "1 / 0" });
    assert.equal(e.status, "runtime_error");
    assert.match(e.message ?? "", /^ZeroDivisionError: division by zero/);
    const s = run({ program: "def (:" });
    assert.equal(s.status, "syntax_error");
    assert.match(s.message ?? "", /^SyntaxError/);
    assert.deepEqual(
      [run({ program: "import sys\nsys.exit(3)" }).exitCode, run({ program: "import sys\nsys.exit(3)" }).status],
      [3, "runtime_error"],
    );
    const zero = run({ program: "import sys\nprint('x')\nsys.exit(0)" });
    assert.deepEqual([zero.status, zero.exitCode, zero.stdout], ["ok", 0, "x\n"]);
  });
  test("limits: loops, sleep, recursion, memory, output; the runner stays healthy", () => {
    const short = { ...limits, cpuMs: 300 };
    assert.equal(run({ program: "while True: pass", limits: short }).status, "time_limit");
    assert.equal(run({ program: "import time\ntime.sleep(30)", limits: short }).status, "time_limit");
    const rec = run({ program: "def f(n): return f(n + 1)\nf(0)" });
    assert.equal(rec.status, "runtime_error");
    assert.match(rec.message ?? "", /RecursionError/);
    const deep = run({ program: "import sys\nsys.setrecursionlimit(10**6)\ndef f(n): return f(n + 1)\nf(0)" });
    assert.notEqual(deep.status, "ok");
    assert.equal(run({ program: "x = [0] * 10**9" }).status, "memory_limit");
    const flood = run({ program: "while True: print('x' * 100)" });
    assert.equal(flood.status, "output_limit");
    assert.ok(flood.stdout.length <= limits.outputBytes);
    assert.equal(run({ program: "print(6 * 7)" }).stdout, "42\n");
  });
  test("limits: the spec's memoryMb bounds what a run grows the interpreter's memory by", () => {
    const grow = "x = bytearray(48 * 2**20)\nprint(len(x))";
    const small = run({ program: grow, limits: { ...limits, memoryMb: 32 } });
    assert.deepEqual([small.status, small.message], ["memory_limit", "memory limit: MemoryError (the program ran out of memory)"]);
    assert.deepEqual([run({ program: grow, limits: { ...limits, memoryMb: 96 } }).stdout], ["50331648\n"]);
    // the pages that run grew stay: a run with a smaller limit after it gets them taken away (a new isolate), not lent
    const after = run({ program: "x = bytearray(40 * 2**20)\nprint('fits')", limits: { ...limits, memoryMb: 32 } });
    assert.equal(after.status, "memory_limit");
    assert.equal(run({ program: "print(6 * 7)", limits: { ...limits, memoryMb: 32 } }).stdout, "42\n");
  });
  test("limits: the files a program writes count against its memory (they are JavaScript memory, outside the interpreter's)", () => {
    const file =
      "c = b'x' * (4 * 2**20)\nwith open('/tmp/big', 'wb') as fh:\n    for i in range(10):\n        fh.write(c)\nprint('written')";
    const r = run({ program: file, limits: { ...limits, memoryMb: 32 } });
    assert.deepEqual([r.status, r.message], ["memory_limit", "memory limit: the files the program wrote went past the run's memory"]);
    const grown = run({ program: "import os\nopen('/tmp/t', 'w').close()\nos.truncate('/tmp/t', 100 * 2**20)\nprint('grown')" });
    assert.equal(grown.status, "memory_limit", JSON.stringify(grown));
    // a small file is no limit's business, and the next run is whole
    assert.equal(run({ program: "open('/tmp/s', 'w').write('hi')\nprint(open('/tmp/s').read())" }).stdout, "hi\n");
    assert.equal(run({ program: "print(6 * 7)" }).stdout, "42\n");
  });
  test("call: the returned value as plain data", () => {
    const r = run({ program: "def f(a, b):\n    return [a + b, {'k': (1, None, 2.5, 'é')}, True]", call: { name: "f", args: [1, 2] } });
    assert.deepEqual([r.completed, r.returned], [true, [3, { k: [1, null, 2.5, "é"] }, true]]);
    const m = run({
      program: "class Solution:\n    def twice(self, xs):\n        return [x * 2 for x in xs]",
      call: { name: "Solution.twice", args: [[1, 2]] },
    });
    assert.deepEqual(m.returned, [2, 4]);
    assert.equal(run({ program: "def f():\n    return {1, 2}", call: { name: "f", args: [] } }).returnedOpaque, true);
  });
  test("after: completed only when the tests ran to their end", () => {
    assert.equal(run({ program: "def f(x): return x * 2", after: "assert f(2) == 4" }).completed, true);
    const failed = run({ program: "def f(x): return x * 2", after: "assert f(2) == 5" });
    assert.deepEqual([failed.completed, failed.status], [false, "runtime_error"]);
  });
  test("after: the tests run in their own interpreter and call the program's names with plain copies", () => {
    const ok = (program: string, after: string, extra: Partial<RunRequest> = {}) => {
      const r = run({ program, after, ...extra });
      assert.equal(r.completed, true, `${after}: ${JSON.stringify(r)}`);
      return r;
    };
    // a name that is not ASCII; a global far over the bridge's bound is the tests' error, not a silent stop
    ok("def añadir(x):\n    return x + 1\n", "assert añadir(1) == 2\n");
    const big = run({ program: "BIG = 'x' * (5 * 2**20)\n", after: "assert len(BIG) > 0\n" });
    assert.match(big.message ?? "", /^ValueError: the value is larger than/);
    // HumanEval's shape: check(candidate), the entry point passed by name
    ok(
      "def add(a, b):\n    return a + b\n",
      "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(*[1], b=1) == 2\ncheck(add)\n",
    );
    // an exception of the program reaches the tests as the builtin it is (or derives from)
    ok(
      "class Bad(ValueError):\n    pass\ndef f(x):\n    if x < 0: raise Bad('negative')\n    return x\n",
      "try:\n    f(-1)\nexcept ValueError as e:\n    assert str(e) == 'negative'\nelse:\n    assert False\n",
    );
    // a generator's items, as an iterator; the program's data and modules by name; tuples and sets stay what they are
    ok(
      "import math\nLIMIT = (3, {1, 2})\ndef f(n):\n    yield from range(n)\ndef g():\n    return (1, [2.5], {'a': None}, b'x', 1 + 2j)\n",
      "assert list(f(3)) == [0, 1, 2]\nassert LIMIT == (3, {1, 2})\nassert math.sqrt(4) == 2\nassert g() == (1, [2.5], {'a': None}, b'x', 1 + 2j)\n",
    );
    // what the program prints, then what the tests print; the tests read the stdin the program left
    const printed = ok("print('p')\ndef f(x):\n    print('in f')\n    return x\n", "assert f(input()) == 'b'\nprint('t')\n", {
      stdin: "b\n",
    });
    assert.equal(printed.stdout, "p\nin f\nt\n");
    // what cannot be copied is an error the tests see, worded for a person
    const lambda = run({ program: "def f(g):\n    return g(1)\n", after: "assert f(lambda x: x) == 1\n" });
    assert.equal(lambda.completed, false);
    assert.match(lambda.message ?? "", /^TypeError: the tests passed f an argument that is not plain data/);
    // an object of the program's is a handle in the tests: passed back to the program, never read, compared or tested
    const object = run({ program: "class P:\n    pass\ndef f():\n    return P()\n", after: "assert f()\n" });
    assert.match(object.message ?? "", /^TypeError: the program's P object reaches the tests as a handle/);
    assert.equal(
      run({ program: "class P:\n    def __eq__(s, o): return True\ndef f():\n    return P()\n", after: "assert f() == 5\n" }).completed,
      false,
    );
  });
  test("after: MBPP's setup code runs after the program and its objects reach the tests as handles (rows 927 and 601)", () => {
    const node =
      "class Node:\n    def __init__(self, data):\n        self.data = data\n        self.left = None\n        self.right = None\ndef max_height(node):\n    if node is None: return 0\n    return 1 + max(max_height(node.left), max_height(node.right))\n";
    const tree = run({
      program: node,
      setup: "root = Node(1)\nroot.left = Node(2)\nroot.left.left = Node(3)\nroot1 = Node(5)\n",
      after: "assert max_height(root) == 3\nassert max_height(root1) == 1\n",
    });
    assert.equal(tree.completed, true, JSON.stringify(tree));
    const pair =
      "class Pair(object):\n    def __init__(self, a, b):\n        self.a = a\n        self.b = b\ndef max_chain_length(arr, n):\n    arr = sorted(arr, key=lambda p: p.b)\n    c, end = 0, float('-inf')\n    for p in arr:\n        if p.a > end:\n            c += 1\n            end = p.b\n    return c\n";
    const chain = run({
      program: pair,
      after: "assert max_chain_length([Pair(5, 24), Pair(15, 25), Pair(27, 40), Pair(50, 60)], 4) == 3\n",
    });
    assert.equal(chain.completed, true, JSON.stringify(chain));
    // a setup that fails is the test's runtime error, worded so
    const broken = run({ program: "def f(): pass\n", setup: "root = Node(1)\n", after: "assert f() is None\n" });
    assert.match(broken.message ?? "", /^the tests' setup code failed: NameError/);
  });
  test("a program ends as CPython ends it: atexit handlers run, its own sys.stdout is flushed, os._exit(0) is an exit", () => {
    assert.equal(run({ program: "import atexit\natexit.register(lambda: print(6))" }).stdout, "6\n");
    const fastIo = run({
      program:
        "import sys, io\nsys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, 'w')), write_through=False)\nprint(int(input()) * 2)",
      stdin: "21\n",
    });
    assert.deepEqual([fastIo.status, fastIo.stdout], ["ok", "42\n"]);
    const exit0 = run({ program: "import os, sys\nsys.stdout.write('3\\n')\nsys.stdout.flush()\nos._exit(0)" });
    assert.deepEqual([exit0.status, exit0.exitCode, exit0.stdout], ["ok", 0, "3\n"]);
    const exit3 = run({ program: "import os\nos._exit(3)" });
    assert.deepEqual([exit3.status, exit3.exitCode, exit3.message], ["runtime_error", 3, "os._exit(3)"]);
    assert.equal(run({ program: "print(6 * 7)" }).stdout, "42\n");
  });
  test("after: what honest programs return reaches the tests: dict, tuple and int subclasses as their plain copies, large lists", () => {
    const ok = (program: string, after: string) => {
      const r = run({ program, after });
      assert.equal(r.completed, true, `${after}: ${JSON.stringify(r)}`);
    };
    // MBPP's freq_count returns a Counter; grouping answers a defaultdict; namedtuples, IntEnum
    ok("import collections\ndef f(xs):\n    return collections.Counter(xs)\n", "assert f([1, 1, 2]) == {1: 2, 2: 1}\n");
    ok(
      "import collections\ndef f(x):\n    d = collections.defaultdict(list)\n    d[x].append(x)\n    return collections.OrderedDict(d)\n",
      "assert f(2) == {2: [2]}\n",
    );
    ok(
      "import collections, enum\nP = collections.namedtuple('P', 'a b')\nclass C(enum.IntEnum):\n    RED = 1\ndef f(x):\n    return [P(x, C.RED)]\n",
      "assert f(2) == [(2, 1)] and type(f(2)[0][1]) is int\n",
    );
    // past the 256 KB a call test's value is read: 10^5 ints are 500 KB as data
    ok("def f(n):\n    return list(range(n))\n", "assert len(f(100000)) == 100000\n");
    // a subclass cannot lie its way through the copy: its value is read by the base type's C methods
    const liar = run({
      program: "class I(int):\n    def __eq__(self, o): return True\n    def __int__(self): return 5\ndef f(x):\n    return I(4)\n",
      after: "assert f(2) == 5\n",
    });
    assert.equal(liar.completed, false, JSON.stringify(liar));
  });
  test("after: a __del__ that never returns, run when the program's namespace is let go, ends at the test's limit", () => {
    // (the namespace is the program's objects' only holder when its functions have globals of their own)
    const r = run({
      program:
        "g = {}\nexec('class Evil:\\n    def __del__(self):\\n        while True: pass\\ndef f(x):\\n    return x * 2\\n', g)\ne = g['Evil']()\nf = g['f']\ndel g\n",
      after: "assert f(2) == 4\n",
      limits: { ...limits, cpuMs: 300 },
    });
    assert.deepEqual([r.status, r.completed], ["time_limit", false], JSON.stringify(r));
    assert.equal(run({ program: "def f(x):\n    return x * 2\n", after: "assert f(2) == 4\n" }).completed, true);
  });
  test("the host passes on no marshal reference to a container still being read (a half-made tuple, hashed, reads freed memory)", () => {
    // ((ref 0 as a dict key),): the tuple, flagged, holds a dict keyed by the tuple itself
    assert.equal(plainMarshal(Uint8Array.of(0xa9, 1, 0x7b, 0x72, 0, 0, 0, 0, 0x4e, 0x30)), false);
    // a code object ('c', with or without its reference flag), whatever follows
    assert.equal(plainMarshal(Uint8Array.of(0x63, 0, 0, 0, 0)), false);
    assert.equal(plainMarshal(Uint8Array.of(0x29, 1, 0xe3, 0, 0, 0, 0)), false);
    assert.equal(plainMarshal(Uint8Array.of(0xdb, 1, 0, 0, 0, 0x72, 0, 0, 0, 0)), false);
    // a reference to a finished container is data (v = [1]; [v, v])
    const dag = Uint8Array.of(0x5b, 2, 0, 0, 0, 0xdb, 1, 0, 0, 0, 0xe9, 1, 0, 0, 0, 0x72, 0, 0, 0, 0);
    assert.equal(plainMarshal(dag), true);
  });
  test("after: a limit or an exit inside a call the tests make ends the run; the runners stay whole and warm", () => {
    const short = { ...limits, cpuMs: 500 };
    const loop = run({
      program: "def f(x):\n    while True: pass\n",
      after: "try:\n    f(1)\nexcept BaseException:\n    pass\n",
      limits: short,
    });
    assert.deepEqual([loop.status, loop.completed], ["time_limit", false]);
    const exit = run({ program: "import os\ndef f(x):\n    os._exit(0)\n", after: "try:\n    f(1)\nexcept BaseException:\n    pass\n" });
    assert.equal(exit.completed, false);
    assert.notEqual(exit.status, "ok");
    const testsLoop = run({ program: "def f(x):\n    return x\n", after: "while f(1): pass\n", limits: short });
    assert.equal(testsLoop.status, "time_limit");
    // each side's clock pauses while the other runs: the budget is the two together (0.4 s in the
    // program, then 0.3 s in the tests, under 0.5 s), by the wall
    const both = run({
      program: "import time\ndef f(x):\n    t = time.monotonic()\n    while time.monotonic() - t < 0.4: pass\n    return x\n",
      after: "import time\nf(1)\nt = time.monotonic()\nwhile time.monotonic() - t < 0.3: pass\n",
      limits: short,
    });
    assert.deepEqual([both.status, both.completed], ["time_limit", false], JSON.stringify(both));
    assert.equal(run({ program: "def f(x):\n    return x * 2\n", after: "assert f(2) == 4\n" }).completed, true);
    // failing tests (an assertion, an exception in a call test, a value that is not data) start no new isolate, on either side
    const isolates = () => runner.stats.isolates + (runner.testsStats?.isolates ?? 0);
    const before = isolates();
    for (let k = 0; k < 3; k++) {
      assert.equal(run({ program: "def f(x):\n    return x\n", after: "assert f(2) == 5\n" }).completed, false);
      assert.equal(run({ program: "def f(x):\n    raise KeyError(x)\n", call: { name: "f", args: [1] } }).status, "runtime_error");
      assert.equal(run({ program: "def f(x):\n    return object()\n", call: { name: "f", args: [1] } }).returnedOpaque, true);
    }
    assert.equal(isolates(), before);
    assert.ok(runner.testsStats !== undefined && runner.testsStats.runs > 0);
  });
  for (const c of PYTHON_TAMPER) {
    test(`tamper: ${c.name} does not pass`, () => {
      const r =
        c.test === "after"
          ? run({ program: c.program, after: c.after ?? TAMPER_AFTER })
          : run({ program: c.program, call: { name: TAMPER_CALL.name, args: [...TAMPER_CALL.args] } });
      if (c.test === "after") assert.equal(r.completed, false, JSON.stringify(r));
      else assert.ok(!r.completed || r.returnedOpaque === true || r.returned !== TAMPER_CALL.expected, JSON.stringify(r));
      // and the next run is clean
      assert.equal(run({ program: "print(6 * 7)" }).stdout, "42\n");
    });
  }
  for (const c of PYTHON_LEAKS) {
    test(`no leak: ${c.name}`, () => {
      const fresh = run({ program: c.probe });
      run({ program: c.setup });
      const next = run({ program: c.probe });
      assert.equal(next.stdout, fresh.stdout);
      assert.equal(next.status, "ok");
    });
  }
  test("a run stopped by its time limit mid-work leaves nothing for the next (the isolate kept, or replaced when it wrote a file)", () => {
    let fresh = PYTHON_LEAKS.map((c) => run({ program: c.probe }).stdout);
    for (const program of PYTHON_INTERRUPTED) {
      const isolates = runner.stats.isolates;
      assert.equal(run({ program, limits: { ...limits, cpuMs: 150, outputBytes: 64 * 1024 * 1024 } }).status, "time_limit");
      const seen = PYTHON_LEAKS.map((c) => run({ program: c.probe }).stdout);
      // a new isolate (the program wrote a file) is fresh by construction, with a random seed of its own
      if (runner.stats.isolates === isolates) assert.deepEqual(seen, fresh);
      else fresh = seen;
    }
    assert.ok(runner.stats.kept >= 1, JSON.stringify(runner.stats));
  });
  for (const c of PYTHON_ESCAPES) {
    test(`no way to JavaScript or raw memory: ${c.name}`, () => {
      const r = run({ program: c.program });
      assert.equal(r.status, "runtime_error", JSON.stringify(r));
      assert.doesNotMatch(r.stdout, /escaped/);
      // and the next run is whole (4 is still 4)
      assert.equal(run({ program: "print(2 + 2)" }).stdout, "4\n");
    });
  }
  test("the imports programs use still work after the runner cut Pyodide's layer away", () => {
    const r = run({
      program:
        "import json, statistics, heapq, collections, re, math, itertools, functools, fractions, decimal\nprint(statistics.mean([1, 2]), json.dumps([1]))",
    });
    assert.deepEqual([r.status, r.stdout], ["ok", "1.5 [1]\n"]);
  });
  test("the tests see the builtins, not the program's top-level names that shadow them (MBPP rows)", () => {
    const shadow =
      "def f(x):\n    return x * 2\nabs = lambda *a: 0\nlen = lambda *a: 5\nisinstance = lambda *a: True\nsorted = lambda *a, **k: [5]\nall = lambda *a: True\n";
    for (const row of [
      "assert abs(f(2) - 5) < 1e-9",
      "assert len(f(2)) == 5",
      "assert isinstance(f(2), str)",
      "assert sorted([f(2)]) == [5]",
      "assert all([f(2) == 5])",
    ]) {
      const r = run({ program: shadow, after: row });
      assert.equal(r.completed, false, row);
    }
    // the program's own names still reach the tests, and a program using them internally still works
    const ok = run({
      program: "def f(x):\n    return abs(x) * 2\nLIMIT = 3\n",
      after: "assert f(-2) == 4 and LIMIT == 3 and abs(-1) == 1\n",
    });
    assert.equal(ok.completed, true, JSON.stringify(ok));
  });
  for (const program of [
    "import os\nos.close(0)",
    "import os\nos.close(1)",
    "import os\nos.close(2)",
    "import os\nos.close(0)\nos.close(1)\nos.close(2)",
    "import os\nfd = os.open('/dev/null', os.O_WRONLY)\nos.dup2(fd, 1)",
    "import os\nfd = os.open('/dev/null', os.O_RDONLY)\nos.dup2(fd, 0)",
    "import os\nos.set_blocking(0, False)\nos.set_blocking(1, False)",
  ]) {
    test(`standard streams are whole for the next runs after: ${program.split("\n").slice(1).join("; ")}`, () => {
      run({ program });
      for (let k = 0; k < 2; k++) {
        const v = run({ program: "import sys\ns = input()\nprint(s)\nprint('e', file=sys.stderr)", stdin: "hi\n" });
        assert.deepEqual([v.status, v.stdout, v.stderr], ["ok", "hi\n", "e\n"], JSON.stringify(v));
      }
    });
  }
  test("call: big integers keep their digits, NaN is not null, a returned DAG is opaque (not expanded)", () => {
    const call = (body: string) => run({ program: `def f(x):\n${body}\n`, call: { name: "f", args: [1] } });
    assert.equal(call("    return 12345678901234567891").returned, 12345678901234567891n);
    assert.deepEqual(call("    return [2**62 + 1000]").returned, [2n ** 62n + 1000n]);
    const nan = call("    return float('nan')").returned;
    assert.ok(nan instanceof NonFiniteFloat && nan.text === "nan");
    const inf = call("    return [float('inf')]").returned as unknown[];
    assert.ok(inf[0] instanceof NonFiniteFloat);
    const dag = call("    v = [1]\n    for _ in range(26): v = [v, v]\n    return v");
    assert.deepEqual([dag.returnedOpaque, dag.returned], [true, undefined]);
    // a small DAG is data
    assert.deepEqual(call("    v = [1]\n    return [v, v]").returned, [[1], [1]]);
    // and a big integer argument reaches the function whole
    assert.equal(
      run({ program: "def f(x):\n    return x + 1\n", call: { name: "f", args: [12345678901234567890n] } }).returned,
      12345678901234567891n,
    );
  });
  test("marshal: JSON data round-trips; non-data is opaque", () => {
    const value = [1, -2, 2 ** 40, 1.5, "héllo", [true, null], { a: [] }];
    const decoded = decodeMarshal(encodeMarshal(value));
    assert.deepEqual(decoded, { ok: true, value });
    assert.deepEqual(decodeMarshal(Uint8Array.of(0x3c, 0, 0, 0, 0)), { ok: false });
  });
});

describe("JavaScript runner", () => {
  const runner = new JsRunner();
  const run = (r: Partial<RunRequest> & { program: string }) => runner.run({ language: "javascript", limits, ...r });
  after(() => runner.dispose());

  test("stdin patterns to stdout", () => {
    assert.equal(
      run({ program: "const [a,b]=require('fs').readFileSync(0,'utf8').trim().split(' ').map(Number); console.log(a+b)", stdin: "2 3" })
        .stdout,
      "5\n",
    );
    const rl =
      "const rl=require('readline').createInterface({input:process.stdin}); let s=0; rl.on('line',l=>s+=+l); rl.on('close',()=>console.log(s))";
    assert.equal(run({ program: rl, stdin: "1\n2\n3\n" }).stdout, "6\n");
    assert.equal(run({ program: "print(+readline() * 2)", stdin: "21\n" }).stdout, "42\n");
    assert.equal(
      run({
        program: "let d='';process.stdin.on('data',c=>d+=c);process.stdin.on('end',()=>process.stdout.write(d.toUpperCase()))",
        stdin: "ab",
      }).stdout,
      "AB",
    );
  });
  test("statuses and limits", () => {
    const e = run({ program: "throw new TypeError('bad')" });
    assert.deepEqual([e.status, e.message], ["runtime_error", "TypeError: bad"]);
    assert.equal(run({ program: "let x = ;" }).status, "syntax_error");
    const x = run({ program: "console.log('hi'); process.exit(3); console.log('no')" });
    assert.deepEqual([x.status, x.exitCode, x.stdout], ["runtime_error", 3, "hi\n"]);
    assert.equal(run({ program: "while (true) {}", limits: { ...limits, cpuMs: 200 } }).status, "time_limit");
    assert.equal(
      run({ program: "const a = []; while (true) a.push(new Array(1e6).fill(1))", limits: { ...limits, memoryMb: 32 } }).status,
      "memory_limit",
    );
    assert.equal(run({ program: "while (true) console.log('xxxxxxxxxx')" }).status, "output_limit");
    assert.equal(run({ program: "function f(n) { return f(n + 1) }\nf(0)" }).status, "runtime_error");
    assert.equal(run({ program: "console.log(6 * 7)" }).stdout, "42\n");
  });
  test("runs release their contexts: 600 runs in one isolate of 16 MB", () => {
    const small = new JsRunner();
    try {
      for (let i = 0; i < 600; i++) {
        const r = small.run({
          language: "javascript",
          program: "console.log(+readline() + 1)",
          stdin: `${i}`,
          limits: { ...limits, memoryMb: 16 },
        });
        assert.equal(r.stdout, `${i + 1}\n`);
      }
      assert.equal(small.stats.isolates, 1);
    } finally {
      small.dispose();
    }
  });
  test("a run's memory limit is capped by the worker's", () => {
    const capped = new JsRunner(16);
    try {
      const r = capped.run({
        language: "javascript",
        program: "const a = []; for (;;) a.push(new Array(1e5).fill(1))",
        limits: { ...limits, memoryMb: 1024 },
      });
      assert.equal(r.status, "memory_limit");
    } finally {
      capped.dispose();
    }
  });
  test("memory outside the isolate's limit is not available: WebAssembly.Memory, resizable and growable buffers", () => {
    const small = { ...limits, memoryMb: 16 };
    const wasm = run({
      program: "const m = new WebAssembly.Memory({ initial: 4800 }); new Uint8Array(m.buffer).fill(7); console.log(m.buffer.byteLength)",
      limits: small,
    });
    assert.equal(wasm.status, "runtime_error", JSON.stringify(wasm));
    assert.match(wasm.message ?? "", /WebAssembly is not defined/);
    const rab = run({
      program: "const b = new ArrayBuffer(1, { maxByteLength: 2 ** 30 }); b.resize(300 * 2 ** 20); console.log(b.byteLength)",
      limits: small,
    });
    assert.equal(rab.status, "runtime_error", JSON.stringify(rab));
    assert.match(rab.message ?? "", /resizable buffers are not available/);
    const sab = run({
      program: "const b = new SharedArrayBuffer(1, { maxByteLength: 2 ** 30 }); b.grow(300 * 2 ** 20); console.log(b.byteLength)",
      limits: small,
    });
    assert.equal(sab.status, "runtime_error", JSON.stringify(sab));
    // ordinary buffers and typed arrays still work
    assert.equal(run({ program: "console.log(new Uint8Array(new ArrayBuffer(1024)).length)", limits: small }).stdout, "1024\n");
  });
  test("call and after", () => {
    assert.deepEqual(run({ program: "function f(a,b){return {s:a+b,l:[a,b]}}", call: { name: "f", args: [1, 2] } }).returned, {
      s: 3,
      l: [1, 2],
    });
    assert.equal(
      run({ program: "class Solution { n(a){ return a.length } }", call: { name: "Solution.n", args: [[1, 2, 3]] } }).returned,
      3,
    );
    assert.equal(run({ program: "const f = (x) => x * 2", after: "if (f(2) !== 4) throw new Error('no')" }).completed, true);
  });
  test("after: the tests run in their own realm and call the program's names with copies", () => {
    const ok = (program: string, after: string) => {
      const r = run({ program, after });
      assert.equal(r.completed, true, `${after}: ${JSON.stringify(r)}`);
      return r;
    };
    // MultiPL-E's shape, the program's const and function declarations, copies of plain data
    ok(
      "const LIMIT = { n: 3 };\nfunction pairs(n) { return new Map([[n, [n, n]]]); }\nconst add = (a, b) => a + b;",
      "const assert = require('node:assert');\nfunction test() {\n  let candidate = add;\n  assert.deepEqual(candidate(2, 3), 5);\n  assert.deepEqual(pairs(2).get(2), [2, 2]);\n  assert.equal(LIMIT.n, 3);\n}\ntest();",
    );
    // a program's exception is the tests' own builtin of that name (assert.throws checks the class)
    ok(
      "function f(x) { if (x < 0) throw new RangeError('negative'); class Bad extends TypeError {} if (x === 0) throw new Bad('zero'); return x; }",
      "const assert = require('assert');\nassert.throws(() => f(-1), RangeError);\nassert.throws(() => f(0), TypeError);\nassert.equal(f(1), 1);",
    );
    // what the program prints, then what the tests print
    assert.equal(
      ok("console.log('p');\nfunction f(x) { console.log('in f'); return x; }", "f(1);\nconsole.log('t');").stdout,
      "p\nin f\nt\n",
    );
    // what the tests printed is kept when they fail
    const failing = run({ program: "function f(x) { return x }", after: "console.log('t');\nthrow new Error('no');" });
    assert.deepEqual([failing.completed, failing.stdout], [false, "t\n"]);
    // a function passed to the program is no copy: an error worded for a person
    const fn = run({ program: "function f(g) { return g(1) }", after: "if (f((x) => x) !== 1) throw new Error('no')" });
    assert.equal(fn.completed, false);
    assert.match(fn.message ?? "", /not plain data/);
    // a class of the program's constructed by the tests: an error that says what happened
    const made = run({ program: "class Stack { constructor() { this.a = [] } }", after: "const s = new Stack();" });
    assert.match(made.message ?? "", /new Stack\(\): the tests cannot construct the program's classes/);
    // process.exit inside a call the tests make: not completed, whatever the tests catch
    const exit = run({ program: "function f(x) { process.exit(0) }", after: "try { f(1) } catch {}" });
    assert.equal(exit.completed, false);
    // a program's loop inside a call: the run's time limit
    const loop = run({ program: "function f(x) { for (;;) {} }", after: "try { f(1) } catch {}", limits: { ...limits, cpuMs: 300 } });
    assert.deepEqual([loop.status, loop.completed], ["time_limit", false]);
  });
  test("after: what crosses to the tests is data made before the clone: bounded, with no object of the program's", () => {
    const small = { ...limits, memoryMb: 64 };
    // a 10 MB string repeated 20 times is 200 MB once cloned (outside the isolate's limit; the value's went through the host's heap)
    const fanOut = run({ program: "const s = 'x'.repeat(1e7);\nfunction f() { return Array(20).fill(s); }", after: "f();", limits: small });
    assert.deepEqual([fanOut.status, fanOut.completed], ["runtime_error", false], JSON.stringify(fanOut));
    assert.match(fanOut.message ?? "", /^TypeError: f returned a value that cannot cross to the tests as a copy: it is larger than 16 MB/);
    const value = run({
      program: "const s = 'x'.repeat(1e7);\nconst BIG = Array(20).fill(s);",
      after: "if (typeof BIG !== 'undefined') throw new Error('copied');",
      limits: small,
    });
    assert.deepEqual([value.status, value.completed], ["ok", true], JSON.stringify(value));
    // a getter that throws a Proxy while the value is copied: the tests catch their own error, never the program's object
    const proxy = run({
      program: "function f(x) { return { get a() { throw new Proxy({}, { get: () => 5 }); } }; }",
      after:
        "let e;\ntry { f(2); } catch (x) { e = x; }\nif (!(e instanceof Error) || e.anything !== undefined) throw new Error('a program object reached the tests');",
    });
    assert.equal(proxy.completed, true, JSON.stringify(proxy));
    // honest values keep what structured clone kept: cycles, shared parts, holes, -0, NaN, undefined, bigint, Map, Set, Date, RegExp, typed arrays, errors
    const honest = run({
      program:
        "function f() {\n  const o = { n: -0, u: undefined, b: 10n, nan: NaN };\n  o.self = o;\n  const shared = [1];\n  const holes = [1, , 3];\n  return [o, shared, shared, holes, new Map([[1, { k: 'v' }]]), new Set(['a']), new Date(5), /a+/gi, new Float64Array([1.5]), new RangeError('r')];\n}",
      after:
        "const assert = require('assert');\nconst [o, s1, s2, holes, m, set, d, re, ta, e] = f();\nassert.ok(o.self === o && Object.is(o.n, -0) && 'u' in o && o.u === undefined && o.b === 10n && Number.isNaN(o.nan));\nassert.ok(s1 === s2 && holes.length === 3 && !(1 in holes));\nassert.ok(m instanceof Map && m.get(1).k === 'v' && set instanceof Set && set.has('a'));\nassert.ok(d instanceof Date && d.getTime() === 5 && re instanceof RegExp && re.source === 'a+' && re.flags === 'gi');\nassert.ok(ta instanceof Float64Array && ta[0] === 1.5 && e instanceof RangeError && e.message === 'r');",
    });
    assert.equal(honest.completed, true, JSON.stringify(honest));
  });
  for (const c of JS_TAMPER) {
    test(`tamper: ${c.name} does not pass`, () => {
      const r =
        c.test === "after"
          ? run({ program: c.program, after: c.after ?? JS_TAMPER_AFTER })
          : run({ program: c.program, call: { name: TAMPER_CALL.name, args: [...TAMPER_CALL.args] } });
      if (c.test === "after") assert.equal(r.completed, false, JSON.stringify(r));
      else assert.ok(!r.completed || r.returnedOpaque === true || r.returned !== TAMPER_CALL.expected, JSON.stringify(r));
    });
  }
  for (const c of JS_LEAKS) {
    test(`no leak: ${c.name}`, () => {
      const fresh = run({ program: c.probe });
      run({ program: c.setup });
      assert.equal(run({ program: c.probe }).stdout, fresh.stdout);
    });
  }
});

describe("TypeScript runner", () => {
  const js = new JsRunner();
  const ts = new ScriptRunner(() => js, "ts");
  const run = (program: string, after?: string) =>
    ts.run({ language: "typescript", limits, program, ...(after === undefined ? {} : { after }) });
  after(() => js.dispose());

  test("a source esbuild would take minutes over, or crash its service on, never reaches it; later programs still compile", () => {
    // 300 nested arrows: seconds in esbuild (the cube of the nesting), the validator's nesting bound refuses them
    const arrows = run(
      `const g = ${"a=>".repeat(300)}1;\nfunction f(x: number): number { return x * 2 }`,
      "if (f(2) !== 4) throw new Error('no')",
    );
    assert.equal(arrows.status, "syntax_error", JSON.stringify(arrows));
    assert.match(arrows.message ?? "", /^SyntaxError: the source is nested 129 levels deep at line 1.* \(program\)$/);
    // 300 000 `!` overflowed esbuild's stack: its service stopped, and every later TypeScript run of the worker was a syntax_error
    const bangs = run(`const v = ${"!".repeat(300_000)}1;`);
    assert.equal(bangs.status, "syntax_error", JSON.stringify(bangs));
    assert.match(bangs.message ?? "", /^SyntaxError: the TypeScript program is 300012 characters; at most 131072 are compiled$/);
    const tests = run("function f(x: number): number { return x * 2 }", `const v = ${"!".repeat(300_000)}1;`);
    assert.match(tests.message ?? "", /^SyntaxError: the TypeScript tests is/);
    const honest = run(
      "class A { x!: number; y = 1 }\nfunction f(x: number): number { return x * 2 }",
      "if (f(2) !== 4) throw new Error('no')",
    );
    assert.deepEqual([honest.status, honest.completed], ["ok", true], JSON.stringify(honest));
  });

  test("a source within those bounds that esbuild compiles slowly or into much memory is a syntax_error, the worker's memory untouched", () => {
    // cpuMs 10: the compile's deadline is its floor, 500 ms
    const quick = { ...limits, cpuMs: 10 };
    const rssBefore = process.memoryUsage.rss();
    // the security report: 15 000 "Invalid assignment target" errors, each with its 30 KB line, were 450 MB of
    // messages that grew the worker 2.5 GB over 8-38 s (GRADER_MEMORY_LIMIT, the worker replaced)
    const reported = ts.run({ language: "typescript", limits: quick, program: `const f = ${"-".repeat(30_000)} 1;\nconsole.log(1)\n` });
    assert.equal(reported.status, "syntax_error", JSON.stringify(reported));
    assert.match(reported.message ?? "", /^SyntaxError: Invalid assignment target \(program line 1, column \d+\)$/);
    const esm = new ScriptRunner(() => js, "js").run({
      language: "javascript",
      limits: quick,
      program: `import fs from 'fs';\nconst f = ${"-".repeat(30_000)} 1;\n`,
    });
    assert.match(esm.message ?? "", /^SyntaxError: Invalid assignment target \(program line 2, column \d+\)$/);
    // past the compile's memory (flat chains that nest deep in esbuild's parser) or its deadline (`a<a<…` in TypeScript,
    // declarations of one name: minutes without a deadline)
    const bound = /^SyntaxError: the TypeScript program (took longer than 500 ms|needed more than 256 MB) to compile; simplify it/;
    // whether the flat chains reach the memory bound or end in esbuild's own first error depends on the machine;
    // either way the program is a syntax_error. The two that parse for seconds always reach the deadline.
    for (const [program, slow] of [
      [`const f = ${"-".repeat(60_000)} 1;`, false],
      [`${"a:".repeat(60_000)}1;`, false],
      [`const f = ${"a<".repeat(60_000)}a;`, true],
      ["let a;".repeat(20_000), true],
    ] as const) {
      const r = ts.run({ language: "typescript", limits: quick, program });
      assert.equal(r.status, "syntax_error", `${program.slice(0, 20)}: ${JSON.stringify(r)}`);
      assert.match(r.message ?? "", slow ? bound : /^SyntaxError: /, program.slice(0, 20));
    }
    // the messages stay in esbuild's process: the worker did not grow by them
    assert.ok(process.memoryUsage.rss() - rssBefore < 64 * 1024 * 1024, `grew by ${process.memoryUsage.rss() - rssBefore} bytes`);
    const honest = run("function f(x: number): number { return x * 2 }", "if (f(2) !== 4) throw new Error('no')");
    assert.deepEqual([honest.status, honest.completed], ["ok", true], JSON.stringify(honest));
  });
});

describe("the engine grades a code grader with its runners", () => {
  test("per item: the watch is begun and ended in pairs, paused while a runner is replaced; verdicts per test", () => {
    const events: string[] = [];
    const watch = {
      begin: (from: number) => void events.push(`begin ${from}`),
      end: () => void events.push("end"),
    };
    const engine = new Engine({ timeoutMs: 1000, memoryMb: 128, maxWarm: 4, maxWarmHeapMb: 256 }, { watch });
    try {
      const io = (inputs: string[], outputs: string[]) => ({ input_output: { inputs, outputs } });
      const item = (program: string) => ({
        turns: [
          { role: "user" as const, content: "add" },
          { role: "assistant" as const, content: `\`\`\`python\n${program}\n\`\`\`` },
        ],
        metadata: io(["1 2\n", "3 4\n", "5 6\n"], ["3\n", "7\n", "11\n"]),
      });
      const grader = { id: "code-engine", project: "p", language: "code" as const, compiled: JSON.stringify({ limits: { cpuMs: 300 } }) };
      const outcomes = engine.gradeBatch(
        grader,
        packBatch([
          item("a, b = map(int, input().split())\nprint(a + b)"),
          // a file written, then a time limit, on the first test only: its runner is replaced before the second
          item("a, b = map(int, input().split())\nif a == 1:\n    open('/tmp/t', 'w').write('x')\n    while True: pass\nprint(a + b)"),
          item("a, b = map(int, input().split())\nprint(a * b)"),
        ]),
      );
      assert.deepEqual(
        outcomes.map((o) => ("score" in o ? o.score : o)),
        [1, 2 / 3, 0],
      );
      // begins and ends alternate, and each item's begin names it
      for (let k = 0; k < events.length; k += 2) {
        assert.match(events[k], /^begin [0-2]$/);
        assert.equal(events[k + 1], "end");
      }
      // item 1's replacement paused its watch once: four pairs for three items
      assert.deepEqual(
        events.filter((e) => e.startsWith("begin")),
        ["begin 0", "begin 1", "begin 1", "begin 2"],
      );
    } finally {
      engine.dispose();
    }
  });
});

describe("a worker's runners are per project", () => {
  test("another project's runs never share a runner (isolate); the least recently used project's Python runner is disposed past the bound", () => {
    const template = makeTemplate(128);
    const runners = new CodeRunners(() => template, 128);
    try {
      const req = { language: "python" as const, limits, program: "print(6 * 7)" };
      const seen = new Map<string, PythonRunner>();
      for (const project of ["a", "b"]) {
        runners.select(project);
        const r = runners.runnerFor("python") as PythonRunner;
        assert.equal(r.run(req).stdout, "42\n");
        seen.set(project, r);
      }
      assert.notEqual(seen.get("a"), seen.get("b"));
      runners.select("a");
      assert.equal(runners.runnerFor("python"), seen.get("a"));
      assert.equal(runners.runnerFor("javascript"), runners.runnerFor("javascript"));
      runners.select("b");
      const jsB = runners.runnerFor("javascript");
      runners.select("a");
      assert.notEqual(runners.runnerFor("javascript"), jsB);
      // a third project: "b" (used least recently) gives its isolate back; "a" keeps its own
      runners.select("c");
      assert.equal((runners.runnerFor("python") as PythonRunner).run(req).stdout, "42\n");
      assert.equal(runners.pythonCount, MAX_PYTHON_RUNNERS);
      assert.equal(seen.get("b")?.started, false);
      assert.equal(seen.get("a")?.started, true);
      runners.select("b");
      const fresh = runners.runnerFor("python") as PythonRunner;
      assert.notEqual(fresh, seen.get("b"));
      assert.equal(fresh.run(req).stdout, "42\n");
      assert.equal(fresh.stats.isolates, 1);
    } finally {
      runners.dispose();
      releaseTemplate(template);
    }
  });
});

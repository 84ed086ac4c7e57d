// The hostile corpus for Python graders: each registered through the real API with
// `language: "python"` and, where it validates, graded with the attack switched on. For every
// one: the host's file system, environment and network stay untouched, the API process stays
// up, the grader gets its error (or its probe finds nothing), and a healthy grader of each
// language keeps answering correctly during and after.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";
import { type HostWatch, watchHost } from "./support/host-watch.ts";

/**
 * `check`: refused at registration by that check. `code`: the attacked item fails with one of
 * these codes. `score`: the probe reports what it found (0: nothing of the host). `safe`: either
 * an error of these codes or a score of 0, where the interpreter may fail either way and both
 * are harmless; the marker, canary and listener still decide.
 */
type Expect = { check: string | string[] } | { code: string | string[] } | { score: number } | { safe: string[] };
interface Hostile {
  name: string;
  /** the grader's body after the gate, indented by 4 */
  body: string;
  /** module-level lines before `async def grade` */
  head?: string;
  expect: Expect;
}

const grader = (h: Pick<Hostile, "body" | "head">) =>
  `${h.head ?? ""}\nasync def grade(thread):\n    m = thread.metadata\n    if not m.get("attack"):\n        return 0.5\n    MARKER = m["marker"]\n    PORT = m["port"]\n${h.body
    .split("\n")
    .map((l) => `    ${l}`)
    .join("\n")}\n`;

/** What the probes look for in a JavaScript global reached from Python. */
const HOST_NAMES =
  "process|require|Buffer|fetch|setImmediate|WebAssembly|SharedArrayBuffer|Atomics|__gradebox_host|__gradebox_py|ivm|module";
/**
 * Global functions in native code beyond V8's own lower-case ones would be the host's: Emscripten's
 * shell glue defines `setTimeout ??= f => f()` and a `clearTimeout` in the isolate, which are not.
 */
const NATIVE = `g.Function("return Object.getOwnPropertyNames(globalThis).filter(function (n) { var v = globalThis[n]; return typeof v === 'function' && n[0] === n[0].toLowerCase() && Function.prototype.toString.call(v).indexOf('native code') >= 0; }).join(' ')")()`;
const V8_NATIVE = "eval isFinite isNaN parseFloat parseInt decodeURI decodeURIComponent encodeURI encodeURIComponent escape unescape";

/** an import the static check cannot see: the runtime alone must hold it */
const IMP = `import builtins\nIMP = getattr(builtins, "__im" + "port__")`;

/** every JavaScript global Python can get hold of, by each route tried: the isolate's own, or none */
const REACH = `${IMP}

def reach():
    found = []
    routes = (
        lambda: IMP("js").globalThis,
        lambda: IMP("js").Object.constructor("return globalThis")(),
        lambda: IMP("pyodide_js").constructor.constructor("return globalThis")(),
        lambda: IMP("pyodide.code", fromlist=["run_js"]).run_js("globalThis"),
        lambda: IMP("pyodide.ffi", fromlist=["JsProxy"]).JsProxy,
    )
    for route in routes:
        try:
            g = route()
            g.Function
            found.append(g)
        except Exception:
            pass
    return found`;
const PROBE_NAMES = `import re\nfor g in reach():\n    names = [str(n) for n in g.Object.getOwnPropertyNames(g)]\n    if any(re.fullmatch(r"${HOST_NAMES}", n) for n in names):\n        return 1\n    if set(str(${NATIVE}).split()) - set("${V8_NATIVE}".split()):\n        return 2\nreturn 0`;

const corpus: Record<string, Hostile[]> = {
  processes: [
    { name: "os.system", body: `import os\nos.system("touch " + MARKER)\nreturn 0`, expect: { safe: ["GRADER_ERROR"] } },
    { name: "os.popen", body: `import os\nos.popen("touch " + MARKER).read()\nreturn 0`, expect: { safe: ["GRADER_ERROR"] } },
    {
      name: "import subprocess is refused at the check",
      head: "import subprocess",
      body: `subprocess.run(["touch", MARKER])\nreturn 0`,
      expect: { check: "structure" },
    },
    { name: "import socket is refused at the check", head: "import socket", body: "return 0", expect: { check: "structure" } },
    { name: "import ctypes is refused at the check", head: "import ctypes", body: "return 0", expect: { check: "structure" } },
    { name: "import js is refused at the check", head: "import js", body: "return 0", expect: { check: "structure" } },
    { name: "__import__() is refused at the check", body: `__import__("os")\nreturn 0`, expect: { check: "structure" } },
    {
      name: "subprocess imported where the check cannot see it",
      head: IMP,
      body: `sp = IMP("subprocess")\nsp.run(["touch", MARKER])\nreturn 0`,
      expect: { safe: ["GRADER_ERROR"] },
    },
    { name: "os.fork", body: `import os\npid = os.fork()\nreturn 0`, expect: { safe: ["GRADER_ERROR"] } },
    { name: "os.execv", body: `import os\nos.execv("/bin/touch", ["touch", MARKER])\nreturn 0`, expect: { safe: ["GRADER_ERROR"] } },
    {
      name: "multiprocessing",
      head: IMP,
      body: `mp = IMP("multiprocessing")\np = mp.Process(target=print)\np.start()\nreturn 0`,
      expect: { safe: ["GRADER_ERROR"] },
    },
    {
      name: "threading",
      head: IMP,
      body: `threading = IMP("threading")\nt = threading.Thread(target=lambda: None)\nt.start()\nreturn 0`,
      expect: { safe: ["GRADER_ERROR"] },
    },
    { name: "os.kill of the parent", body: `import os\nos.kill(os.getppid(), 9)\nreturn 0`, expect: { safe: ["GRADER_ERROR"] } },
    { name: "sys.exit", body: `import sys\nsys.exit(0)`, expect: { code: "GRADER_ERROR" } },
    { name: "os._exit", body: `import os\nos._exit(0)`, expect: { code: ["GRADER_ERROR", "SANDBOX_CRASHED"] } },
    { name: "os.abort", body: `import os\nos.abort()`, expect: { code: ["GRADER_ERROR", "SANDBOX_CRASHED"] } },
  ],
  network: [
    {
      name: "socket to the host",
      head: IMP,
      body: `s = IMP("socket")\nc = s.create_connection(("127.0.0.1", PORT), timeout=1)\nreturn 1`,
      expect: { safe: ["GRADER_ERROR"] },
    },
    {
      name: "urllib to the host",
      head: IMP,
      body: `u = IMP("urllib.request", fromlist=["urlopen"])\nu.urlopen(f"http://127.0.0.1:{PORT}/", timeout=1)\nreturn 1`,
      expect: { safe: ["GRADER_ERROR"] },
    },
    {
      name: "http.client to the host",
      head: IMP,
      body: `h = IMP("http.client", fromlist=["HTTPConnection"])\nc = h.HTTPConnection("127.0.0.1", PORT, timeout=1)\nc.request("GET", "/")\nreturn 1`,
      expect: { safe: ["GRADER_ERROR"] },
    },
    {
      name: "asyncio.open_connection",
      body: `import asyncio\nr, w = await asyncio.open_connection("127.0.0.1", PORT)\nreturn 1`,
      expect: { safe: ["GRADER_ERROR"] },
    },
    {
      name: "fetch through js",
      head: IMP,
      body: `js = IMP("js")\nf = getattr(js, "fetch", None)\nif f is None:\n    return 0\nf(f"http://127.0.0.1:{PORT}/")\nreturn 1`,
      expect: { safe: ["GRADER_ERROR"] },
    },
    {
      name: "loadPackage from the network",
      head: IMP,
      body: `pyodide_js = IMP("pyodide_js")\npyodide_js.loadPackage("numpy")\nreturn 0`,
      expect: { safe: ["GRADER_ERROR"] },
    },
  ],
  "files and environment": [
    {
      name: "open() on a host path",
      body: `try:\n    return 1 if "root:" in open("/etc/passwd").read() else 0\nexcept OSError:\n    return 0`,
      expect: { score: 0 },
    },
    {
      name: "write the marker path",
      body: `open(MARKER, "w").write("escaped")\nreturn 0`,
      expect: { safe: ["GRADER_ERROR"] },
    },
    {
      name: "os.environ holds nothing of the host",
      body: `import os\nreturn 1 if any("GRADEBOX" in k or "canary" in v for k, v in os.environ.items()) else 0`,
      expect: { score: 0 },
    },
    {
      name: "/proc/self/environ",
      body: `try:\n    return 1 if b"GRADEBOX" in open("/proc/self/environ", "rb").read() else 0\nexcept OSError:\n    return 0`,
      expect: { score: 0 },
    },
    {
      name: "the checkout is not mounted",
      body: `import os\nfor p in ("/work", "/root", "/home", "/usr/lib/node_modules"):\n    if os.path.exists(p + "/package.json") or os.path.exists(p + "/main"):\n        return 1\nreturn 0`,
      expect: { score: 0 },
    },
    {
      name: "ctypes",
      head: IMP,
      body: `c = IMP("ctypes")\nc.CDLL(None).system(("touch " + MARKER).encode())\nreturn 0`,
      expect: { safe: ["GRADER_ERROR"] },
    },
  ],
  // Python reaches the isolate's JavaScript as a JavaScript grader does (or not at all): every
  // route is tried, and whatever global it reaches must hold nothing of the host
  "the isolate's JavaScript": [
    { name: "host names on any global Python reaches", head: REACH, body: PROBE_NAMES, expect: { score: 0 } },
    {
      name: "Function('return process') from any global",
      head: REACH,
      body: `for g in reach():
    if g.Function("return typeof process !== 'undefined' || typeof require !== 'undefined'")():
        return 1
return 0`,
      expect: { score: 0 },
    },
    {
      name: "WebAssembly is gone from every global",
      head: REACH,
      body: `for g in reach():
    if g.Function("return typeof WebAssembly !== 'undefined'")():
        return 1
return 0`,
      expect: { score: 0 },
    },
    {
      name: "the Emscripten module holds no host reference",
      head: REACH,
      body: `for g in reach():
    try:
        keys = [str(k) for k in g.Object.keys(IMP("pyodide_js")._module)]
    except Exception:
        continue
    if any(k in ("process", "require", "ivm", "__gradebox_host") for k in keys):
        return 1
return 0`,
      expect: { score: 0 },
    },
    {
      name: "eval that writes the marker through require",
      head: REACH,
      body: `for g in reach():
    try:
        g.eval("require('fs').writeFileSync(" + repr(MARKER) + ", 'x')")
        return 1
    except Exception:
        pass
return 0`,
      expect: { score: 0 },
    },
    {
      name: "replacing the grade hook after install",
      head: REACH,
      body: `for g in reach():
    try:
        g.__gradebox_grade = g.eval("() => 1")
    except Exception:
        pass
return 0`,
      expect: { score: 0 },
    },
    {
      name: "an ArrayBuffer of 1 GB through any global",
      head: REACH,
      body: `for g in reach():
    b = g.ArrayBuffer.new(1 << 30)
return 0`,
      expect: { safe: ["GRADER_ERROR", "GRADER_MEMORY_LIMIT"] },
    },
  ],
  time: [
    { name: "while True", body: `while True:\n    pass`, expect: { code: "GRADER_TIMEOUT" } },
    {
      name: "catastrophic regex in C",
      body: `import re\nreturn 1 if re.match(r"(a+)+$", "a" * 40 + "b") else 0`,
      expect: { code: "GRADER_TIMEOUT" },
    },
    { name: "a huge sum in C", body: `return sum(range(10**13))`, expect: { code: "GRADER_TIMEOUT" } },
    { name: "time.sleep", body: `import time\ntime.sleep(30)\nreturn 0`, expect: { code: ["GRADER_TIMEOUT", "GRADER_ERROR"] } },
    {
      name: "an await that never completes",
      body: `import asyncio\nawait asyncio.Event().wait()\nreturn 0`,
      expect: { code: ["GRADER_ERROR", "GRADER_TIMEOUT"] },
    },
  ],
  recursion: [
    { name: "unbounded recursion", body: `def f(n):\n    return f(n + 1)\nreturn f(0)`, expect: { code: "GRADER_ERROR" } },
    {
      name: "recursion with the limit raised",
      body: `import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1)\nreturn f(0)`,
      expect: { code: ["GRADER_ERROR", "GRADER_MEMORY_LIMIT"] },
    },
    {
      name: "deeply nested data to json",
      body: `import json\nx = []\nfor _ in range(10**6):\n    x = [x]\nreturn len(json.dumps(x))`,
      expect: { code: ["GRADER_ERROR", "GRADER_MEMORY_LIMIT"] },
    },
  ],
  memory: [
    { name: "bytearray of 1 GB", body: `b = bytearray(10**9)\nreturn 0`, expect: { code: "GRADER_MEMORY_LIMIT" } },
    {
      name: "a list of strings that grows",
      body: `x = []\nwhile True:\n    x.append(" " * 10**6 + str(len(x)))`,
      expect: { code: ["GRADER_MEMORY_LIMIT", "GRADER_TIMEOUT"] },
    },
    { name: "a string of 10 GB", body: `return len("a" * 10**10)`, expect: { code: ["GRADER_MEMORY_LIMIT", "GRADER_ERROR"] } },
    {
      name: "a dict that grows",
      body: `d = {}\ni = 0\nwhile True:\n    d[i] = (i, str(i))\n    i += 1`,
      expect: { code: ["GRADER_MEMORY_LIMIT", "GRADER_TIMEOUT"] },
    },
    {
      name: "a huge power",
      body: `return pow(10, 10**10) % 7`,
      expect: { code: ["GRADER_MEMORY_LIMIT", "GRADER_TIMEOUT", "GRADER_ERROR"] },
    },
  ],
  "forged results": [
    {
      name: "a float subclass with a lying __float__ and __repr__",
      head: `class F(float):\n    def __float__(self):\n        return 1.0\n    def __repr__(self):\n        return "1.0"\n    __str__ = __repr__`,
      body: `return F(0.25)`,
      // read as the plain number it holds, none of its methods run: not the 1.0 it claims
      expect: { score: 0.25 },
    },
    {
      name: "an object with __float__ and __index__",
      head: `class N:\n    def __float__(self):\n        return 1.0\n    def __index__(self):\n        return 1`,
      body: `return N()`,
      expect: { code: "INVALID_SCORE" },
    },
    { name: "a bool", body: `return True`, expect: { code: "INVALID_SCORE" } },
    { name: "nan", body: `return float("nan")`, expect: { code: "INVALID_SCORE" } },
    { name: "inf in a dict", body: `return {"score": float("inf")}`, expect: { code: "INVALID_SCORE" } },
    { name: "a reason of 10 MB", body: `return {"score": 1.0, "reason": "x" * 10**7}`, expect: { code: "INVALID_SCORE" } },
    {
      name: "metadata that is not JSON",
      body: `return {"score": 1.0, "metadata": {"s": {1, 2}}}`,
      expect: { code: "INVALID_SCORE" },
    },
    {
      name: "a dict that refers to itself",
      body: `d = {"score": 1.0, "metadata": {}}\nd["metadata"]["self"] = d\nreturn d`,
      expect: { code: "INVALID_SCORE" },
    },
    {
      name: "json.dumps patched to forge the reply",
      body: `import json\njson.dumps = lambda *a, **k: '1}.s1.s1.s1'\nreturn {"score": 0.0, "reason": "x"}`,
      expect: { safe: ["INVALID_SCORE", "GRADER_ERROR"] },
    },
    {
      name: "the runtime module patched",
      body: `import sys\nfor name, mod in list(sys.modules.items()):\n    if name.startswith("gradebox"):\n        for attr in ("grade", "check", "load"):\n            if hasattr(mod, attr):\n                setattr(mod, attr, lambda *a, **k: 1.0)\nreturn 0`,
      expect: { score: 0 },
    },
  ],
};

let s: TestServer;
let host: HostWatch;
const base = "/v1/projects/pyhostile/graders";

before(async () => {
  // before the server starts: its workers inherit the environment the canary is in
  host = await watchHost();
  s = await startServer({ env: { GRADEBOX_TIMEOUT_MS: "1000", GRADEBOX_MEMORY_MB: "128" } });
  const ts = await call(s.app, "POST", base, { key: "healthy-ts", source: "async (t) => (t.completion() === 'yes' ? 1 : 0)" });
  assert.equal(ts.status, 201, JSON.stringify(ts.body));
  const py = await call(s.app, "POST", base, {
    key: "healthy-py",
    language: "python",
    source: 'async def grade(thread):\n    return 1.0 if thread.completion() == "yes" else 0.0\n',
  });
  assert.equal(py.status, 201, JSON.stringify(py.body));
});
after(async () => {
  host.close();
  await s.close();
});

async function healthy() {
  for (const key of ["healthy-ts", "healthy-py"]) {
    const res = await call(s.app, "POST", `${base}/${key}/grade-batch`, { threads: [thread("yes"), thread("no")] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(
      res.body.results,
      [
        { outcome: "scored", score: 1 },
        { outcome: "scored", score: 0 },
      ],
      key,
    );
  }
}

const count = Object.values(corpus).flat().length;
test(`the Python corpus holds at least 40 hostile graders (${count})`, () => {
  assert.ok(count >= 40);
});

let n = 0;
for (const [technique, graders] of Object.entries(corpus)) {
  describe(technique, () => {
    for (const h of graders) {
      test(h.name, async () => {
        const key = `p${n++}`;
        const during = healthy();
        const created = await call(s.app, "POST", base, { key, language: "python", source: grader(h) });
        if ("check" in h.expect) {
          const checks = ([] as string[]).concat(h.expect.check);
          assert.equal(created.status, 422, JSON.stringify(created.body));
          assert.ok(checks.includes(created.body.check), `${created.body.check}: ${created.body.message}`);
          assert.equal(await s.store.get("pyhostile", key), undefined);
        } else {
          assert.equal(created.status, 201, JSON.stringify(created.body));
          const res = await call(s.app, "POST", `${base}/${key}/grade-batch`, {
            threads: [thread("x", { attack: true, marker: host.marker, port: host.port }), thread("x")],
          });
          assert.equal(res.status, 200, JSON.stringify(res.body));
          const [attacked, plain] = res.body.results;
          const shown = JSON.stringify(attacked).slice(0, 400);
          if ("score" in h.expect) {
            assert.deepEqual(attacked, { outcome: "scored", score: h.expect.score }, `the probe found nothing of the host: ${shown}`);
          } else {
            const codes = "code" in h.expect ? ([] as string[]).concat(h.expect.code) : h.expect.safe;
            const harmless = "safe" in h.expect && attacked.score === 0;
            assert.ok(harmless || (attacked.error && codes.includes(attacked.error.code)), `expected ${codes} got ${shown}`);
            if (attacked.error) {
              assert.ok(attacked.error.message.length <= 2100, "error messages are bounded");
              assert.doesNotMatch(attacked.error.message, /\/work\/|node_modules|node:internal/, "no host paths in errors");
            }
          }
          assert.deepEqual(plain, { outcome: "scored", score: 0.5 }, "the same grader still grades the next item");
        }
        await during;
        await healthy();
        host.assertUntouched();
      });
    }
  });
}

describe("one grader cannot see another", () => {
  const writer = `import builtins, sys, os, json\nasync def grade(thread):\n    builtins.LEAK = 1\n    json.LEAK = 1\n    os.makedirs("/tmp/shared", exist_ok=True)\n    open("/tmp/shared/leak.txt", "w").write("leak")\n    os.environ["LEAK"] = "1"\n    return 1.0\n`;
  const reader = `import builtins, os, json\nasync def grade(thread):\n    seen = [hasattr(builtins, "LEAK"), hasattr(json, "LEAK"), os.path.exists("/tmp/shared/leak.txt"), "LEAK" in os.environ]\n    return float(sum(seen))\n`;
  test("module state, files and environment written by one grader are not seen by another", async () => {
    assert.equal((await call(s.app, "POST", base, { key: "writer", language: "python", source: writer })).status, 201);
    assert.equal((await call(s.app, "POST", base, { key: "reader", language: "python", source: reader })).status, 201);
    assert.deepEqual((await call(s.app, "POST", `${base}/writer/grade`, { thread: thread("x") })).body.score, 1);
    assert.deepEqual((await call(s.app, "POST", `${base}/reader/grade`, { thread: thread("x") })).body.score, 0);
  });

  test("random state is not shared: two graders restored from one snapshot draw different numbers", async () => {
    const source = `import random, os\nasync def grade(thread):\n    return {"score": 0.0, "metadata": {"r": random.random(), "u": os.urandom(8).hex()}}\n`;
    const draws: Array<{ r: number; u: string }> = [];
    for (const key of ["rand-a", "rand-b"]) {
      assert.equal((await call(s.app, "POST", base, { key, language: "python", source })).status, 201);
      const res = await call(s.app, "POST", `${base}/${key}/grade`, { thread: thread("x") });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      draws.push(res.body.metadata);
    }
    assert.notEqual(draws[0].r, draws[1].r, "random.random() differs between graders");
    assert.notEqual(draws[0].u, draws[1].u, "os.urandom differs between graders");
  });
});

test("after the whole corpus: the server is up, nothing escaped", async () => {
  assert.equal((await s.app.inject({ method: "GET", url: "/healthz" })).statusCode, 200);
  await healthy();
  host.assertUntouched();
});

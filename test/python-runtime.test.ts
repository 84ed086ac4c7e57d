// The Python runtime (sandbox/python/): Pyodide in the grader's own isolate, restored from the
// worker's template, graded through the real pool and worker processes. One pool for the file:
// its worker boots the template once (seconds), every test after that restores isolates from it.

import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { SandboxPool } from "../sandbox/host/pool.ts";
import type { GradeOutcome } from "../sandbox/validate/checks.ts";
import { thread } from "./support/helpers.ts";

const MB = 1024 * 1024;
const limits = { timeoutMs: 1000, memoryMb: 64, maxWarm: 16, maxWarmHeapMb: 1024 };
let pool: SandboxPool;
const exits: Array<{ code: number | null; signal: string | null }> = [];
let graders = 0;

const py = (compiled: string) => ({ id: `py-${++graders}`, project: "p", language: "python" as const, compiled });
const scoreOf = (o: GradeOutcome | undefined) => (o && "score" in o ? o.score : o);
const errorOf = (o: GradeOutcome | undefined) => {
  assert.ok(o && "error" in o, `expected an error, got ${JSON.stringify(o)}`);
  return o.error;
};

const EXACT = `
from adaptive_harmony import StringThread

async def grade(thread: StringThread) -> float:
    expected = thread.metadata.get("expected", "")
    return 1.0 if thread.completion().strip() == expected else 0.0
`;

before(async () => {
  pool = new SandboxPool({ size: 1, limits });
  pool.on("workerExit", (e: { code: number | null; signal: string | null }) => exits.push(e));
  await pool.start();
});
let closedPool = false;
after(async () => {
  if (!closedPool) await pool.close();
});

describe("Python graders in the sandbox", () => {
  test("an exact-match grader grades a batch", async () => {
    const threads = Array.from({ length: 40 }, (_, i) => thread(i % 3 === 0 ? "4" : "five", { expected: "4" }));
    const started = performance.now();
    const outcomes = await pool.gradeBatch(py(EXACT), threads);
    console.log(`first grade of a cold Python grader (template boot included): ${Math.round(performance.now() - started)} ms`);
    assert.deepEqual(
      outcomes.map(scoreOf),
      threads.map((_, i) => (i % 3 === 0 ? 1 : 0)),
    );
  });

  test("a grader's interpreter is the template's, restored: what the template imported is loaded before the grader imports it", async () => {
    // a grader's isolate that booted Python from nothing instead (1.4 s, not 0.15) would not have these
    const [o] = await pool.gradeBatch(
      py(
        'import sys\nFOUND = [m for m in ("difflib", "statistics", "gradebox._sandbox") if m in sys.modules]\nasync def grade(thread):\n    return {"score": len(FOUND), "metadata": {"found": FOUND}}\n',
      ),
      [thread("4")],
    );
    assert.deepEqual(o, { score: 3, metadata: { found: ["difflib", "statistics", "gradebox._sandbox"] } });
  });

  test("a batch's text reaches Python exactly (Latin-1, wide, surrogate pairs), each item its own metadata; one failing item costs one score", async () => {
    const grader = py(
      'async def grade(thread):\n    c = thread.completion()\n    if c.startswith("boom"):\n        raise ValueError("no")\n    return {"score": len(c), "metadata": {"c": c, "m": thread.metadata, "n": len(thread.get_turns())}}\n',
    );
    // each batch's text takes its own path into Python: bytes, UTF-16 units, item by item
    for (const texts of [
      ["plain", "café", "boom", "naïve ÿ"],
      ["中文", "boom 中", "é", "x"],
      ["😀 ok", "a😀b", "boom😀", "\u00e9\u0301"],
    ]) {
      const threads = texts.map((c, i) => ({
        turns: [
          { role: "user" as const, content: `q${i}` },
          { role: "assistant" as const, content: c },
        ],
        metadata: { i },
      }));
      const outcomes = await pool.gradeBatch(grader, threads);
      texts.forEach((c, i) => {
        if (c.startsWith("boom")) assert.match(errorOf(outcomes[i]).message, /ValueError: no/);
        else assert.deepEqual(outcomes[i], { score: [...c].length, metadata: { c, m: { i }, n: 2 } }, `${JSON.stringify(c)}`);
      });
    }
  });

  test("errors carry their line in the source; a dict result keeps reason and metadata", async () => {
    const [failed] = await pool.gradeBatch(py("import json\n\nasync def grade(thread):\n    x = 1\n    return undefined_name\n"), [
      thread("4"),
    ]);
    const e = errorOf(failed);
    assert.equal(e.code, "GRADER_ERROR");
    assert.match(e.message, /NameError/);
    assert.equal(e.line, 5);
    const [dict] = await pool.gradeBatch(
      py('async def grade(thread):\n    return {"score": 0.5, "reason": "half", "metadata": {"k": [1]}}\n'),
      [thread("4")],
    );
    assert.deepEqual(dict, { score: 0.5, reason: "half", metadata: { k: [1] } });
  });

  test("while True: pass is GRADER_TIMEOUT, and the next grade works", async () => {
    const grader = py(
      'async def grade(thread):\n    if thread.completion() == "spin":\n        while True:\n            pass\n    return 1\n',
    );
    const outcomes = await pool.gradeBatch(grader, [thread("ok"), thread("spin"), thread("ok")]);
    assert.equal(scoreOf(outcomes[0]), 1);
    assert.equal(errorOf(outcomes[1]).code, "GRADER_TIMEOUT");
    assert.equal(scoreOf(outcomes[2]), 1);
    const [again] = await pool.gradeBatch(grader, [thread("ok")]);
    assert.equal(scoreOf(again), 1);
  });

  test("memory bombs are GRADER_MEMORY_LIMIT, the worker's RSS stays bounded, and the grader runs again", async () => {
    const [{ rss: before }] = await pool.stats();
    const bytes = py("async def grade(thread):\n    if thread.completion() == 'bomb':\n        b = bytearray(10**9)\n    return 1\n");
    const list = py(
      "async def grade(thread):\n    if thread.completion() == 'bomb':\n        x = []\n        while True:\n            x.append([0] * 1000)\n    return 1\n",
    );
    for (const grader of [bytes, list]) {
      const outcomes = await pool.gradeBatch(grader, [thread("bomb"), thread("ok")]);
      const e = errorOf(outcomes[0]);
      assert.equal(e.code, "GRADER_MEMORY_LIMIT", e.message);
      assert.equal(scoreOf(outcomes[1]), 1);
    }
    const [{ rss: afterBombs }] = await pool.stats();
    console.log(
      `worker RSS ${Math.round(before / MB)} MB before the bombs, ${Math.round(afterBombs / MB)} MB after; recycled ${pool.recycled}, restarts ${pool.restarts}`,
    );
    assert.ok(
      afterBombs - before < 2 * limits.memoryMb * MB + 2 * 100 * MB,
      `the worker grew by ${Math.round((afterBombs - before) / MB)} MB`,
    );
    assert.deepEqual(exits, [], "no worker died");
  });

  test("two graders see neither each other's module state, files nor random sequences", async () => {
    const source = `
import os, random, sys
STATE = {"n": 0}
async def grade(thread):
    STATE["n"] += 1
    found = os.path.exists("/tmp/mark")
    with open("/tmp/mark", "w") as f:
        f.write("x")
    others = hasattr(sys, "gradebox_mark")
    sys.gradebox_mark = True
    return {"score": STATE["n"], "metadata": {"file": found, "sys": others, "r": random.random(), "u": os.urandom(8).hex()}}
`;
    const a = await pool.gradeBatch(py(source), [thread("1"), thread("2")]);
    const b = await pool.gradeBatch(py(source), [thread("1")]);
    const meta = (o: GradeOutcome | undefined) => (o && "metadata" in o ? (o.metadata as Record<string, unknown>) : {});
    // within one grader, state persists; the other grader starts from nothing
    assert.equal(scoreOf(a[1]), 2);
    assert.equal(meta(a[1]).file, true);
    assert.equal(meta(a[1]).sys, true);
    assert.equal(scoreOf(b[0]), 1);
    assert.equal(meta(b[0]).file, false);
    assert.equal(meta(b[0]).sys, false);
    assert.notEqual(meta(a[0]).r, meta(b[0]).r);
    assert.notEqual(meta(a[0]).u, meta(b[0]).u);
  });

  test("Python finds no host reference and no WebAssembly through the JavaScript it reaches", async () => {
    const source = `
import js, pyodide_js
async def grade(thread):
    Function = pyodide_js.constructor.constructor
    names = Function("return Object.getOwnPropertyNames(globalThis).join(',')")()
    module = pyodide_js._module
    memory_ctor = Function("m", "return m.memory.constructor === Object ? 'Object' : String(m.memory.constructor)")(module)
    wasm = Function("return typeof WebAssembly")()
    empty = not any(hasattr(js, n) for n in ("Object", "Function", "WebAssembly", "process"))
    return {"score": 1, "metadata": {"globals": names, "js": empty, "memoryCtor": memory_ctor, "wasm": wasm}}
`;
    const [outcome] = await pool.gradeBatch(py(source), [thread("4")]);
    assert.ok(outcome && "metadata" in outcome, JSON.stringify(outcome));
    const m = outcome.metadata as { globals: string; js: boolean; memoryCtor: string; wasm: string };
    const globals = m.globals.split(",");
    for (const name of [
      "ivm",
      "process",
      "require",
      "WebAssembly",
      "_ivm",
      "__gradebox_host",
      "__gradebox_py",
      "__gradebox_py_env",
      "__gradebox_py_boot",
    ]) {
      assert.ok(!globals.includes(name), `${name} is reachable`);
    }
    assert.equal(m.wasm, "undefined");
    assert.equal(m.memoryCtor, "Object", "the interpreter's memory leads to Object, not to WebAssembly.Memory");
    assert.equal(m.js, true, "the js module is empty");
  });

  test("the template is the worker's, not a warm isolate's: under the default warm heap (384 MB) two Python graders used in turn stay warm", async () => {
    const small = new SandboxPool({ size: 1, limits: { ...limits, maxWarmHeapMb: 384 } });
    const died: unknown[] = [];
    small.on("workerExit", (e: unknown) => died.push(e));
    await small.start();
    try {
      const a = py(EXACT);
      const b = py(`${EXACT}\n# b\n`);
      for (const g of [a, b, a, b, a]) assert.equal(scoreOf((await small.gradeBatch(g, [thread("4", { expected: "4" })]))[0]), 1);
      const [stats] = await small.stats();
      assert.equal(stats.evictions, 0, "neither grader's isolate was evicted for the other");
      assert.equal(stats.warm, 2);
      assert.deepEqual(died, [], "the worker was not replaced for its size");
    } finally {
      await small.close();
    }
  });

  test("validation runs the library's checks, the execution check and test_run", async () => {
    const ok = await pool.validate("p", EXACT, undefined, { language: "python" });
    assert.deepEqual(ok, { ok: true, compiled: EXACT, warnings: [], shape: "thread" });
    const syntax = await pool.validate("p", "async def grade(thread)\n    return 1\n", undefined, { language: "python" });
    assert.ok(!syntax.ok && syntax.failure.check === "syntax" && syntax.failure.line === 1, JSON.stringify(syntax));
    const load = await pool.validate("p", "import json\nraise ValueError('no')\nasync def grade(thread):\n    return 1\n", undefined, {
      language: "python",
    });
    assert.ok(!load.ok && load.failure.check === "execution" && load.failure.line === 2, JSON.stringify(load));
    const run = await pool.validate("p", "async def grade(thread):\n    return thread.metadata['expected']\n", undefined, {
      language: "python",
    });
    assert.ok(!run.ok && run.failure.check === "test_run" && run.failure.line === 2, JSON.stringify(run));
    const withThreads = await pool.validate("p", EXACT, [thread("4", { expected: "4" })], { language: "python" });
    assert.ok(withThreads.ok && withThreads.results?.[0] && scoreOf(withThreads.results[0]) === 1, JSON.stringify(withThreads));
  });

  test("fair share holds for Python: a small batch of one project finishes while another's long one is still grading", async () => {
    // ~15 ms of Python per item: 300 items keep the worker busy for seconds, in slices
    const slow = {
      ...py("async def grade(thread):\n    n = 0\n    for i in range(150_000):\n        n += i\n    return 0.5\n"),
      project: "flood",
    };
    const quick = { ...py(EXACT), project: "quick" };
    await pool.gradeBatch(quick, [thread("4", { expected: "4" })]); // its isolate restored before the race
    const finished: string[] = [];
    const flood = pool
      .gradeBatch(
        slow,
        Array.from({ length: 300 }, () => thread("x")),
      )
      .then((r) => {
        finished.push("flood");
        return r;
      });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const small = await pool.gradeBatch(quick, [thread("4", { expected: "4" }), thread("5", { expected: "4" })]);
    finished.push("quick");
    assert.deepEqual(small.map(scoreOf), [1, 0]);
    const flooded = await flood;
    assert.deepEqual(finished, ["quick", "flood"], "the small batch did not wait for the long one");
    assert.equal(flooded.filter((o) => scoreOf(o) === 0.5).length, 300);
  });

  test("workers exit cleanly after Python isolates were used and disposed", async () => {
    const grader = py(EXACT);
    await pool.gradeBatch(grader, [thread("4", { expected: "4" })]);
    pool.forget([grader.id]);
    // the pool reports only workers lost while it runs: watch the processes themselves close
    const children = (pool as unknown as { workers: { workers: Array<{ child: ChildProcess }> } }).workers.workers.map((w) => w.child);
    const closed = children.map(
      (child) =>
        new Promise<{ code: number | null; signal: string | null }>((resolve) =>
          child.once("exit", (code, signal) => resolve({ code, signal })),
        ),
    );
    await pool.close();
    closedPool = true;
    assert.ok(children.length >= 2);
    for (const exit of await Promise.all(closed)) assert.deepEqual(exit, { code: 0, signal: null });
    assert.deepEqual(exits, [], "no worker died");
  });
});

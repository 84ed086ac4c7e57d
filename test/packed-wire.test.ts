// The packed wire (sdk/packed-batch.ts, server/packed-body.ts): the SDK sends a grade-batch with
// its threads packed, the server checks it as strictly as JSON and grades it as it came. Against
// the real server on a real port with real isolates: the same results as JSON for every shape a
// thread may take, split across workers or not; every malformed body refused with the JSON path's
// codes; grouped, combined and judge-less paths unpacked; an older server's 415 answered with JSON.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { makeThreads } from "../bench/corpus.ts";
import { PackedThreads } from "../sandbox/host/packed-threads.ts";
import { packBatch } from "../sandbox/protocol/batch.ts";
import { Gradebox, type WireThread } from "../sdk/index.ts";
import { PACKED_BATCH_TYPE, packedBody } from "../sdk/packed-batch.ts";
import { checkHead } from "../server/packed-body.ts";
import { startServer, type TestServer } from "./support/helpers.ts";

let server: TestServer;
let key: string;
let client: Gradebox;
const base = "/v1/projects/default/graders";

// what the grader saw, back as its metadata: every role, every content's length and a digest of it
const ECHO = `async function grade(thread) {
  const turns = thread.messages();
  let sum = 0;
  for (const [, content] of turns) for (let i = 0; i < content.length; i++) sum = (sum * 31 + content.charCodeAt(i)) % 1000003;
  return { score: turns.length, metadata: { roles: turns.map((t) => t[0]), lengths: turns.map((t) => t[1].length), sum, meta: thread.metadata } };
}`;

/** threads of every shape the wire must carry unchanged */
const SHAPES: WireThread[] = [
  { turns: [{ role: "user", content: "plain" }] },
  { turns: [{ role: "assistant", content: "" }], metadata: {} },
  {
    turns: [
      { role: "developer", content: "a role outside ROLES" },
      { role: "assistant", content: "ok" },
    ],
    metadata: { n: [1, { x: null }] },
  },
  {
    turns: [
      { role: "system", content: 'é ß 日本 🎉 mixed\nlines\n\nand "quotes"' },
      { role: "tool", content: "\u0000\u001f" },
    ],
  },
  {
    turns: [
      { role: "document", content: "x".repeat(5000) },
      { role: "user", content: "🎉".repeat(100) },
    ],
    metadata: { deep: { a: { b: [1, 2, { c: "d" }] } } },
  },
  {
    turns: [
      { role: "critic", content: "another other role" },
      { role: "developer", content: "again" },
    ],
  },
];

before(async () => {
  server = await startServer({ listen: true });
  key = await server.keyFor("default");
  client = new Gradebox({ baseURL: server.url, project: "default", apiKey: key });
  await client.graders.create.function({ key: "echo", source: ECHO });
});
after(() => server.close());

const post = (path: string, body: string, type = PACKED_BATCH_TYPE) =>
  fetch(`${server.url}${base}${path}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": type }, body });

/** 20 clean jobs make a grader trusted (sandbox/host/trust.ts): only a trusted grader's batch is split */
async function trust(graderKey: string) {
  for (let i = 0; i < 20; i++) await client.graders.grade({ graderKey, thread: SHAPES[0] as WireThread });
}

/** the parts the pool hands its scheduler while `run` runs */
async function countParts(run: () => Promise<void>): Promise<number> {
  const scheduler = (server.pool as unknown as { scheduler: { grade: (...args: unknown[]) => unknown } }).scheduler;
  const grade = scheduler.grade;
  let parts = 0;
  scheduler.grade = (...args) => {
    parts++;
    return grade.apply(scheduler, args);
  };
  try {
    await run();
  } finally {
    scheduler.grade = grade;
  }
  return parts;
}

async function refused(body: string, status: number, code: string, detail: RegExp) {
  const res = await post("/echo/grade-batch", body);
  const problem = (await res.json()) as { code: string; detail: string };
  assert.equal(res.status, status, JSON.stringify(problem));
  assert.equal(problem.code, code);
  assert.match(problem.detail, detail);
}

test("a packed batch grades every shape of thread as its JSON twin does, whole or split across the workers", async () => {
  const threads = Array.from({ length: 240 }, (_, i) => SHAPES[i % SHAPES.length] as WireThread);
  const asJson = await fetch(`${server.url}${base}/echo/grade-batch`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ threads }),
  }).then((r) => r.json() as Promise<{ results: unknown[] }>);
  assert.equal(asJson.results.length, threads.length);
  // a trusted grader's batch is split across idle workers, each part a slice of the packed batch
  await trust("echo");
  const parts = await countParts(async () => {
    for (let round = 0; round < 3; round++) {
      const packed = await post("/echo/grade-batch", packedBody(threads, {})).then((r) => r.json() as Promise<{ results: unknown[] }>);
      assert.deepEqual(packed.results, asJson.results);
    }
  });
  assert.ok(parts > 3, `some packed batch was split across the workers (${parts} parts for 3 batches)`);
  // and through the SDK, which sends the packed wire
  assert.deepEqual((await client.graders.gradeBatch({ graderKey: "echo", threads })).results, asJson.results);
  const first = asJson.results[2] as { metadata: { roles: string[]; meta: unknown } };
  assert.deepEqual(first.metadata.roles, ["developer"]); // messages(): the turns before the completion
  assert.deepEqual(first.metadata.meta, { n: [1, { x: null }] });
});

test("the options travel on the first line: version, deadline, summary, groups", async () => {
  const threads = makeThreads(64);
  const res = await post("/echo/grade-batch", packedBody(threads, { version: 1, deadlineMs: 30_000, summary: true }));
  const body = (await res.json()) as {
    results: Array<{ score: number }>;
    summary: { count: number };
    deadlineExceeded: number;
    version: number;
  };
  assert.equal(res.status, 200);
  assert.equal(body.summary.count, 64);
  assert.equal(body.deadlineExceeded, 0);
  assert.equal(body.version, 1);
  // grouped: unpacked and graded by group, in the request's order, as JSON is
  const options = { groups: threads.map((_, i) => i % 4), summary: true };
  const grouped = await post("/echo/grade-batch", packedBody(threads, options));
  const g = (await grouped.json()) as { results: unknown[]; summary: { groups?: unknown } };
  assert.equal(grouped.status, 200);
  const asJson = await post("/echo/grade-batch", JSON.stringify({ threads, ...options }), "application/json").then((r) => r.json());
  assert.deepEqual(g, { ...(asJson as object), durationMs: (g as unknown as { durationMs: number }).durationMs });
  assert.ok(g.summary.groups, "a grouped batch's summary has its groups");
  const missing = await post("/nope/grade-batch", packedBody(threads, {}));
  assert.equal(missing.status, 404);
});

test("metadata numbers JSON would not keep (1e999, -0) reach the grader as the JSON path sends them, split or not", async () => {
  await client.graders.create.function({
    key: "numbers",
    source:
      "async (t) => ({ score: 1, metadata: { x: String(t.metadata.x), negz: Object.is(t.metadata.z, -0), b: String(t.metadata.b) } })",
  });
  const body = (n: number) =>
    `{}\n[[${Array(n).fill("1,0,1").join(",")}],[${Array(n).fill('{"x":1e999,"z":-0,"b":-1e400}').join(",")}]]\n${"x".repeat(n)}`;
  const asJson = { x: "null", negz: false, b: "null" };
  const check = async (n: number) => {
    const res = await post("/numbers/grade-batch", body(n));
    const results = ((await res.json()) as { results: Array<{ metadata: unknown }> }).results;
    assert.equal(res.status, 200);
    assert.equal(results.length, n);
    for (const r of results) assert.deepEqual(r.metadata, asJson);
  };
  // whole (a grader not yet trusted is never split), then split across the workers
  assert.equal(await countParts(() => check(200)), 1);
  await trust("numbers");
  assert.ok((await countParts(() => check(200))) > 1, "the trusted grader's batch was split");
});

test("a combined grader reads a packed batch unpacked", async () => {
  await client.graders.create.function({ key: "turns", source: "async (t) => t.messages().length / 10" });
  await client.graders.create.combined({
    key: "both",
    mode: "weighted",
    graders: [
      { graderKey: "turns", name: "a" },
      { graderKey: "turns", name: "b" },
    ],
  });
  const threads = SHAPES.slice(0, 4);
  const res = await post("/both/grade-batch", packedBody(threads, {}));
  const body = (await res.json()) as { results: Array<{ score: number }> };
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.deepEqual(
    body.results.map((r) => r.score),
    threads.map((t) => (t.turns.at(-1)?.role === "assistant" ? t.turns.length - 1 : t.turns.length) / 10),
  );
});

test("a malformed packed body is refused with the JSON path's codes, naming what is wrong", async () => {
  const one = (head: string, text: string, options = "{}") => `${options}\n${head}\n${text}`;
  await refused("{}", 400, "INVALID_REQUEST", /no newline/);
  await refused("{}\n[[1,0,1],[null]]", 400, "INVALID_REQUEST", /one newline/);
  await refused(
    one("[[1,0,1],[null]]", "ab"),
    400,
    "INVALID_REQUEST",
    /add up to 1 characters, but the contents hold 2 \(a length counts UTF-16 code units/,
  );
  await refused(one("[[1,0,3],[null]]", "ab"), 400, "INVALID_REQUEST", /add up to 3/);
  await refused(one("[[0],[null]]", ""), 400, "INVALID_REQUEST", /thread 0: a thread has 1 to/);
  await refused(one("[[1,9,1],[null]]", "a"), 400, "INVALID_REQUEST", /thread 0, turn 0: no role has index 9/);
  await refused(one('[[1,5,1],[null],null,["user"]]', "a"), 400, "INVALID_REQUEST", /"user" is a known role: use its index \(1\)/);
  await refused(one("[[1,0,1.5],[null]]", "a"), 400, "INVALID_REQUEST", /a content length is a whole number .* this one is 1\.5/);
  await refused(one("[[1,0,1],[[1]]]", "a"), 400, "INVALID_REQUEST", /thread 0: metadata must be null or an object, not an array/);
  // a value the message would have to print is named by its kind: a nested array overflowed the stack (500), a long one made a 4 MB detail
  const nested = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
  await refused(one(`[[${nested}],[null]]`, ""), 400, "INVALID_REQUEST", /thread 0: a thread has 1 to \d+ turns .*its count is an array$/);
  await refused(one(`[[1,${nested},1],[null]]`, "a"), 400, "INVALID_REQUEST", /no role has index an array$/);
  const long = await post("/echo/grade-batch", one(`[[[${Array(1_000_000).fill(7).join(",")}]],[null]]`, ""));
  assert.equal(long.status, 400);
  assert.ok(((await long.json()) as { detail: string }).detail.length < 300, "the detail does not repeat the value");
  await refused(one('[[1,5,1],[null],null,["developer","critic"]]', "a"), 400, "INVALID_REQUEST", /other role "critic" is used by no turn/);
  await refused(one("[[1,5,1],[null],null,[7]]", "a"), 400, "INVALID_REQUEST", /other role 7: a role is 1 to 64 characters/);
  await refused(one('[[1,0,1],["x"]]', "a"), 400, "INVALID_REQUEST", /metadata must be/);
  await refused(one("[[1,0,1,7],[null]]", "a"), 400, "INVALID_REQUEST", /1 more than 1 threads' turns/);
  await refused(one("[[],[]]", ""), 400, "INVALID_REQUEST", /at least one thread/);
  await refused(one("{}", ""), 400, "INVALID_REQUEST", /must be \[numbers, metadata\]/);
  await refused(one('[[1,0,1],[{"__proto__":{"x":1}}]]', "a"), 400, "INVALID_JSON", /forbidden prototype property/);
  await refused(one("[[1,0,1],[null]", "a"), 400, "INVALID_JSON", /head is not valid JSON/);
  await refused(one("[[1,0,1],[null]]", "a", "[]"), 400, "INVALID_REQUEST", /options are not a JSON object/);
  await refused(one("[[1,0,1],[null]]", "a", '{"deadlineMs":0}'), 400, "INVALID_REQUEST", /body\.deadlineMs/);
  await refused(one("[[1,0,1],[null]]", "a", '{"threads":[]}'), 400, "INVALID_REQUEST", /not an options field/);
  const deep = `${'{"a":'.repeat(70)}1${"}".repeat(70)}`;
  await refused(one(`[[1,0,1],[${deep}]]`, "a"), 400, "INVALID_REQUEST", /more than 64 levels deep/);
  const tooLong = "x".repeat(server.config.maxContent + 1);
  await refused(one(`[[1,0,${tooLong.length}],[null]]`, tooLong), 400, "INVALID_REQUEST", /GRADEBOX_MAX_CONTENT/);
  const many = server.config.maxBatch + 1;
  await refused(
    one(`[[${Array(many).fill("1,0,0").join(",")}],[${Array(many).fill("null").join(",")}]]`, ""),
    413,
    "BATCH_TOO_LARGE",
    /GRADEBOX_MAX_BATCH/,
  );
  // bytes that are not UTF-8, where JSON would be refused the same way
  const res = await fetch(`${server.url}${base}/echo/grade-batch`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": PACKED_BATCH_TYPE },
    body: Buffer.concat([Buffer.from("{}\n[[1,0,1],[null]]\n"), Buffer.from([0xff])]),
  });
  assert.equal(res.status, 400);
  assert.equal(((await res.json()) as { code: string }).code, "INVALID_ENCODING");
  // the packed type is grade-batch's alone
  const single = await post("/echo/grade", one("[[1,0,1],[null]]", "a"));
  assert.equal(single.status, 415);
  assert.equal(((await single.json()) as { code: string }).code, "UNSUPPORTED_MEDIA_TYPE");
  // and still served: a good packed batch right after
  assert.equal((await post("/echo/grade-batch", one("[[1,0,1],[null]]", "a"))).status, 200);
});

test("PackedThreads: a slice is the packed batch of its threads, and unpacking gives the threads back", () => {
  const threads = Array.from({ length: 13 }, (_, i) => SHAPES[i % SHAPES.length] as WireThread);
  const { head, text } = packBatch(threads);
  const parsed = checkHead(JSON.parse(head), text.length, { maxBatch: 100, maxTurns: 10, maxContent: 10_000, bodyLimit: 1 << 20 });
  const packed = new PackedThreads(head, text, parsed.nums, parsed.metadata, parsed.others);
  assert.deepEqual(packed.threads(), threads);
  for (const [from, to] of [
    [0, 13],
    [0, 1],
    [2, 9],
    [12, 13],
  ]) {
    const part = packed.slice(from, to);
    const again = packBatch(threads.slice(from, to));
    const p = checkHead(JSON.parse(part.head), part.text.length, { maxBatch: 100, maxTurns: 10, maxContent: 10_000, bodyLimit: 1 << 20 });
    assert.equal(part.count, to - from);
    assert.deepEqual(new PackedThreads(part.head, part.text, p.nums, p.metadata, p.others).threads(), threads.slice(from, to));
    assert.equal(part.text, again.text);
    // a part's head lists only the other roles its own turns use, as packBatch's does
    assert.deepEqual(JSON.parse(part.head)[3], JSON.parse(again.head)[3]);
  }
});

test("an older server's 415 for the packed wire: the SDK sends that batch, and the next, as JSON", async () => {
  const seen: string[] = [];
  const old = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      seen.push(`${req.method} ${req.url} ${req.headers["content-type"] ?? ""}`);
      res.setHeader("content-type", "application/json");
      if (req.url === "/v1/limits") return res.end(JSON.stringify({ maxBatchThreads: 1000, maxBodyBytes: 10 << 20 }));
      if (req.headers["content-type"] !== "application/json") {
        res.statusCode = 415;
        return res.end(JSON.stringify({ code: "UNSUPPORTED_MEDIA_TYPE", detail: "Unsupported Media Type" }));
      }
      const { threads } = JSON.parse(body) as { threads: unknown[] };
      res.end(JSON.stringify({ results: threads.map(() => ({ score: 1, outcome: "scored" })), version: 1, durationMs: 1 }));
    });
  });
  await new Promise<void>((resolve) => old.listen(0, "127.0.0.1", resolve));
  try {
    const port = (old.address() as { port: number }).port;
    const c = new Gradebox({ baseURL: `http://127.0.0.1:${port}`, project: "p", apiKey: "k", maxRetries: 0 });
    const threads = makeThreads(3);
    assert.equal((await c.graders.gradeBatch({ graderKey: "g", threads })).results.length, 3);
    assert.equal((await c.graders.gradeBatch({ graderKey: "g", threads })).results.length, 3);
    assert.deepEqual(
      seen.filter((s) => s.startsWith("POST")).map((s) => s.split(" ")[2]),
      [PACKED_BATCH_TYPE, "application/json", "application/json"],
    );
  } finally {
    old.close();
  }
});

// External endpoint graders end to end: the real server, the example reward server
// (examples/reward-server) in its own process, and a scripted misbehaving one on loopback.

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, beforeEach, describe, test } from "node:test";
import { sendBlanks } from "./support/fake-openai.ts";
import { call, repoRoot, startServer, type TestServer } from "./support/helpers.ts";

const P = "/v1/projects/ep";
let s: TestServer;
let example: ChildProcess;
let exampleUrl = "";

/** A reward server that does what it is told per path; counts requests and concurrency. */
class Scripted {
  server: Server | undefined;
  url = "";
  requests: Array<{ path: string; body: unknown }> = [];
  inFlight = 0;
  maxInFlight = 0;
  /** what GET /info and GET /metadata_schema answer (undefined: 404) */
  info = JSON.stringify({ version: "2", name: "scripted", description: "" });
  schema: string | undefined;
  behave: (
    path: string,
    body: { requests?: Array<{ id: number }>; id?: number },
    n: number,
  ) => { status?: number; headers?: Record<string, string>; body?: string; hang?: boolean; delayMs?: number; bytes?: number } = () => ({});
  private readonly hanging = new Set<ServerResponse>();

  async start() {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }
  reset() {
    this.requests = [];
    this.maxInFlight = 0;
    this.behave = () => ({});
  }
  async close() {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
  private async handle(req: IncomingMessage, res: ServerResponse) {
    let text = "";
    for await (const chunk of req) text += chunk;
    const path = req.url ?? "";
    if (path === "/info") return void res.end(this.info);
    if (path === "/metadata_schema") return void (this.schema === undefined ? res.writeHead(404).end() : res.end(this.schema));
    const body = text ? JSON.parse(text) : {};
    this.requests.push({ path, body });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    res.on("close", () => this.inFlight--);
    const b = this.behave(path, body, this.requests.length);
    if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
    if (b.hang) return void this.hanging.add(res);
    if (b.bytes) return sendBlanks(res, b.bytes);
    const answer =
      b.body ??
      JSON.stringify(
        path === "/batch_score"
          ? { responses: (body.requests as Array<{ id: number }>).map((r) => ({ reward: 0.5, metadata: {}, id: r.id })) }
          : { reward: 0.5, metadata: {}, id: body.id },
      );
    res.writeHead(b.status ?? 200, { "content-type": "application/json", ...b.headers }).end(answer);
  }
}
let scripted: Scripted;

const thread = (answer: string, expected?: unknown) => ({
  turns: [
    { role: "user", content: "What is 2+2?" },
    { role: "assistant", content: answer },
  ],
  ...(expected === undefined ? {} : { metadata: { expected } }),
});

async function endpoint(key: string, body: Record<string, unknown>) {
  const r = await call(s.app, "POST", `${P}/graders/external-endpoint`, { key, ...body });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body;
}

before(async () => {
  s = await startServer({ env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32", GRADEBOX_SECRET_GRANTS: "GRADEBOX_SECRET_RM_TOKEN=ep" } });
  scripted = await new Scripted().start();
  example = spawn(process.execPath, ["--import", "tsx", "examples/reward-server/server.ts"], {
    cwd: repoRoot,
    env: { ...process.env, PORT: "0" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [line] = (await once(example.stdout as NodeJS.ReadableStream, "data")) as [Buffer];
  exampleUrl = /http:\/\/\S+/.exec(line.toString())?.[0] ?? "";
  await endpoint("exact", { url: exampleUrl });
});
after(async () => {
  example.kill();
  await scripted.close();
  await s.close();
});
beforeEach(() => scripted.reset());

describe("registration", () => {
  test("reads /info and /metadata_schema and stores them", async () => {
    const got = await call(s.app, "GET", `${P}/graders/exact`);
    assert.equal(got.body.kind, "endpoint");
    assert.deepEqual(got.body.endpoint.info, {
      version: "1.0.0",
      name: "exact-match",
      description: "1 when the last turn equals metadata.expected",
    });
    assert.deepEqual(got.body.endpoint.metadataSchema.required, ["expected"]);
    assert.equal(got.body.endpoint.batch, true);
    assert.equal(got.body.endpoint.batchSize, 64);
  });

  test("unreachable, malformed /info and a schema with regular expressions are refused with check endpoint; nothing stored", async () => {
    const closed = await call(s.app, "POST", `${P}/graders/external-endpoint`, { key: "closed", url: "http://127.0.0.1:9/" });
    assert.equal(closed.status, 422);
    assert.equal(closed.body.check, "endpoint");
    assert.match(closed.body.message, /GET \/info: cannot reach the endpoint/);

    const odd = await new Scripted().start();
    odd.info = '{"version": "1", "name": "x"}';
    odd.schema = '{"type": "object", "properties": {"id": {"type": "string", "pattern": "^(a+)+$"}}}';
    try {
      const missing = await call(s.app, "POST", `${P}/graders/external-endpoint`, { key: "odd", url: odd.url });
      assert.equal(missing.status, 422);
      assert.match(missing.body.message, /GET \/info must answer \{version, name, description\}.*description/);
      odd.info = '{"version": "1", "name": "x", "description": "", "extra": true}';
      assert.match(
        (await call(s.app, "POST", `${P}/graders/external-endpoint`, { key: "odd", url: odd.url })).body.message,
        /Unrecognized key/,
      );
      odd.info = '{"version": "1", "name": "x", "description": ""}';
      const regex = await call(s.app, "POST", `${P}/graders/external-endpoint`, { key: "odd", url: odd.url });
      assert.equal(regex.status, 422);
      assert.match(regex.body.message, /\/properties\/id\/pattern: the keyword "pattern" is not checked by Gradebox/);
      odd.schema = '{"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true}}}';
      const quadratic = await call(s.app, "POST", `${P}/graders/external-endpoint`, { key: "odd", url: odd.url });
      assert.match(quadratic.body.message, /\/properties\/tags\/uniqueItems: the keyword "uniqueItems" is not checked/);
      odd.schema = "not json";
      assert.match((await call(s.app, "POST", `${P}/graders/external-endpoint`, { key: "odd", url: odd.url })).body.message, /not JSON/);
    } finally {
      await odd.close();
    }
    assert.equal((await call(s.app, "GET", `${P}/graders/odd`)).status, 404);
    assert.equal((await call(s.app, "GET", `${P}/graders/closed`)).status, 404);
  });

  test("the egress policy refuses loopback without GRADEBOX_EGRESS_ALLOW, and a secret header must be a GRADEBOX_SECRET_ variable that is set", async () => {
    const strict = await startServer();
    try {
      const r = await call(strict.app, "POST", "/v1/projects/x/graders/external-endpoint", { key: "e", url: exampleUrl });
      assert.equal(r.status, 422);
      assert.equal(r.body.code, "EGRESS_DENIED");
    } finally {
      await strict.close();
    }
    const bad = await call(s.app, "POST", `${P}/graders/external-endpoint`, {
      key: "h",
      url: exampleUrl,
      headersEnv: { Authorization: "HOME" },
    });
    assert.equal(bad.status, 400);
    const unset = await call(s.app, "POST", `${P}/graders/external-endpoint`, {
      key: "h",
      url: exampleUrl,
      headersEnv: { Authorization: "GRADEBOX_SECRET_UNSET_TOKEN" },
    });
    assert.equal(unset.status, 400);
    assert.match(unset.body.detail, /no server secret GRADEBOX_SECRET_UNSET_TOKEN is available to project/);
  });
});

describe("grading", () => {
  test("batches go to /batch_score in order; metadata failing the schema gets INVALID_METADATA without a call", async () => {
    const r = await call(s.app, "POST", `${P}/graders/exact/grade-batch`, {
      threads: [thread("4", "4"), thread("5", "4"), thread("4"), thread(" 4 ", "4"), thread("4", 4)],
    });
    assert.equal(r.status, 200);
    const brief = r.body.results.map((x: { score?: number; error?: { code: string } }) => x.error?.code ?? x.score);
    assert.deepEqual(brief, [1, 0, "INVALID_METADATA", 1, "INVALID_METADATA"]);
    assert.match(r.body.results[2].error.message, /must have required property 'expected'/);
    assert.deepEqual(r.body.results[0].metadata, { expected: "4" });
  });

  test("batch: false calls /score per thread; secret headers are sent", async () => {
    process.env.GRADEBOX_SECRET_RM_TOKEN = "rm-secret";
    await endpoint("single", { url: scripted.url, batch: false, headersEnv: { "X-Api-Key": "GRADEBOX_SECRET_RM_TOKEN" } });
    const r = await call(s.app, "POST", `${P}/graders/single/grade-batch`, { threads: [thread("a"), thread("b"), thread("c")] });
    assert.deepEqual(
      r.body.results.map((x: { score: number }) => x.score),
      [0.5, 0.5, 0.5],
    );
    assert.deepEqual(
      scripted.requests.map((q) => q.path),
      ["/score", "/score", "/score"],
    );
  });

  test("ids go out as integers; an endpoint that answers id null (a stock Adaptive server) is read; any role goes through", async () => {
    await endpoint("nullids", { url: scripted.url, batchSize: 2 });
    scripted.behave = (path, body) => ({
      body: JSON.stringify(
        path === "/batch_score"
          ? { responses: (body.requests ?? []).map(() => ({ reward: 0.25, metadata: null, id: null })) }
          : { reward: 0.25, metadata: null, id: null },
      ),
    });
    const developer = { turns: [{ role: "developer", content: "be brief" }, ...thread("4").turns] };
    const r = await call(s.app, "POST", `${P}/graders/nullids/grade-batch`, { threads: [developer, thread("b"), thread("c")] });
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.results.map((x: { score?: number }) => x.score),
      [0.25, 0.25, 0.25],
    );
    const sent = scripted.requests.map((q) => (q.body as { requests: Array<{ id: unknown; turns: Array<{ role: string }> }> }).requests);
    assert.deepEqual(
      sent.map((requests) => requests.map((q) => q.id)),
      [[0, 1], [2]],
    );
    assert.deepEqual(
      sent[0][0].turns.map((t) => t.role),
      ["developer", "user", "assistant"],
    );

    scripted.reset();
    await endpoint("nullids-single", { url: scripted.url, batch: false });
    scripted.behave = () => ({ body: '{"reward": 1, "metadata": {}, "id": null}' });
    const one = await call(s.app, "POST", `${P}/graders/nullids-single/grade`, { thread: developer });
    assert.equal(one.body.score, 1);
    assert.equal((scripted.requests[0].body as { id: unknown }).id, 0);
    // an id echoed as its text is still the request's
    scripted.behave = () => ({ body: '{"reward": 1, "metadata": {}, "id": "0"}' });
    assert.equal((await call(s.app, "POST", `${P}/graders/nullids-single/grade`, { thread: developer })).body.score, 1);
  });

  test("ordering under concurrency: chunks of batchSize, at most maxConcurrency in flight, results in input order", async () => {
    await endpoint("chunked", { url: scripted.url, batchSize: 10, maxConcurrency: 3 });
    scripted.behave = (_path, body) => ({
      delayMs: 10 + Math.floor(Math.random() * 30),
      body: JSON.stringify({ responses: (body.requests ?? []).map((q) => ({ reward: Number(q.id) / 100, metadata: {}, id: q.id })) }),
    });
    const threads = Array.from({ length: 95 }, (_, i) => thread(`t${i}`));
    const r = await call(s.app, "POST", `${P}/graders/chunked/grade-batch`, { threads });
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.results.map((x: { score: number }) => x.score),
      threads.map((_, i) => i / 100),
    );
    assert.equal(scripted.requests.length, 10, "95 threads in chunks of 10");
    assert.equal(scripted.maxInFlight, 3);
  });

  test("misbehaviour: wrong count, non-finite reward, ids out of order, unknown fields, a huge or deeply nested body are ENDPOINT_INVALID_RESPONSE; a redirect is not followed", async () => {
    await endpoint("misbehaves", { url: scripted.url, timeoutMs: 300 });
    const cases: Array<[string, ReturnType<Scripted["behave"]>, RegExp]> = [
      ["wrong count", { body: '{"responses": [{"reward": 1, "metadata": {}}]}' }, /answered 1 responses to 2 requests/],
      ["non-finite", { body: '{"responses": [{"reward": 1e999, "metadata": {}}, {"reward": 1, "metadata": {}}]}' }, /reward: .*Infinity/],
      [
        "order",
        { body: '{"responses": [{"reward": 1, "metadata": {}, "id": "1"}, {"reward": 1, "metadata": {}, "id": "0"}]}' },
        /in the order of the requests/,
      ],
      ["unknown field", { body: '{"responses": [{"reward": 1, "metadata": {}, "score": 2}, {"reward": 1}]}' }, /Unrecognized key/],
      ["proto key", { body: '{"responses": [{"reward": 1, "metadata": {"__proto__": {"x": 1}}}, {"reward": 1}]}' }, /__proto__/],
      // a reply to 2 requests is read to 2 × (6 × 16 KiB + 1 KiB) + 4 KiB at most
      ["huge", { bytes: 20 * 1024 * 1024 }, /over 202752 bytes/],
      // nested past any recursive walk's stack: refused as invalid, not taken for an outage
      [
        "deep",
        { body: `{"responses": [{"reward": 1, "metadata": {"a": ${"[".repeat(200_000)}${"]".repeat(200_000)}}}, {"reward": 1}]}` },
        /nested more than 68 levels/,
      ],
    ];
    for (const [name, behaviour, message] of cases) {
      scripted.behave = () => behaviour;
      const r = await call(s.app, "POST", `${P}/graders/misbehaves/grade-batch`, { threads: [thread("a"), thread("b")] });
      assert.equal(r.status, 200, name);
      assert.equal(r.body.results.length, 2, name);
      for (const result of r.body.results) {
        assert.equal(result.error?.code, "ENDPOINT_INVALID_RESPONSE", `${name}: ${JSON.stringify(result)}`);
        assert.match(result.error.message, message, name);
      }
    }
    // a redirect is not followed: it would carry the endpoint's secret headers wherever it pointed
    scripted.behave = () => ({ status: 307, headers: { location: "http://127.0.0.1:9/batch_score" }, body: "" });
    const r = await call(s.app, "POST", `${P}/graders/misbehaves/grade-batch`, { threads: [thread("a")] });
    assert.equal(r.body.results[0].error?.code, "ENDPOINT_UNAVAILABLE");
    assert.match(r.body.results[0].error.message, /HTTP 307 \(redirects are not followed/);
  });

  test("429 with retry-after and 500 are retried; a hang times out; after 5 failures the breaker fails fast", async () => {
    await endpoint("flaky", { url: scripted.url, timeoutMs: 200 });
    scripted.behave = (_p, _b, n) => (n === 1 ? { status: 429, headers: { "retry-after": "0" } } : n === 2 ? { status: 500 } : {});
    const ok = await call(s.app, "POST", `${P}/graders/flaky/grade`, { thread: thread("a") });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(scripted.requests.length, 3);

    scripted.reset();
    scripted.behave = () => ({ hang: true });
    const hung = await call(s.app, "POST", `${P}/graders/flaky/grade`, { thread: thread("a") });
    assert.equal(hung.status, 502);
    assert.equal(hung.body.code, "ENDPOINT_UNAVAILABLE");
    assert.match(hung.body.detail, /did not answer in time \(after 3 attempts\)/);
    scripted.behave = () => ({ status: 503 });
    await call(s.app, "POST", `${P}/graders/flaky/grade`, { thread: thread("a") });
    const before = scripted.requests.length;
    const fast = await call(s.app, "POST", `${P}/graders/flaky/grade`, { thread: thread("a") });
    assert.equal(fast.body.code, "ENDPOINT_UNAVAILABLE");
    assert.match(fast.body.detail, /circuit open/);
    assert.equal(scripted.requests.length, before);
  });

  test("a combined grader mixes an endpoint and a function grader", async () => {
    const fn = await call(s.app, "POST", `${P}/graders`, {
      key: "nonempty",
      source: "export default async function grade(thread) { return (thread.completion() ?? '').trim() ? 1 : 0; }",
    });
    assert.equal(fn.status, 201, JSON.stringify(fn.body));
    const combined = await call(s.app, "POST", `${P}/graders/combined`, {
      key: "both",
      mode: "all",
      graders: [{ graderKey: "exact" }, { graderKey: "nonempty" }],
    });
    assert.equal(combined.status, 201, JSON.stringify(combined.body));
    const r = await call(s.app, "POST", `${P}/graders/both/grade-batch`, { threads: [thread("4", "4"), thread("5", "4"), thread("4")] });
    assert.equal(r.body.results[0].score, 1);
    assert.equal(r.body.results[1].score, 0);
    assert.equal(r.body.results[2].error.code, "COMPONENT_FAILED");
    assert.match(r.body.results[2].error.message, /part "exact" \(grader exact\) failed with INVALID_METADATA/);
  });

  test("endpoint calls and latency per grader are in /metrics", async () => {
    const res = await s.app.inject({ method: "GET", url: "/metrics", headers: { authorization: `Bearer ${s.metricsToken}` } });
    for (const series of [
      /gradebox_endpoint_calls_total\{endpoint="ep\/exact",outcome="ok"\} [1-9]/,
      /gradebox_endpoint_calls_total\{endpoint="ep\/misbehaves",outcome="invalid_response"\} [1-9]/,
      /gradebox_endpoint_call_duration_seconds_count\{endpoint="ep\/exact"\} [1-9]/,
    ]) {
      assert.ok(series.test(res.body), `${series} in /metrics`);
    }
  });
});

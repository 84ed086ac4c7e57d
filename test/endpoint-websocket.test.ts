// Endpoint graders over Adaptive's WebSocket transport, end to end: the real server calls a real
// Node reward server that frames its answers exactly as Adaptive's does (send_large_text: a
// `{"id": n, "total_num_chunks": k}` message, then k `{"id": n, "chunk": "…"}` messages of at
// most 10,240 characters of the response's JSON, written by Python's json.dumps), and serves
// /info, /metadata_schema, /score and /batch_score over HTTP. Each endpoint is a path prefix of
// that server (test/support/adaptive-like.ts), which says how it behaves: `/good`, `/reverse`, `/silent`, …

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { AdaptiveLike } from "./support/adaptive-like.ts";
import { call, startServer, type TestServer } from "./support/helpers.ts";

const P = "/v1/projects/ws";
let s: TestServer;

let rewards: AdaptiveLike;

const thread = (answer: string, metadata: Record<string, unknown> = {}) => ({
  turns: [
    { role: "user", content: "Say something." },
    { role: "assistant", content: answer },
  ],
  metadata,
});

async function endpoint(key: string, prefix: string, body: Record<string, unknown> = {}) {
  const r = await call(s.app, "POST", `${P}/graders/external-endpoint`, {
    key,
    url: `${rewards.url}/${prefix}`,
    transport: "websocket",
    ...body,
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body;
}
const grade = (key: string, threads: unknown[], extra: Record<string, unknown> = {}) =>
  call(s.app, "POST", `${P}/graders/${key}/grade-batch`, { threads, ...extra });
/** Whether `condition` holds within a few seconds (a close reaches the server after the answer left). */
async function until(condition: () => boolean): Promise<boolean> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  return condition();
}
type Result = {
  outcome: string;
  score?: number;
  metadata?: unknown;
  error?: { code: string; message: string };
  abstained?: { code: string };
};

before(async () => {
  process.env.GRADEBOX_SECRET_WS_TOKEN = "ws-secret";
  s = await startServer({
    env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32,localhost", GRADEBOX_SECRET_GRANTS: "GRADEBOX_SECRET_WS_TOKEN=ws" },
  });
  rewards = await new AdaptiveLike().start();
});
after(async () => {
  await s.close();
  await rewards.close();
});
beforeEach(() => rewards.reset());

describe("an endpoint grader over WebSocket", () => {
  test("grades as the same server does over HTTP: a score message per thread at {url}/ws, chunked answers joined, secret headers on the upgrade", async () => {
    const overHttp = await call(s.app, "POST", `${P}/graders/external-endpoint`, { key: "twin-http", url: `${rewards.url}/good` });
    assert.equal(overHttp.status, 201);
    assert.equal(overHttp.body.endpoint.transport, "http");
    const created = await endpoint("twin-ws", "good", { batchSize: 3, headersEnv: { "X-Api-Key": "GRADEBOX_SECRET_WS_TOKEN" } });
    assert.equal(created.endpoint.transport, "websocket");
    assert.equal((await call(s.app, "GET", `${P}/graders/twin-ws`)).body.endpoint.transport, "websocket");

    // over 10,240 characters of answer (non-ASCII and astral among them): more than one chunk
    const pad = "é😀ab".repeat(3000);
    const threads = [thread("four"), thread("a longer answer", { pad }), thread(""), thread("x".repeat(42)), thread("ünïcödé")];
    const http = await grade("twin-http", threads);
    assert.equal(http.status, 200);
    assert.equal(rewards.connections.size, 0);
    rewards.reset();

    const ws = await grade("twin-ws", threads);
    assert.equal(ws.status, 200, JSON.stringify(ws.body));
    const brief = (r: Result) => ({ outcome: r.outcome, score: r.score, metadata: r.metadata });
    assert.deepEqual(ws.body.results.map(brief), http.body.results.map(brief));
    assert.equal(ws.body.results[1].metadata.pad, pad);
    assert.equal(rewards.httpScoreCalls, 0, "no /score or /batch_score over HTTP");
    assert.equal(rewards.connections.get("good"), 1, "one socket for the grader");
    assert.ok(Math.max(...rewards.chunkCounts) >= 2, `an answer came in chunks: ${rewards.chunkCounts}`);
    // harmony's RewardClient's message: the /score body with an integer id
    const sent = rewards.messages.map((m) => m.request);
    assert.deepEqual(Object.keys(sent[0]).sort(), ["id", "metadata", "turns"]);
    assert.deepEqual(
      sent.map((r) => r.id).sort((a, b) => a - b),
      [0, 1, 2, 3, 4],
    );
    assert.equal(rewards.upgradeHeaders[0]["x-api-key"], "ws-secret");

    // the socket stays open: the next batch goes over it
    const again = await grade("twin-ws", [thread("once more")]);
    assert.equal(again.body.results[0].score, 0.09);
    assert.equal(rewards.connections.get("good"), 1);
  });

  test("a Gradebox grader's own reward socket (…/reward/ws) serves as the endpoint; its failure answers are the thread's error", async () => {
    const remote = await startServer({ listen: true });
    try {
      const pushed = await call(remote.app, "POST", "/v1/projects/remote/graders", {
        key: "len",
        source:
          "export default async function grade(thread) { const c = thread.completion() ?? ''; return c === 'skip' ? null : c.length / 100; }",
      });
      assert.equal(pushed.status, 201, JSON.stringify(pushed.body));
      const secret = await call(s.app, "PUT", `${P}/secrets/remote-key`, { value: `Bearer ${await remote.keyFor("remote")}` });
      assert.ok(secret.status < 300, JSON.stringify(secret.body));
      const created = await call(s.app, "POST", `${P}/graders/external-endpoint`, {
        key: "gradebox-ws",
        url: `${remote.url}/v1/projects/remote/graders/len/reward`,
        transport: "websocket",
        headersSecret: { Authorization: "remote-key" },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const r = await grade("gradebox-ws", [thread("abc"), thread("skip"), thread("abcdef")]);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.results[0].score, 0.03);
      assert.equal(r.body.results[2].score, 0.06);
      assert.equal(r.body.results[1].error?.code, "ENDPOINT_UNAVAILABLE", JSON.stringify(r.body.results[1]));
      assert.match(r.body.results[1].error.message, /the endpoint answered ABSTAINED/);
    } finally {
      await remote.close();
    }
  });

  test("answers in any order are matched to their threads by id", async () => {
    await endpoint("reverse", "reverse", { batchSize: 8 });
    const threads = Array.from({ length: 8 }, (_, i) => thread("z".repeat(i + 1)));
    const r = await grade("reverse", threads);
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.results.map((x: Result) => x.score),
      threads.map((_, i) => (i + 1) / 100),
    );
    const received = rewards.messages.map((m) => m.request.id);
    assert.deepEqual(rewards.answered, [...received].reverse());
    assert.notDeepEqual(rewards.answered, received);
  });

  test("a hostile answer fails ENDPOINT_INVALID_RESPONSE and ends its socket, while other graders are served", async () => {
    await endpoint("steady", "good");
    const cases: Array<[string, RegExp]> = [
      ["binary", /sent a binary message/],
      ["garbled", /not JSON/],
      ["unknown", /answered id 100\d, which was never asked/],
      ["toomany", /total_num_chunks 1000000000; 1 to 103424/],
      ["oversize", /over 103424 bytes to one request/],
      ["hugeframe", /a message over \d+ bytes/],
      ["wrongshape", /reward: .*expected number/i],
    ];
    for (const [mode, message] of cases) {
      await endpoint(`bad-${mode}`, mode, { timeoutMs: 5000 });
      const [bad, good] = await Promise.all([
        grade(`bad-${mode}`, [thread("a"), thread("b")]),
        grade("steady", [thread("ok"), thread("fine")]),
      ]);
      assert.equal(bad.status, 200, mode);
      for (const result of bad.body.results) {
        assert.equal(result.error?.code, "ENDPOINT_INVALID_RESPONSE", `${mode}: ${JSON.stringify(result)}`);
        assert.match(result.error.message, message, mode);
      }
      assert.deepEqual(
        good.body.results.map((x: Result) => x.score),
        [0.02, 0.04],
        mode,
      );
      if (mode !== "wrongshape") assert.ok(await until(() => (rewards.closes.get(mode) ?? 0) >= 1), `${mode}: its socket was closed`);
      // well framed, wrong inside: only its own request fails
      else assert.equal(rewards.closes.get(mode) ?? 0, 0);
    }
    assert.equal(rewards.closes.get("good") ?? 0, 0, "the steady grader kept its socket");
  });

  test("an endpoint that never answers times out per attempt (retried), and a batch's deadline turns its threads into abstentions", async () => {
    await endpoint("silent", "silent", { timeoutMs: 300 });
    const r = await call(s.app, "POST", `${P}/graders/silent/grade`, { thread: thread("a") });
    assert.equal(r.status, 502);
    assert.equal(r.body.code, "ENDPOINT_UNAVAILABLE");
    assert.match(r.body.detail, /did not answer in time \(after 3 attempts\)/);
    assert.equal(rewards.messages.length, 3, "sent again on each attempt");
    assert.equal(rewards.connections.get("silent"), 1, "a timeout does not drop the socket");

    await endpoint("silent-long", "silent", { timeoutMs: 60_000 });
    const d = await grade("silent-long", [thread("a"), thread("b")], { deadlineMs: 400 });
    assert.equal(d.status, 200);
    for (const result of d.body.results) {
      assert.equal(result.outcome, "abstained", JSON.stringify(result));
      assert.equal(result.abstained.code, "DEADLINE_EXCEEDED");
    }
  });

  test("a late answer to a request given up is read and dropped; the socket and the retry's answer stand", async () => {
    await endpoint("late", "late", { timeoutMs: 300 });
    const r = await grade("late", [thread("abc")]);
    assert.equal(r.body.results[0].score, 0.03, JSON.stringify(r.body));
    // the late answer to id 0 arrives now, on the socket the retry used
    await new Promise((resolve) => setTimeout(resolve, 500));
    const next = await grade("late", [thread("abcd")]);
    assert.equal(next.body.results[0].score, 0.04, JSON.stringify(next.body));
    assert.equal(rewards.connections.get("late"), 1);
    assert.equal(rewards.closes.get("late") ?? 0, 0);
  });

  test("a socket dropped mid-batch is reopened and its threads sent again; one that always drops fails after the retries", async () => {
    await endpoint("drop", "drop", { batchSize: 4 });
    const r = await grade("drop", [thread("a"), thread("bb"), thread("ccc"), thread("dddd")]);
    assert.deepEqual(
      r.body.results.map((x: Result) => x.score),
      [0.01, 0.02, 0.03, 0.04],
      JSON.stringify(r.body),
    );
    assert.equal(rewards.connections.get("drop"), 2);

    await endpoint("alwaysdrop", "alwaysdrop", { batchSize: 2 });
    const failed = await grade("alwaysdrop", [thread("a"), thread("b")]);
    for (const result of failed.body.results) {
      assert.equal(result.error?.code, "ENDPOINT_UNAVAILABLE", JSON.stringify(result));
      assert.match(result.error.message, /WebSocket closed \(\d+\) before answering \(after 3 attempts\)/);
    }
    assert.equal(rewards.connections.get("alwaysdrop"), 3);
  });

  test("an endpoint without a WebSocket is a clear error", async () => {
    // the stock server answers 404 to an upgrade elsewhere than /ws: here the prefix has no socket
    const created = await call(s.app, "POST", `${P}/graders/external-endpoint`, {
      key: "nosocket",
      url: `${rewards.url}/good/sub`,
      transport: "websocket",
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const r = await grade("nosocket", [thread("a")]);
    assert.equal(r.body.results[0].error?.code, "ENDPOINT_UNAVAILABLE");
    assert.match(r.body.results[0].error.message, /WebSocket upgrade\) answered HTTP 404 .*transport "http"/);
  });

  test("transport must be http or websocket", async () => {
    const r = await call(s.app, "POST", `${P}/graders/external-endpoint`, { key: "grpc", url: `${rewards.url}/good`, transport: "grpc" });
    assert.equal(r.status, 400);
    assert.match(JSON.stringify(r.body), /transport/);
  });
});

describe("the egress policy", () => {
  test("an endpoint whose host resolves to a refused address is refused over WebSocket exactly as over HTTP, and never connected to", async () => {
    // allowed (GRADEBOX_EGRESS_ALLOW=127.0.0.1/32,localhost), the definition connects over its socket
    const allowed = await call(s.app, "POST", `${P}/graders/external-endpoint`, {
      key: "allowed",
      url: `http://localhost:${new URL(rewards.url).port}/good`,
      transport: "websocket",
    });
    assert.equal(allowed.status, 201, JSON.stringify(allowed.body));
    assert.equal((await grade("allowed", [thread("a")])).body.results[0].score, 0.01);
    assert.equal(rewards.connections.get("good"), 1);
    rewards.reset();

    // registered while the operator allowed loopback; the server now runs without GRADEBOX_EGRESS_ALLOW
    const strict = await startServer();
    try {
      const spec = (transport: "http" | "websocket") => ({
        url: `http://localhost:${new URL(rewards.url).port}/good`,
        transport,
        timeoutMs: 5000,
        batch: true,
        batchSize: 64,
        maxConcurrency: 8,
        info: { version: "1.0", name: "adaptive-like good", description: "" },
      });
      await strict.store.insertEndpoint({ project: "ws", key: "over-http", description: "", spec: spec("http") });
      await strict.store.insertEndpoint({ project: "ws", key: "over-ws", description: "", spec: spec("websocket") });
      const [http, ws] = await Promise.all(
        ["over-http", "over-ws"].map((key) => call(strict.app, "POST", `${P}/graders/${key}/grade-batch`, { threads: [thread("a")] })),
      );
      assert.equal(http.body.results[0].error?.code, "EGRESS_DENIED", JSON.stringify(http.body));
      assert.equal(ws.body.results[0].error?.code, "EGRESS_DENIED", JSON.stringify(ws.body));
      assert.equal(ws.body.results[0].error.message, http.body.results[0].error.message);
      assert.match(ws.body.results[0].error.message, /localhost resolves to \S+, a loopback/);
      assert.equal(rewards.connections.size, 0);
      assert.equal(rewards.httpScoreCalls, 0);
    } finally {
      await strict.close();
    }
  });
});

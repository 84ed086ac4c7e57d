// What an external endpoint (the tenant's own server) can make the API process do, bounded: its
// metadata schema's check is metered (a budget per thread and per batch; over it is the
// endpoint's fault), and its replies are read to what a valid reply could need before anything
// parses them. The real server, a reward server scripted on loopback, the real egress agent.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, beforeEach, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { egressAgent, egressPolicy } from "../server/egress.ts";
import { MAX_RESPONSE_BYTES, ModelClient } from "../server/judges/model-client.ts";
import { UpstreamError } from "../server/upstream.ts";
import { call, startServer, type TestServer } from "./support/helpers.ts";

const P = "/v1/projects/bounds";
let s: TestServer;

interface Reply {
  /** the body, or a generator of its pieces (written as the socket drains) */
  body?: string | (() => Iterable<string>);
  headers?: Record<string, string>;
  gzip?: Buffer;
}

/** A reward server: its /info and /metadata_schema as set, /batch_score and /score as `reply` says (default: 0.5 each). */
class RewardServer {
  server: Server | undefined;
  url = "";
  info = JSON.stringify({ version: "1", name: "bounds", description: "" });
  schema: string | undefined;
  reply: ((path: string, body: { requests?: Array<{ id: string }>; id?: string }) => Reply) | undefined;
  /** the scoring requests it got */
  calls: string[] = [];
  /** per reply streamed from a generator: bytes the socket took, bytes the reply had, whether the client left early */
  streamed: Array<{ written: number; total: number; closedEarly: boolean; closed: Promise<void> }> = [];

  async start() {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }
  async close() {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
  private async handle(req: IncomingMessage, res: ServerResponse) {
    let text = "";
    for await (const chunk of req) text += chunk;
    const path = req.url ?? "";
    res.on("error", () => {});
    if (path === "/info") return void res.end(this.info);
    if (path === "/metadata_schema") return void (this.schema === undefined ? res.writeHead(404).end() : res.end(this.schema));
    const body = JSON.parse(text);
    this.calls.push(path);
    const r = this.reply?.(path, body) ?? {};
    if (r.gzip) return void res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" }).end(r.gzip);
    if (typeof r.body === "function") return this.stream(res, r.body());
    const answer =
      r.body ??
      JSON.stringify(
        path === "/batch_score"
          ? { responses: (body.requests as Array<{ id: string }>).map((q) => ({ reward: 0.5, id: q.id })) }
          : { reward: 0.5, id: body.id },
      );
    res.writeHead(200, { "content-type": "application/json", ...r.headers }).end(answer);
  }
  /** Writes the pieces as the socket drains, and records how much the socket took before the client left. */
  private stream(res: ServerResponse, pieces: Iterable<string>) {
    const all = [...pieces].join("");
    const total = Buffer.byteLength(all);
    const socket = res.socket;
    // a kept-alive socket has carried earlier answers: count this one's bytes only
    const before = socket?.bytesWritten ?? 0;
    let closed = () => {};
    const record = { written: 0, total, closedEarly: false, closed: new Promise<void>((resolve) => (closed = resolve)) };
    this.streamed.push(record);
    res.on("close", () => {
      record.written = (socket?.bytesWritten ?? 0) - before;
      record.closedEarly = !res.writableFinished;
      closed();
    });
    res.writeHead(200, { "content-type": "application/json", "content-length": String(total) });
    const block = 64 * 1024;
    let at = 0;
    const pump = () => {
      while (at < all.length && !res.destroyed) {
        const ok = res.write(all.slice(at, at + block));
        at += block;
        if (!ok) return void res.once("drain", pump);
      }
      if (!res.destroyed) res.end();
    };
    pump();
  }
}
let rewards: RewardServer;

const thread = (metadata: Record<string, unknown> = {}) => ({
  turns: [
    { role: "user", content: "q" },
    { role: "assistant", content: "a" },
  ],
  metadata,
});

async function endpoint(key: string, schema: unknown) {
  rewards.schema = schema === undefined ? undefined : JSON.stringify(schema);
  const r = await call(s.app, "POST", `${P}/graders/external-endpoint`, { key, url: rewards.url });
  assert.equal(r.status, 201, JSON.stringify(r.body));
}

async function metric(series: RegExp): Promise<number> {
  const res = await s.app.inject({ method: "GET", url: "/metrics", headers: { authorization: `Bearer ${s.metricsToken}` } });
  const line = res.body.split("\n").find((l) => series.test(l));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

type Result = { score?: number; error?: { code: string; message: string } };
const grade = async (key: string, threads: unknown[]) => {
  const r = await call(s.app, "POST", `${P}/graders/${key}/grade-batch`, { threads });
  assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 500));
  return r.body.results as Result[];
};

before(async () => {
  s = await startServer({ env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32" } });
  rewards = await new RewardServer().start();
});
after(async () => {
  await rewards.close();
  await s.close();
});
beforeEach(() => {
  rewards.reply = undefined;
  rewards.calls = [];
  rewards.streamed = [];
});

describe("the metadata schema's check is metered", () => {
  test("an anyOf of 40 failing contains over a 2 MB array: INVALID_METADATA naming the budget, the rest fails fast, one fault", async () => {
    // 1.3 KB of schema; ajv took 4.3 GB and 88 s over this metadata
    await endpoint("anyof", { properties: { xs: { anyOf: Array.from({ length: 40 }, () => ({ contains: { type: "string" } })) } } });
    const results = await grade("anyof", [thread({ xs: new Array(1_000_000).fill(0) }), thread({ xs: [1] }), thread()]);
    assert.equal(results[0].error?.code, "INVALID_METADATA");
    assert.match(
      results[0].error?.message ?? "",
      /^checking this thread's metadata against the endpoint's metadata schema took more than 1000000 units of work/,
    );
    for (const r of results.slice(1)) {
      assert.equal(r.error?.code, "INVALID_METADATA");
      assert.match(r.error?.message ?? "", /^not checked: an earlier thread of this batch went over the thread budget .*\(1000000 units/);
    }
    assert.deepEqual(rewards.calls, [], "nothing was sent");
    // the check ran once: the first thread's budget and a unit, nothing for the other two
    assert.equal(await metric(/^gradebox_endpoint_schema_units_total\{endpoint="bounds\/anyof"\}/), 1_000_001);
    assert.equal(await metric(/^gradebox_endpoint_schema_checks_total\{endpoint="bounds\/anyof",outcome="over_budget"\}/), 1);
    assert.equal(await metric(/^gradebox_endpoint_schema_checks_total\{endpoint="bounds\/anyof",outcome="not_checked"\}/), 2);
    // one fault for the batch, not one per item
    const got = await call(s.app, "GET", `${P}/graders/anyof`);
    assert.equal(got.body.recentFaults, 1);
    assert.equal(got.body.quarantinedAt, null);
    // the API is up, and the same endpoint grades metadata within the budget
    assert.equal((await s.app.inject({ method: "GET", url: "/healthz" })).statusCode, 200);
    const ok = await grade("anyof", [thread({ xs: [1, "a"] })]);
    assert.deepEqual(ok, [{ outcome: "scored", score: 0.5 }]);
  });

  test("three batches over budget quarantine the endpoint grader", async () => {
    await endpoint("quarantined", { properties: { xs: { items: { not: { type: "string" } } } } });
    const heavy = thread({ xs: new Array(600_000).fill(0) });
    for (let k = 0; k < 3; k++) {
      const [r] = await grade("quarantined", [heavy]);
      assert.match(r.error?.message ?? "", /took more than 1000000 units of work/);
    }
    const got = await call(s.app, "GET", `${P}/graders/quarantined`);
    assert.equal(got.body.recentFaults, 3);
    assert.notEqual(got.body.quarantinedAt, null);
    const refused = await call(s.app, "POST", `${P}/graders/quarantined/grade`, { thread: thread() });
    assert.equal(refused.status, 423);
    assert.equal(refused.body.code, "GRADER_QUARANTINED");
    assert.match(refused.body.detail, /checking metadata against its metadata schema went over budget 3 times within 10 minutes/);
  });

  test("an enum of 2,400 integers costs one lookup per value, not 2,400", async () => {
    await endpoint("enum", { properties: { xs: { items: { enum: Array.from({ length: 2400 }, (_, i) => i) } } } });
    const n = 400_000;
    const results = await grade("enum", [thread({ xs: new Array(n).fill(2399) }), thread({ xs: [2400] })]);
    assert.deepEqual(results[0], { outcome: "scored", score: 0.5 });
    assert.equal(results[1].error?.code, "INVALID_METADATA");
    assert.match(
      results[1].error?.message ?? "",
      /the endpoint's metadata schema refuses it: metadata\.xs\.0 must be equal to one of the allowed values/,
    );
    // per value: its items node and one enum lookup (2,400 comparisons each would be 960 M units)
    const units = await metric(/^gradebox_endpoint_schema_units_total\{endpoint="bounds\/enum"\}/);
    assert.ok(units >= 2 * n && units < 2 * n + 50, `${units} units`);
  });

  test("a batch's checks share a budget: past it, that thread and the rest fail, the earlier ones are graded", async () => {
    // 2 units per element: 450,000 elements is 900,000 units, within a thread's budget
    await endpoint("batchbudget", { properties: { xs: { items: { not: { type: "string" } } } } });
    const heavy = thread({ xs: new Array(450_000).fill(0) });
    const results = await grade("batchbudget", [heavy, heavy, heavy, heavy, heavy, thread()]);
    assert.deepEqual(results.slice(0, 4), [
      { outcome: "scored", score: 0.5 },
      { outcome: "scored", score: 0.5 },
      { outcome: "scored", score: 0.5 },
      { outcome: "scored", score: 0.5 },
    ]);
    assert.match(results[4].error?.message ?? "", /^checking this batch's metadata .* took more than 4000000 units of work in all/);
    assert.match(results[5].error?.message ?? "", /^not checked: an earlier thread of this batch went over the batch budget/);
    assert.equal(await metric(/^gradebox_endpoint_schema_units_total\{endpoint="bounds\/batchbudget"\}/), 4_000_001);
  });

  test("a combined grader's parts share the request's budget: two parts cost what one batch may, not twice it", async () => {
    await endpoint("shared", { properties: { xs: { items: { not: { type: "string" } } } } });
    const combined = await call(s.app, "POST", `${P}/graders/combined`, {
      key: "shared-twice",
      mode: "weighted",
      graders: [
        { graderKey: "shared", name: "a" },
        { graderKey: "shared", name: "b" },
      ],
    });
    assert.equal(combined.status, 201, JSON.stringify(combined.body));
    // 900,000 units a thread: one part's three threads fit the batch budget (2.7 M of 4 M), two parts' do not
    const heavy = thread({ xs: new Array(450_000).fill(0) });
    const results = await grade("shared-twice", [heavy, heavy, heavy]);
    assert.equal(results[0].score, 0.5, JSON.stringify(results[0]));
    const last = results[2];
    assert.equal(last.error?.code, "COMPONENT_FAILED", JSON.stringify(last));
    assert.match(last.error?.message ?? "", /took more than 4000000 units of work in all/);
    // the request's checks stopped at the budget, however many parts it has
    const units = await metric(/^gradebox_endpoint_schema_units_total\{endpoint="bounds\/shared"\}/);
    // each part that stops charges the one unit past the budget that stopped it
    assert.ok(units > 3_000_000 && units <= 4_000_002, `${units} units`);
  });

  test("a request reads at most 64 MB of endpoint replies in all, however many parts: past it the rest are not read", async () => {
    await endpoint("fat", undefined);
    const combined = await call(s.app, "POST", `${P}/graders/combined`, {
      key: "fat-nine",
      mode: "weighted",
      graders: Array.from({ length: 9 }, (_, k) => ({ graderKey: "fat", name: `p${k}` })),
    });
    assert.equal(combined.status, 201, JSON.stringify(combined.body));
    // every answer carries 16,000 characters of metadata (a response's most): a part's replies to 500 threads are 8 MB, nine parts' 72 MB
    const pad = "x".repeat(16_000);
    rewards.reply = (_path, body) => ({
      body: JSON.stringify({
        responses: (body.requests as Array<{ id: string }>).map((q) => ({ reward: 0.5, id: q.id, metadata: { pad } })),
      }),
    });
    const results = await grade(
      "fat-nine",
      Array.from({ length: 500 }, (_, i) => thread({ i })),
    );
    const failed = results.filter((r) => r.error);
    assert.ok(failed.length > 0 && failed.length < 500, `${failed.length} failed`);
    for (const r of failed) {
      assert.equal(r.error?.code, "COMPONENT_FAILED");
      assert.match(r.error?.message ?? "", /ENDPOINT_INVALID_RESPONSE: not read: this request's endpoint replies would pass 64 MB in all/);
    }
  });

  test("a normal schema: metadata that fits is graded, the rest refused in ajv's words", async () => {
    await endpoint("normal", {
      type: "object",
      required: ["expected"],
      properties: { expected: { type: "string", maxLength: 10 }, tags: { type: "array", items: { enum: ["a", "b"] } } },
    });
    const results = await grade("normal", [
      thread({ expected: "4" }),
      thread({}),
      thread({ expected: "4", tags: ["a", "c"] }),
      thread({ expected: "01234567890" }),
    ]);
    assert.deepEqual(results[0], { outcome: "scored", score: 0.5 });
    assert.deepEqual(
      results.slice(1).map((r) => r.error?.message),
      [
        "the endpoint's metadata schema refuses it: metadata must have required property 'expected'",
        "the endpoint's metadata schema refuses it: metadata.tags.1 must be equal to one of the allowed values",
        "the endpoint's metadata schema refuses it: metadata.expected must NOT have more than 10 characters",
      ],
    );
    assert.deepEqual(rewards.calls, ["/batch_score"]);
  });
});

describe("replies are bounded before they are parsed", () => {
  test("1.2 M responses to 2 requests: ENDPOINT_INVALID_RESPONSE, and the reply stopped being read early", async () => {
    await endpoint("flood", undefined);
    rewards.reply = () => ({
      body: function* () {
        yield '{"responses": [';
        for (let i = 0; i < 1_200_000; i++) yield i ? ',{"reward":0}' : '{"reward":0}';
        yield "]}";
      },
    });
    const results = await grade("flood", [thread(), thread()]);
    for (const r of results) {
      assert.equal(r.error?.code, "ENDPOINT_INVALID_RESPONSE");
      assert.equal(r.error?.message, "/batch_score answered more than 2 responses to 2 requests");
    }
    const [sent] = rewards.streamed;
    await sent.closed;
    assert.ok(sent.total > 15_000_000, `${sent.total} bytes`);
    assert.ok(sent.closedEarly, "the client dropped the connection");
    // what left the server is what the kernel's socket buffers took (≈ 4 MB here) before the client left
    assert.ok(sent.written < sent.total, `${sent.written} of ${sent.total} bytes left the server`);
  });

  test("a reply is read to what n responses could need (≈ 97 KiB each): a long one is refused there", async () => {
    await endpoint("long", undefined);
    // valid JSON, 300 KB of it: within the old 16 MB, past the cap for one request
    const padded = `{"reward": 1, "metadata": {"pad": "${"x".repeat(300_000)}"}}`;
    rewards.reply = () => ({ body: () => [padded] });
    const [r] = await grade("long", [thread()]);
    assert.equal(r.error?.code, "ENDPOINT_INVALID_RESPONSE");
    assert.equal(
      r.error?.message,
      "/batch_score answered over 103424 bytes, more than a valid reply to this request can need; no more is read",
    );
  });

  test("a gzip bomb is capped as decoded: 64 MB of whitespace in 64 KB of gzip is refused at the cap", async () => {
    await endpoint("gzip", undefined);
    // valid JSON once decoded: the old reader parsed all 64 MB of it
    const bomb = gzipSync(
      Buffer.concat([Buffer.from('{"responses": [{"reward": 1}]'), Buffer.alloc(64 * 1024 * 1024, 0x20), Buffer.from("}")]),
    );
    assert.ok(bomb.length < 100_000);
    rewards.reply = () => ({ gzip: bomb });
    const [r] = await grade("gzip", [thread()]);
    assert.equal(r.error?.code, "ENDPOINT_INVALID_RESPONSE");
    assert.match(r.error?.message ?? "", /^\/batch_score answered over 103424 bytes/);
  });

  test("a normal reply, and a compressed one, keep working", async () => {
    await endpoint("fine", undefined);
    assert.deepEqual(await grade("fine", [thread(), thread()]), [
      { outcome: "scored", score: 0.5 },
      { outcome: "scored", score: 0.5 },
    ]);
    rewards.reply = (_path, body) => ({
      gzip: gzipSync(JSON.stringify({ responses: (body.requests ?? []).map((q) => ({ reward: 0.25, metadata: { k: "é" }, id: q.id })) })),
    });
    assert.deepEqual(await grade("fine", [thread(), thread()]), [
      { outcome: "scored", score: 0.25, metadata: { k: "é" } },
      { outcome: "scored", score: 0.25, metadata: { k: "é" } },
    ]);
  });

  test("registration reads /info and /metadata_schema to a small cap", async () => {
    const info = rewards.info;
    try {
      rewards.info = JSON.stringify({ version: "1", name: "x", description: "d".repeat(70_000) });
      const big = await call(s.app, "POST", `${P}/graders/external-endpoint`, { key: "bigprobe", url: rewards.url });
      assert.equal(big.status, 422);
      assert.match(big.body.message, /GET \/info: \/info answered over 65536 bytes/);
      rewards.info = info;
      rewards.schema = JSON.stringify({ type: "object", description: "d".repeat(140_000) });
      const schema = await call(s.app, "POST", `${P}/graders/external-endpoint`, { key: "bigprobe", url: rewards.url });
      assert.equal(schema.status, 422);
      assert.match(schema.body.message, /GET \/metadata_schema: \/metadata_schema answered over 131072 bytes/);
    } finally {
      rewards.info = info;
      rewards.schema = undefined;
    }
  });
});

describe("model replies", () => {
  test("are capped as decoded too: a gzip bomb is refused at 1 MB, not read whole", async () => {
    const completion = '{"choices": [{"message": {"content": "yes"}}]';
    const bomb = gzipSync(Buffer.concat([Buffer.from(completion), Buffer.alloc(64 * 1024 * 1024, 0x20), Buffer.from("}")]));
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" }).end(bomb));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const agent = egressAgent(egressPolicy("127.0.0.1/32"), { maxResponseSize: MAX_RESPONSE_BYTES });
    try {
      const port = (server.address() as { port: number }).port;
      const client = new ModelClient(
        { id: "m", project: "p", key: "m", baseURL: `http://127.0.0.1:${port}/v1`, model: "x", maxConcurrency: 1, timeoutMs: 10_000 },
        agent,
      );
      await assert.rejects(
        client.chat([{ role: "user", content: "hi" }]),
        (e) => e instanceof UpstreamError && e.kind === "invalid" && /over 1048576 bytes/.test(e.message),
      );
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await agent.close();
    }
  });
});

// Outbound fan-out is shared fairly: one project's calls in flight across all its models and
// endpoints are capped, the node's too, waiting calls are served round-robin across projects,
// and a project whose remotes hang holds only its own share while another project is served.

import assert from "node:assert/strict";
import { createServer, type Server, type ServerResponse } from "node:http";
import { after, before, describe, test } from "node:test";
import { OutboundGate } from "../server/outbound.ts";
import { Upstream, UpstreamError } from "../server/upstream.ts";
import { call, startServer, type TestServer } from "./support/helpers.ts";

describe("OutboundGate", () => {
  test("caps a project's calls and the node's, and serves waiting projects in turn", async () => {
    const gate = new OutboundGate({ perProject: 2, total: 3, maxWaiting: 10 });
    const order: string[] = [];
    const take = async (project: string) => {
      const release = await gate.acquire(project);
      order.push(project);
      return release;
    };
    const a1 = await take("a");
    const a2 = await take("a");
    // a is at its own cap: a's third waits though the node has room, b goes at once
    const a3 = take("a");
    const b1 = await take("b");
    assert.deepEqual(gate.load.projects.a, { active: 2, waiting: 1 });
    assert.equal(gate.load.inFlight, 3);
    // the node is full: b and c wait too
    const b2 = take("b");
    const c1 = take("c");
    assert.deepEqual(order, ["a", "a", "b"]);
    // a frees one: its own waiting call goes first in the ring, then b's and c's in turn as slots free
    a1();
    await a3;
    assert.deepEqual(order, ["a", "a", "b", "a"]);
    b1();
    await b2;
    a2();
    await c1;
    assert.deepEqual(order, ["a", "a", "b", "a", "b", "c"]);
    assert.equal(gate.load.inFlight, 3);
  });

  test("a project past its waiting bound fails at once, and another project is not affected", async () => {
    const gate = new OutboundGate({ perProject: 1, total: 10, maxWaiting: 2 });
    await gate.acquire("greedy");
    void gate.acquire("greedy");
    void gate.acquire("greedy");
    await assert.rejects(gate.acquire("greedy"), (e: unknown) => e instanceof UpstreamError && /2 outbound calls waiting/.test(e.message));
    const other = await gate.acquire("polite");
    other();
  });

  test("a release is counted once", async () => {
    const gate = new OutboundGate({ perProject: 1, total: 1, maxWaiting: 10 });
    const r = await gate.acquire("a");
    r();
    r();
    assert.equal(gate.load.inFlight, 0);
    const again = await gate.acquire("a");
    assert.equal(gate.load.inFlight, 1);
    again();
  });
});

describe("an Upstream behind the gate", () => {
  test("calls that waited for a slot while the target was found down fail fast instead of being sent", async () => {
    const gate = new OutboundGate({ perProject: 1, total: 1, maxWaiting: 100 });
    const upstream = new Upstream("down", { maxConcurrency: 100, timeoutMs: 1000, retries: 0, breakerThreshold: 5, gate: gate.for("p") });
    let attempts = 0;
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, () =>
        upstream
          .call(async () => {
            attempts++;
            await new Promise((r) => setTimeout(r, 1));
            throw new UpstreamError("unavailable", "down");
          })
          .catch((e: Error) => e.message),
      ),
    );
    // 50 calls queued at the gate; the breaker opened after the 5th failure and the other 45 were never sent
    assert.equal(attempts, 5);
    assert.equal(outcomes.filter((m) => /circuit open/.test(m)).length, 45);
    assert.equal(gate.load.inFlight, 0, "every slot was given back");
  });
});

/** A reward server whose /batch_score hangs, counting the calls open at once. */
class HangingRewards {
  private server?: Server;
  private readonly held: ServerResponse[] = [];
  open = 0;
  maxOpen = 0;
  url = "";
  constructor(private readonly hang: boolean) {}
  async start(): Promise<this> {
    this.server = createServer(async (req, res) => {
      for await (const _ of req);
      if (req.url === "/info") return void res.end(JSON.stringify({ version: "1", name: "rm", description: "d" }));
      if (req.url === "/metadata_schema") return void res.writeHead(404).end();
      this.open++;
      this.maxOpen = Math.max(this.maxOpen, this.open);
      res.on("close", () => this.open--);
      if (this.hang) return void this.held.push(res);
      res.end(JSON.stringify({ responses: [{ reward: 0.75, metadata: {} }] }));
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    if (address && typeof address === "object") this.url = `http://127.0.0.1:${address.port}`;
    return this;
  }
  async close() {
    for (const res of this.held) res.destroy();
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

describe("one project's hanging remotes", () => {
  let s: TestServer;
  let hanging: HangingRewards;
  let healthy: HangingRewards;
  before(async () => {
    hanging = await new HangingRewards(true).start();
    healthy = await new HangingRewards(false).start();
    s = await startServer({ env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32", GRADEBOX_OUTBOUND_PER_PROJECT: "8" }, listen: true });
  });
  after(async () => {
    await s.close();
    await hanging.close();
    await healthy.close();
  });

  test("hold at most the project's share of sockets; a neighbour and /healthz are served meanwhile", async () => {
    const thread = { turns: [{ role: "assistant", content: "x" }] };
    for (const key of ["h1", "h2", "h3"]) {
      const r = await call(s.app, "POST", "/v1/projects/attacker/graders/external-endpoint", {
        key,
        url: hanging.url,
        batchSize: 1,
        maxConcurrency: 256,
        timeoutMs: 60_000,
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
    }
    const ok = await call(s.app, "POST", "/v1/projects/neighbour/graders/external-endpoint", { key: "rm", url: healthy.url });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    // 3 endpoints × 200 one-thread chunks, each endpoint allowing 256 at once: 600 calls wanted
    const attack = ["h1", "h2", "h3"].map((key) =>
      call(s.app, "POST", `/v1/projects/attacker/graders/${key}/grade-batch`, { threads: Array.from({ length: 200 }, () => thread) }),
    );
    // wait until the attacker's calls have reached the remote
    for (let i = 0; i < 200 && hanging.open < 8; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(hanging.open, 8);
    for (let i = 0; i < 5; i++) {
      const r = await call(s.app, "POST", "/v1/projects/neighbour/graders/rm/grade", { thread });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.score, 0.75);
      const health = await fetch(`${s.url}/healthz`);
      assert.equal(health.status, 200);
    }
    assert.equal(hanging.maxOpen, 8, "the attacker never had more than its share open");
    // the hanging remote goes away: the waiting calls fail, nothing stays stuck
    await hanging.close();
    const answers = await Promise.all(attack);
    for (const a of answers) {
      assert.equal(a.status, 200);
      assert.ok(a.body.results.every((r: { error?: { code: string } }) => r.error?.code === "ENDPOINT_UNAVAILABLE"));
    }
    assert.equal((await fetch(`${s.url}/healthz`)).status, 200);
  });
});

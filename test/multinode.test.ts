// Three stateless nodes on one PostgreSQL registry behind a real load balancer (HAProxy), driven
// by the SDK: a grader made on one node grades on all; a delete, lock, update, quarantine or key
// revocation made on one node holds on every other at once; and a node killed mid-batch costs the
// batch nothing (the SDK retries, HAProxy sends the retries to the nodes left) and loses no
// acknowledged registration.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ConflictError, Gradebox, NotFoundError } from "../sdk/index.ts";
import { Store } from "../server/store.ts";
import { type Haproxy, startHaproxy } from "./support/haproxy.ts";
import { type SpawnedServer, spawnServer } from "./support/helpers.ts";
import { createDatabase, type Postgres, startPostgres } from "./support/pg.ts";

const PROJECT = "fleet";
let pg: Postgres;
let admin: Store; // the test's own view of the registry (as `gradebox keys` has it)
let key: string;
let nodes: SpawnedServer[] = [];
let lb: Haproxy;
let viaLb: Gradebox;
let direct: Gradebox[];

const thread = (completion: string, metadata: Record<string, unknown> = {}) => ({
  turns: [
    { role: "user" as const, content: "q" },
    { role: "assistant" as const, content: completion },
  ],
  metadata,
});

before(async () => {
  pg = await startPostgres();
  const url = await createDatabase(pg.url);
  admin = await Store.open({ db: url });
  // a key exists before the nodes start, so none of them makes (and writes out) a default one
  key = (await admin.keys.create(PROJECT, "fleet test")).key;
  nodes = await Promise.all(
    [1, 2, 3].map(() =>
      spawnServer({
        GRADEBOX_DB: url,
        GRADEBOX_WORKERS: "1",
        GRADEBOX_PG_POOL: "4",
        GRADEBOX_MAX_BATCH: "100",
        GRADEBOX_LOG_LEVEL: "warn",
        GRADEBOX_METRICS_TOKEN: "fleet-metrics-token-0123456789",
      }),
    ),
  );
  lb = await startHaproxy(nodes.map((n) => ({ host: "127.0.0.1", port: Number(new URL(n.url).port) })));
  viaLb = new Gradebox({ baseURL: lb.url, project: PROJECT, apiKey: key });
  direct = nodes.map((n) => new Gradebox({ baseURL: n.url, project: PROJECT, apiKey: key, maxRetries: 0 }));
});

after(async () => {
  await lb?.stop();
  for (const n of nodes) n.child.kill("SIGKILL");
  await Promise.all(nodes.map((n) => n.exited));
  await admin?.close();
  await pg?.stop();
});

const requestsPerNode = async () => (await lb.stats()).map((s) => s.requests);

describe("three nodes, one registry, one load balancer", () => {
  test("a grader created on one node grades through the load balancer on all three", async () => {
    await direct[0].graders.create.function({
      key: "exact",
      source: "async (t) => t.completion() === String(t.metadata.expected ?? '') ? 1 : 0",
    });
    const before = await requestsPerNode();
    const scores = await Promise.all(
      Array.from({ length: 30 }, (_, i) => viaLb.graders.grade({ graderKey: "exact", thread: thread(String(i), { expected: "7" }) })),
    );
    assert.deepEqual(
      scores.map((s) => s.score),
      Array.from({ length: 30 }, (_, i) => (i === 7 ? 1 : 0)),
    );
    const after = await requestsPerNode();
    assert.ok(
      after.every((n, i) => n - (before[i] ?? 0) >= 3),
      `every node served some of the 30: ${after.map((n, i) => n - (before[i] ?? 0))}`,
    );
  });

  test("a Python grader created on one node grades on all three, and an update to it holds on the others", async () => {
    const source = (right: string) =>
      `async def grade(thread):\n    return ${right} if thread.completion() == str(thread.metadata.get("expected", "")) else 0.0\n`;
    await direct[0].graders.create.function({ key: "py-exact", source: source("1.0"), language: "python" });
    for (const c of direct) {
      const r = await c.graders.grade({ graderKey: "py-exact", thread: thread("7", { expected: "7" }) });
      assert.deepEqual([r.score, r.version], [1, 1]);
    }
    await direct[1].graders.update({ graderKey: "py-exact", source: source("0.5") });
    for (const c of direct) {
      const r = await c.graders.grade({ graderKey: "py-exact", thread: thread("7", { expected: "7" }) });
      assert.deepEqual([r.score, r.version], [0.5, 2]);
    }
    assert.equal((await direct[2].graders.get({ graderKey: "py-exact" })).language, "python");
  });

  test("update, lock and delete on one node hold on the others the moment they are acknowledged", async () => {
    await direct[0].graders.create.function({ key: "moving", source: "async (t) => 1" });
    for (const c of direct) assert.equal((await c.graders.grade({ graderKey: "moving", thread: thread("x") })).score, 1); // warm everywhere

    await direct[0].graders.update({ graderKey: "moving", source: "async (t) => 2" });
    for (const c of direct.slice(1))
      assert.deepEqual(await c.graders.grade({ graderKey: "moving", thread: thread("x") }).then((r) => [r.score, r.version]), [2, 2]);

    await direct[1].graders.lock({ graderKey: "moving", locked: true });
    await assert.rejects(
      direct[2].graders.delete({ graderKey: "moving" }),
      (e) => e instanceof ConflictError && e.code === "GRADER_LOCKED",
    );
    await direct[2].graders.lock({ graderKey: "moving", locked: false });

    for (const c of direct) await c.graders.grade({ graderKey: "moving", thread: thread("x") }); // warm again
    await direct[0].graders.delete({ graderKey: "moving" });
    for (const c of direct.slice(1)) {
      await assert.rejects(
        c.graders.grade({ graderKey: "moving", thread: thread("x") }),
        (e) => e instanceof NotFoundError && e.code === "GRADER_NOT_FOUND",
      );
    }
  });

  test("a key revoked in the registry stops working on every node within 1 s", async () => {
    const { key: doomed, info } = await admin.keys.create(PROJECT, "doomed");
    const clients = nodes.map((n) => new Gradebox({ baseURL: n.url, project: PROJECT, apiKey: doomed, maxRetries: 0 }));
    for (const c of clients) await c.graders.listPage({ limit: 1 }); // known (and cached) on every node
    const revoked = performance.now();
    await admin.keys.revoke(info.id);
    const stoppedAfter = await Promise.all(
      clients.map(async (c) => {
        for (;;) {
          const ok = await c.graders.listPage({ limit: 1 }).then(
            () => true,
            () => false,
          );
          if (!ok) return performance.now() - revoked;
          assert.ok(performance.now() - revoked < 1000, "still accepted after 1 s");
          await new Promise((r) => setTimeout(r, 10));
        }
      }),
    );
    assert.ok(
      stoppedAfter.every((ms) => ms < 1000),
      `refused after ${stoppedAfter.map((ms) => ms.toFixed(0)).join(", ")} ms`,
    );
  });

  test("faults count across nodes: one crash on each of the three quarantines the grader everywhere", async () => {
    await direct[0].graders.create.function({
      key: "bomb",
      source: "async (t) => { if (t.metadata.boom) new Array(6e7).fill(0); return 1 }",
    });
    for (const c of direct) {
      const res = await c.graders.grade({ graderKey: "bomb", thread: thread("x", { boom: true }) }).catch((e) => e);
      assert.ok(res instanceof Error, "the bomb took its worker down");
    }
    // the third fault is recorded as its node sees the worker die, beside the answer: every node refuses within 1 s
    const started = performance.now();
    for (const c of direct) {
      for (;;) {
        const code = await c.graders.grade({ graderKey: "bomb", thread: thread("x") }).then(
          () => "scored",
          (e) => (e as { code?: string }).code,
        );
        if (code === "GRADER_QUARANTINED") break;
        assert.ok(performance.now() - started < 1000, `still ${code} after 1 s`);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    await direct[1].graders.release({ graderKey: "bomb" });
    assert.equal((await direct[2].graders.grade({ graderKey: "bomb", thread: thread("x") })).score, 1);
  });

  test("SIGKILL one node mid-batch: the batch completes through the others, no acknowledged registration is lost", async () => {
    const threads = Array.from({ length: 3000 }, (_, i) => thread(String(i % 10), { expected: "3" }));
    // node 1 dies once 5 of the batch's 30 parts have been answered: mid-batch for certain
    let answered = 0;
    let killedAt: number | undefined;
    const counting = new Gradebox({
      baseURL: lb.url,
      project: PROJECT,
      apiKey: key,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        if (new URL(String(input)).pathname.endsWith("/grade-batch") && response.ok && ++answered === 5) {
          killedAt = answered;
          nodes[1].child.kill("SIGKILL");
        }
        return response;
      },
    });
    const batch = counting.graders.gradeBatch({ graderKey: "exact", threads }); // 30 requests of 100, 4 at a time
    const acknowledged: string[] = [];
    const registrations = (async () => {
      for (let i = 0; i < 40; i++) {
        const key = `reg-${i}`;
        await viaLb.graders.create.function({ key, source: "async (t) => 1" }).then(
          () => acknowledged.push(key),
          () => {}, // a create cut off with its node is not retried (it is not idempotent); it was never acknowledged
        );
      }
    })();
    const { results } = await batch;
    await registrations;
    assert.equal(killedAt, 5, "node 1 was killed with 25 parts still to answer");
    assert.equal(results.length, 3000);
    assert.deepEqual(
      results.map((r) => ("score" in r ? r.score : "error" in r ? r.error.code : r.abstained.code)),
      threads.map((t) => (t.turns[1].content === "3" ? 1 : 0)),
    );
    const stored = new Set((await viaLb.graders.list()).map((g) => g.key));
    assert.deepEqual(
      acknowledged.filter((k) => !stored.has(k)),
      [],
      "every acknowledged registration is in the registry",
    );
    assert.ok(acknowledged.length >= 30, `${acknowledged.length} of 40 registrations acknowledged`);
  });
});

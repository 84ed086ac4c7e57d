// The multi-node test infrastructure itself: a throwaway PostgreSQL cluster (test/support/pg.ts) and haproxy
// in front of several servers (test/support/haproxy.ts). scripts/ensure-postgres.sh and scripts/ensure-haproxy.sh
// install Debian's packages when they are missing.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { test } from "node:test";
import pg from "pg";
import { startHaproxy } from "./support/haproxy.ts";
import { createDatabase, startPostgres } from "./support/pg.ts";
import { accepts } from "./support/ports.ts";

test("startPostgres: a throwaway cluster with SELECT, LISTEN/NOTIFY, createDatabase; stop() frees the port and the dir", async () => {
  const db = await startPostgres();
  let stopped = false;
  try {
    assert.equal(db.url, `postgres://gradebox@127.0.0.1:${db.port}/gradebox`);
    const one = new pg.Client({ connectionString: db.url });
    await one.connect();
    try {
      assert.deepEqual((await one.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
      assert.equal((await one.query("SELECT current_database() AS d")).rows[0].d, "gradebox");
    } finally {
      await one.end();
    }

    const url = await createDatabase(db.url, "suite_infra");
    assert.equal(url, `postgres://gradebox@127.0.0.1:${db.port}/suite_infra`);
    const listener = new pg.Client({ connectionString: url });
    const notifier = new pg.Client({ connectionString: url });
    await listener.connect();
    await notifier.connect();
    try {
      assert.equal((await notifier.query("SELECT current_database() AS d")).rows[0].d, "suite_infra");
      const got = new Promise<pg.Notification>((resolve) => listener.once("notification", resolve));
      await listener.query("LISTEN x");
      await notifier.query("NOTIFY x, 'hello'");
      const n = await Promise.race([
        got,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no notification in 5 s")), 5_000).unref()),
      ]);
      assert.equal(n.channel, "x");
      assert.equal(n.payload, "hello");
    } finally {
      await listener.end();
      await notifier.end();
    }

    assert.ok(existsSync(db.dir));
    await db.stop();
    stopped = true;
    assert.equal(await accepts(db.port), false, "the port still accepts connections after stop()");
    assert.equal(existsSync(db.dir), false, "the cluster's dir is still there after stop()");
  } finally {
    if (!stopped) await db.stop();
  }
});

test("startHaproxy: round robin over three nodes; a closed node is retried elsewhere and marked DOWN", async () => {
  const names = ["alpha", "beta", "gamma"];
  const servers: Server[] = [];
  for (const name of names) {
    const server = createServer((req, res) => {
      res.setHeader("content-type", "text/plain");
      res.end(req.url === "/readyz" ? "ready" : name);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
  }
  const close = (server: Server) =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  const backends = servers.map((s) => ({ host: "127.0.0.1", port: (s.address() as { port: number }).port }));
  const lb = await startHaproxy(backends);
  try {
    const get = async () => {
      const res = await fetch(lb.url);
      return { status: res.status, body: await res.text() };
    };
    const first: string[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await get();
      assert.equal(res.status, 200);
      first.push(res.body);
    }
    assert.deepEqual([...new Set(first)].sort(), names);
    const before = await lb.stats();
    assert.deepEqual(
      before.map((s) => s.name),
      ["node1", "node2", "node3"],
    );
    assert.ok(
      before.every((s) => s.status === "UP" && s.requests > 0),
      JSON.stringify(before),
    );
    assert.equal(
      before.reduce((sum, s) => sum + s.requests, 0),
      30,
    );

    await close(servers[1]); // beta = node2
    // Before and after the health check notices: every request succeeds, on alpha or gamma.
    const after: string[] = [];
    const end = Date.now() + 3_000;
    let down = false;
    while (!down || after.length < 30) {
      const res = await get();
      assert.equal(res.status, 200, `a request failed after node2 closed: ${res.body}`);
      after.push(res.body);
      down = (await lb.stats()).find((s) => s.name === "node2")?.status === "DOWN";
      assert.ok(down || Date.now() < end, "node2 not marked DOWN within 3 s");
    }
    assert.deepEqual([...new Set(after)].sort(), ["alpha", "gamma"]);
    const stats = await lb.stats();
    assert.deepEqual(
      stats.map((s) => s.status),
      ["UP", "DOWN", "UP"],
    );
  } finally {
    await lb.stop();
    for (const server of servers) if (server.listening) await close(server);
  }
});

// The API collects the garbage a burst left once it is idle (server/plugins/idle-gc.ts): a heap
// grown by 100 MB of dropped objects is collected within a few periods, and not while busy.

import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import Fastify from "fastify";
import { idleGcPlugin, worthCollecting } from "../server/plugins/idle-gc.ts";

const MB = 1024 * 1024;

function appWithLog() {
  const lines: Array<{ msg: string; beforeMb?: number; afterMb?: number }> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { app: Fastify({ logger: { level: "debug", stream } }), lines };
}

test("a heap left 100 MB larger by a burst is collected once the loop is idle", async () => {
  const { app, lines } = appWithLog();
  await app.register(idleGcPlugin, { everyMs: 100, growthBytes: 32 * MB });
  await app.ready();
  try {
    let burst: number[][] | null = Array.from({ length: 100 }, (_, i) => new Array(128 * 1024).fill(i + 0.5));
    assert.ok(burst.length === 100 && process.memoryUsage().heapUsed > 100 * MB);
    burst = null;
    for (let i = 0; i < 40 && !lines.some((l) => l.msg === "idle heap collected"); i++) await new Promise((r) => setTimeout(r, 100));
    const collected = lines.find((l) => l.msg === "idle heap collected");
    assert.ok(collected, "the idle loop collected the heap");
    assert.ok((collected.beforeMb ?? 0) - (collected.afterMb ?? 0) >= 64, JSON.stringify(collected));
  } finally {
    await app.close();
  }
});

test("no collection while the loop is busy", async () => {
  const { app, lines } = appWithLog();
  await app.register(idleGcPlugin, { everyMs: 100, growthBytes: 1, idleBelow: 0.1 });
  await app.ready();
  try {
    // keep the loop busy for a second: every period's use is over 10%
    const end = Date.now() + 1000;
    while (Date.now() < end) {
      const spin = Date.now() + 50;
      while (Date.now() < spin);
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(lines.filter((l) => l.msg === "idle heap collected").length, 0);
  } finally {
    await app.close();
  }
});

test("collected too when V8 collected the burst itself but kept its pages: much more heap held than used", () => {
  const MBs = (n: number) => n * MB;
  const opts = { idleBelow: 0.1, growthBytes: MBs(64) };
  const floor = { used: MBs(45), total: MBs(60) };
  // the soak's template class: 51 MB used of 245 MB held, nothing in use grown
  assert.equal(worthCollecting({ busy: 0.01, used: MBs(51), total: MBs(245) }, floor, opts), true);
  // in use grown past the floor
  assert.equal(worthCollecting({ busy: 0.01, used: MBs(120), total: MBs(130) }, floor, opts), true);
  // neither: a heap V8 holds a little more of than it uses
  assert.equal(worthCollecting({ busy: 0.01, used: MBs(50), total: MBs(90) }, floor, opts), false);
  // after a collection that could not give the pages back, the same heap is not collected again and again
  assert.equal(worthCollecting({ busy: 0.01, used: MBs(51), total: MBs(245) }, { used: MBs(50), total: MBs(240) }, opts), false);
  // never while busy
  assert.equal(worthCollecting({ busy: 0.5, used: MBs(51), total: MBs(245) }, floor, opts), false);
});

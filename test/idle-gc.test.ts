// The API collects the garbage a burst left once it is idle (server/plugins/idle-gc.ts): a heap
// grown by 100 MB of dropped objects is collected within a few periods, and not while busy.

import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import Fastify from "fastify";
import { idleGcPlugin, worthCollecting } from "../server/plugins/idle-gc.ts";

const MB = 1024 * 1024;

function appWithLog() {
  const lines: Array<{
    msg: string;
    beforeMb?: number;
    afterMb?: number;
    heapAfterMb?: number;
    rssBeforeMb?: number;
    rssAfterMb?: number;
  }> = [];
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

test("the collection gives V8's pages back: the heap held ends near the heap in use, and the process shrinks", async () => {
  const { app, lines } = appWithLog();
  await app.register(idleGcPlugin, { everyMs: 100, growthBytes: 32 * MB });
  await app.ready();
  try {
    // a burst of short-lived strings and arrays, as a template class leaves: a plain full collection
    // frees them but keeps the young generation grown and the freed pages pooled (heap 5 MB used of 136)
    let kept = 0;
    for (let round = 0; round < 20; round++) {
      const junk: string[] = [];
      for (let i = 0; i < 200; i++) junk.push(`${"&".repeat(5000 + i).replace(/&/g, "&amp;")}${i}`);
      for (let i = 0; i < 20; i++) junk.push(JSON.parse(JSON.stringify({ x: `${"y".repeat(1_000_000)}${i}` })).x);
      kept += junk.length;
    }
    assert.equal(kept, 20 * 220);
    for (let i = 0; i < 40 && !lines.some((l) => l.msg === "idle heap collected"); i++) await new Promise((r) => setTimeout(r, 100));
    const collected = lines.find((l) => l.msg === "idle heap collected");
    assert.ok(collected, "the idle loop collected");
    const held = (collected.heapAfterMb ?? 0) - (collected.afterMb ?? 0);
    assert.ok(held < 32, `V8 still holds ${held} MB more heap than is in use: ${JSON.stringify(collected)}`);
    assert.ok((collected.rssBeforeMb ?? 0) - (collected.rssAfterMb ?? 0) >= 64, JSON.stringify(collected));
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
  const floor = { used: MBs(45), total: MBs(60), rss: MBs(200) };
  const rss = MBs(220);
  // the soak's template class: 51 MB used of 245 MB held, nothing in use grown
  assert.equal(worthCollecting({ busy: 0.01, used: MBs(51), total: MBs(245), rss }, floor, opts), true);
  // in use grown past the floor
  assert.equal(worthCollecting({ busy: 0.01, used: MBs(120), total: MBs(130), rss }, floor, opts), true);
  // the process grown though the heap did not: after the template class in a full soak, 51 MB used of
  // 105 MB held and the process 388 MB over its baseline, in pooled pages V8 does not count as heap
  assert.equal(worthCollecting({ busy: 0.01, used: MBs(51), total: MBs(105), rss: MBs(585) }, floor, opts), true);
  // none: a heap V8 holds a little more of than it uses, a process a little larger
  assert.equal(worthCollecting({ busy: 0.01, used: MBs(50), total: MBs(90), rss: MBs(250) }, floor, opts), false);
  // after a collection that could not give the memory back, the same state is not collected again and again
  const after = { used: MBs(50), total: MBs(240), rss: MBs(580) };
  assert.equal(worthCollecting({ busy: 0.01, used: MBs(51), total: MBs(245), rss: MBs(585) }, after, opts), false);
  // never while busy
  assert.equal(worthCollecting({ busy: 0.5, used: MBs(51), total: MBs(245), rss: MBs(585) }, floor, opts), false);
});

// The per-project turns of work on the API's event loop (server/loop-share.ts): at most N at
// once per project, the rest in arrival order, a wait that is aborted leaves the queue.

import assert from "node:assert/strict";
import { test } from "node:test";
import { LoopShare } from "../server/loop-share.ts";
import { DeadlineError } from "../server/upstream.ts";

test("two turns per project: the third waits for a release, in order; another project does not wait", async () => {
  const share = new LoopShare(2);
  const order: string[] = [];
  const a1 = await share.enter("a");
  const a2 = await share.enter("a");
  const a3 = share.enter("a").then((release) => (order.push("a3"), release));
  const a4 = share.enter("a").then((release) => (order.push("a4"), release));
  const b1 = await share.enter("b");
  assert.equal(share.waitingFor("a"), 2);
  assert.equal(share.waitingFor("b"), 0);
  a1();
  (await a3)();
  a2();
  (await a4)();
  b1();
  assert.deepEqual(order, ["a3", "a4"]);
  assert.equal(share.waitingFor("a"), 0);
  // every turn released: the next enters at once
  const again = await share.enter("a");
  again();
});

test("a wait whose signal aborts leaves the queue with DeadlineError; a release then goes to the next", async () => {
  const share = new LoopShare(1);
  const first = await share.enter("p");
  const stop = new AbortController();
  const gone = share.enter("p", stop.signal);
  const next = share.enter("p");
  stop.abort();
  await assert.rejects(gone, DeadlineError);
  assert.equal(share.waitingFor("p"), 1);
  first();
  (await next)();
  // a release twice counts once: the turn is free, taken once, and the next waits
  first();
  const held = await share.enter("p");
  // a wait aborted before it starts never queues
  await assert.rejects(share.enter("p", AbortSignal.abort()), DeadlineError);
  assert.equal(share.waitingFor("p"), 0);
  held();
});

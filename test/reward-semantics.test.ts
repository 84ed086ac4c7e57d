// Issue 25 over HTTP, against the real server: a result names its outcome; a batch's deadline
// answers with every finished result and abstains for the rest (its outbound calls aborted); an
// unavailable endpoint is an error or, when asked, an abstention; a combined grader leaves out
// abstaining parts; groups reach grading contiguous and come back in the request's order; every
// batch answer names its grader's version and source digest.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type Server, type ServerResponse } from "node:http";
import { after, before, describe, test } from "node:test";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

const P = "/v1/projects/semantics/graders";
let s: TestServer;
let rewards: Server;
let rewardsUrl = "";
const hanging = new Set<ServerResponse>();
/** /score calls the reward server has seen aborted by their client */
let aborted = 0;

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** A reward server: 0.5 for every thread, except one whose metadata says hang (it never answers) or down (a 503). */
async function startRewards(): Promise<void> {
  rewards = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    if (req.url === "/info") return void res.end(JSON.stringify({ version: "7.1", name: "half", description: "" }));
    if (req.url === "/metadata_schema") return void res.writeHead(404).end();
    const body = JSON.parse(text) as { id?: string; metadata?: { hang?: boolean; down?: boolean } };
    if (body.metadata?.hang) {
      hanging.add(res);
      res.on("close", () => {
        if (!res.writableEnded) aborted++;
      });
      return;
    }
    if (body.metadata?.down) return void res.writeHead(503).end("{}");
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ reward: 0.5, metadata: {}, id: body.id }));
  });
  await new Promise<void>((resolve) => rewards.listen(0, "127.0.0.1", resolve));
  rewardsUrl = `http://127.0.0.1:${(rewards.address() as { port: number }).port}`;
}

async function create(path: string, body: Record<string, unknown>) {
  const res = await call(s.app, "POST", `${P}${path}`, body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

const INDEXED = "async function grade(t) { return t.metadata.i ?? 0 }";

before(async () => {
  s = await startServer({ env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32" } });
  await startRewards();
  await create("", { key: "indexed", source: INDEXED });
  // retries would outlast the deadline on their own: one attempt, so only the deadline stops a hang
  await create("/external-endpoint", { key: "half", url: rewardsUrl, batch: false, maxConcurrency: 64, timeoutMs: 600_000 });
  // each endpoint grader has its own circuit breaker: the one that fails does not open the others'
  await create("/external-endpoint", { key: "flaky", url: rewardsUrl, batch: false });
  await create("/external-endpoint", { key: "half-part", url: rewardsUrl, batch: false });
  await create("/combined", {
    key: "mixed",
    mode: "weighted",
    graders: [
      { graderKey: "indexed", weight: 1 },
      { graderKey: "half-part", weight: 3 },
    ],
  });
});
after(async () => {
  for (const res of hanging) res.destroy();
  rewards.closeAllConnections();
  await new Promise((resolve) => rewards.close(resolve));
  await s.close();
});

describe("outcomes and provenance", () => {
  test("every result names its outcome; the batch names the grader, its version and its source's SHA-256", async () => {
    const res = await call(s.app, "POST", `${P}/indexed/grade-batch`, { threads: [thread("a", { i: 1 }), thread("b", { i: "x" })] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.results[0], { outcome: "scored", score: 1 });
    assert.equal(res.body.results[1].outcome, "error");
    assert.equal(res.body.results[1].error.code, "INVALID_SCORE");
    assert.deepEqual(res.body.provenance, {
      grader: "indexed",
      kind: "function",
      version: 1,
      sourceSha256: sha256(INDEXED),
      language: "typescript",
    });
    const one = await call(s.app, "POST", `${P}/indexed/grade`, { thread: thread("a", { i: 2 }) });
    assert.deepEqual([one.body.outcome, one.body.score, one.body.provenance.sourceSha256], ["scored", 2, sha256(INDEXED)]);
  });

  test("an endpoint's provenance has the version its /info reported; a combined grader's names each part", async () => {
    const endpoint = await call(s.app, "POST", `${P}/half/grade-batch`, { threads: [thread("a")] });
    assert.equal(endpoint.body.provenance.endpointVersion, "7.1");
    assert.equal(endpoint.body.provenance.kind, "endpoint");
    const combined = await call(s.app, "POST", `${P}/mixed/grade-batch`, { threads: [thread("a", { i: 1 })] });
    assert.deepEqual(
      combined.body.provenance.parts.map((p: { grader: string; kind: string; sourceSha256: string }) => [p.grader, p.kind]),
      [
        ["indexed", "function"],
        ["half-part", "endpoint"],
      ],
    );
    assert.equal(combined.body.provenance.parts[0].sourceSha256, sha256(INDEXED));
  });
});

describe("unavailable endpoints and combined graders", () => {
  test("an endpoint that fails is the thread's error by default, an abstention with onUnavailable: abstain", async () => {
    const threads = [thread("a"), thread("b", { down: true })];
    const errors = await call(s.app, "POST", `${P}/flaky/grade-batch`, { threads });
    assert.deepEqual(
      errors.body.results.map((r: { outcome: string }) => r.outcome),
      ["scored", "error"],
    );
    assert.equal(errors.body.results[1].error.code, "ENDPOINT_UNAVAILABLE");
    const abstains = await call(s.app, "POST", `${P}/flaky/grade-batch`, { threads, onUnavailable: "abstain" });
    assert.equal(abstains.body.results[1].outcome, "abstained");
    assert.equal(abstains.body.results[1].abstained.code, "ENDPOINT_UNAVAILABLE");
    const one = await call(s.app, "POST", `${P}/flaky/grade`, { thread: threads[1], onUnavailable: "abstain" });
    assert.equal(one.status, 422);
    assert.equal(one.body.code, "ABSTAINED");
    assert.equal(one.body.abstained.code, "ENDPOINT_UNAVAILABLE");
  });

  test("a combined grader leaves out a part that abstains and renormalises the others' weights", async () => {
    const res = await call(s.app, "POST", `${P}/mixed/grade-batch`, {
      threads: [thread("a", { i: 1 }), thread("b", { i: 1, down: true })],
      onUnavailable: "abstain",
    });
    // both parts: 0.25 × 1 + 0.75 × 0.5; the endpoint abstaining: the function part alone, at full weight
    assert.deepEqual(
      res.body.results.map((r: { score: number }) => r.score),
      [0.625, 1],
    );
    assert.deepEqual(res.body.results[1].metadata.abstained, [
      { name: "half-part", code: "ENDPOINT_UNAVAILABLE", reason: res.body.results[1].metadata.abstained[0].reason },
    ]);
    assert.deepEqual(
      res.body.results[1].subscores.map((p: { name: string; weight: number }) => [p.name, p.weight]),
      [["indexed", 1]],
    );
  });
});

describe("components and summaries", () => {
  test("a combined grader's parts travel as components aligned with the results, null where a thread has no such part", async () => {
    const res = await call(s.app, "POST", `${P}/mixed/grade-batch`, {
      threads: [thread("a", { i: 1 }), thread("b", { i: 0, down: true }), thread("c", { i: "x" })],
      onUnavailable: "abstain",
    });
    assert.deepEqual(res.body.components, { indexed: [1, 0, null], "half-part": [0.5, null, null] });
  });

  test("summary: counts by outcome, the scores' spread, quantiles and histogram; group statistics with a threshold", async () => {
    const scores = [0, 1, 2, 3, 4, 5, 6, 7];
    const threads = [
      ...scores.map((i) => thread(String(i), { i, prompt_id: i < 4 ? "p" : "q" })),
      thread("bad", { i: "x", prompt_id: "q" }),
    ];
    const res = await call(s.app, "POST", `${P}/indexed/grade-batch`, {
      threads,
      groupBy: "prompt_id",
      summary: { bins: 4, threshold: 3 },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { summary } = res.body;
    assert.equal(summary.count, 9);
    assert.deepEqual(summary.outcomes, { scored: 8, error: 1, abstained: 0 });
    assert.deepEqual([summary.mean, summary.min, summary.max], [3.5, 0, 7]);
    assert.equal(summary.quantiles.p50, 3.5);
    assert.deepEqual(summary.histogram, { edges: [0, 1.75, 3.5, 5.25, 7], counts: [2, 2, 2, 2] });
    // groups p = 0..3 (best 3, mean 1.5) and q = 4..7 (best 7, mean 5.5); both reach 3
    assert.deepEqual(
      [summary.groups.groups, summary.groups.k, summary.groups.meanOfBest, summary.groups.meanOfMeans, summary.groups.passAtK],
      [2, 5, 5, 3.5, 1],
    );
    const without = await call(s.app, "POST", `${P}/indexed/grade-batch`, { threads });
    assert.equal(without.body.summary, undefined, "no summary unless asked");
  });
});

describe("deadlines", () => {
  test("a batch of 1,000 with 5 threads that hang answers at its deadline: 995 scores, 5 abstentions, the hung calls aborted", async () => {
    const hang = new Set([3, 250, 500, 750, 999]);
    const threads = Array.from({ length: 1000 }, (_, i) => thread(String(i), hang.has(i) ? { hang: true } : {}));
    const abortedBefore = aborted;
    const started = performance.now();
    const res = await call(s.app, "POST", `${P}/half/grade-batch`, { threads, deadlineMs: 8000 });
    const took = performance.now() - started;
    assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 300));
    const outcomes = res.body.results.map((r: { outcome: string }) => r.outcome);
    assert.equal(outcomes.filter((o: string) => o === "scored").length, 995);
    for (const i of hang) {
      assert.equal(res.body.results[i].outcome, "abstained");
      assert.equal(res.body.results[i].abstained.code, "DEADLINE_EXCEEDED");
    }
    assert.equal(res.body.deadlineExceeded, 5);
    // the endpoint sees its five calls closed by Gradebox: the capacity is free at once
    for (let i = 0; i < 100 && aborted - abortedBefore < 5; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(aborted - abortedBefore, 5);
    console.log(`# deadline 8000 ms: answered after ${took.toFixed(0)} ms with 995 of 1000 scored`);
  });

  test("deadlineMs out of range is refused with 400", async () => {
    for (const deadlineMs of [0, 600_001, 1.5]) {
      const res = await call(s.app, "POST", `${P}/indexed/grade-batch`, { threads: [thread("a", { i: 1 })], deadlineMs });
      assert.equal(res.status, 400, `deadlineMs ${deadlineMs}`);
      assert.equal(res.body.code, "INVALID_REQUEST");
    }
  });
});

describe("graders that abstain and graders of groups, end to end", () => {
  const RANKER = `import { rankInGroup } from "gradebox/graders";
export async function gradeGroup(threads) {
  return rankInGroup(threads.map((t) => Number(t.completion())));
}`;

  test("a grader returning null abstains; the summary counts it apart from scores and errors", async () => {
    await create("", { key: "picky", source: "async function grade(t) { return t.metadata.skip ? null : 1 }" });
    const res = await call(s.app, "POST", `${P}/picky/grade-batch`, {
      threads: [thread("a"), thread("b", { skip: true })],
      summary: true,
    });
    assert.deepEqual(res.body.results[1], {
      outcome: "abstained",
      abstained: { code: "GRADER_ABSTAINED", reason: res.body.results[1].abstained.reason },
    });
    assert.deepEqual(res.body.summary.outcomes, { scored: 1, error: 0, abstained: 1 });
    const one = await call(s.app, "POST", `${P}/picky/grade`, { thread: thread("b", { skip: true }) });
    assert.deepEqual([one.status, one.body.code, one.body.abstained.code], [422, "ABSTAINED", "GRADER_ABSTAINED"]);
  });

  test("a group grader ranks the completions of each group of 8; without groups it is refused with 400 GROUP_REQUIRED", async () => {
    await create("", { key: "ranker", source: RANKER });
    // 4 prompts × 8 completions, interleaved as a trainer's batch may be
    const threads = Array.from({ length: 32 }, (_, i) => thread(String((i * 7) % 13), { prompt_id: `p${i % 4}` }));
    const res = await call(s.app, "POST", `${P}/ranker/grade-batch`, { threads, groupBy: "prompt_id" });
    assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 400));
    for (let p = 0; p < 4; p++) {
      const members = threads.map((t, i) => ({ t, i })).filter(({ t }) => t.metadata.prompt_id === `p${p}`);
      const values = members.map(({ t }) => Number(t.turns[1].content));
      // a group's best completion gets 1, its worst 0
      const best = members[values.indexOf(Math.max(...values))].i;
      const worst = members[values.indexOf(Math.min(...values))].i;
      assert.equal(res.body.results[best].score, 1, `group p${p}: best`);
      assert.equal(res.body.results[worst].score, 0, `group p${p}: worst`);
    }
    const ungrouped = await call(s.app, "POST", `${P}/ranker/grade-batch`, { threads });
    assert.deepEqual([ungrouped.status, ungrouped.body.code], [400, "GROUP_REQUIRED"]);
    const one = await call(s.app, "POST", `${P}/ranker/grade`, { thread: threads[0] });
    assert.deepEqual([one.status, one.body.code], [400, "GROUP_REQUIRED"]);
  });
});

describe("groups", () => {
  test("groupBy reorders threads into groups for grading and puts the results back in the request's order", async () => {
    // interleaved groups: a, b, a, c, b, a, and threads without the field
    const prompts = ["a", "b", "a", "c", "b", "a", undefined, undefined];
    const threads = prompts.map((p, i) => thread(String(i), { i, ...(p === undefined ? {} : { prompt_id: p }) }));
    const res = await call(s.app, "POST", `${P}/indexed/grade-batch`, { threads, groupBy: "prompt_id" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(
      res.body.results.map((r: { score: number }) => r.score),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
    const explicit = await call(s.app, "POST", `${P}/indexed/grade-batch`, { threads, groups: [0, 1, 0, 2, 1, 0, 3, 4] });
    assert.deepEqual(
      explicit.body.results.map((r: { score: number }) => r.score),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
  });

  test("groupBy and groups together, or groups of the wrong length, are refused with 400", async () => {
    const threads = [thread("a", { i: 0 }), thread("b", { i: 1 })];
    const both = await call(s.app, "POST", `${P}/indexed/grade-batch`, { threads, groupBy: "p", groups: [0, 0] });
    assert.equal(both.status, 400);
    assert.match(both.body.detail, /not both/);
    const short = await call(s.app, "POST", `${P}/indexed/grade-batch`, { threads, groups: [0] });
    assert.equal(short.status, 400);
    assert.match(short.body.detail, /one group index per thread: 1 indexes for 2 threads/);
  });
});

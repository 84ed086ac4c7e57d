// The SDK's conveniences against the real server: per-request options, list() as an async
// iterator over pages, gradeBatch splitting batches over the server's limits, client.limits().

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { splitBatch } from "../sdk/client.ts";
import { APITimeoutError, APIUserAbortError, Gradebox, GraderList, type Limits } from "../sdk/index.ts";
import { PACKED_BATCH_TYPE, unpackBody } from "../sdk/packed-batch.ts";
import { Limits as LimitsSchema, type Limits as ServerLimits } from "../server/routes/account.ts";
import { startServer, type TestServer } from "./support/helpers.ts";

let s: TestServer;
let client: Gradebox;
/** what the spy saw: method, path and thread count of each grade-batch body */
let seen: Array<{
  method: string;
  path: string;
  threads?: number;
  version?: number;
  header?: string | null;
  /** the grade-batch body's threads' metadata.p, its groupBy, groups, deadlineMs and summary */
  p?: unknown[];
  groupBy?: string;
  groups?: number[];
  deadlineMs?: number;
  summary?: unknown;
}> = [];
const spy: typeof fetch = async (input, init) => {
  const url = new URL(String(input));
  const batch = typeof init?.body === "string" && url.pathname.endsWith("/grade-batch") ? init.body : undefined;
  const packed = new Headers(init?.headers).get("content-type") === PACKED_BATCH_TYPE;
  const body = batch === undefined ? undefined : packed ? unpackBody(batch) : JSON.parse(batch);
  seen.push({
    method: init?.method ?? "GET",
    path: url.pathname,
    threads: body?.threads.length,
    version: body?.version,
    header: new Headers(init?.headers).get("x-trace"),
    p: body?.threads.map((t: { metadata?: { p?: unknown } }) => t.metadata?.p),
    groupBy: body?.groupBy,
    groups: body?.groups,
    deadlineMs: body?.deadlineMs,
    summary: body?.summary,
  });
  return fetch(input, init);
};

before(async () => {
  // small limits, so splitting shows with a few threads: 3 per request, 4 KiB bodies
  s = await startServer({ listen: true, env: { GRADEBOX_MAX_BATCH: "3", GRADEBOX_BODY_LIMIT: "4096" } });
  client = new Gradebox({ baseURL: s.url, project: "opts", apiKey: await s.keyFor("opts"), fetch: spy });
  await client.graders.create.function({ key: "index", source: "async (t) => Number(t.metadata.i ?? 0)" });
});
after(() => s.close());

const threadNo = (i: number, pad = 0) => ({ turns: [{ role: "assistant" as const, content: "x".repeat(pad) }], metadata: { i } });

// the SDK's type and the server's schema of /v1/limits are one shape: tsc fails here when they drift
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const limitsAgree: Same<Limits, ServerLimits> = true;
void limitsAgree; // a compile-time check only

describe("limits", () => {
  test("client.limits() reads the server's configured limits once per client", async () => {
    seen = [];
    const limits = await client.limits();
    assert.equal(limits.maxBatchThreads, 3);
    assert.equal(limits.maxBodyBytes, 4096);
    assert.equal(limits.timeoutMs, 1000);
    // and at run time: the server sends every field of its schema, no other
    assert.deepEqual(Object.keys(limits).sort(), Object.keys(LimitsSchema.shape).sort());
    await client.limits();
    assert.equal(seen.filter((r) => r.path === "/v1/limits").length, 1, "cached");
  });
});

describe("gradeBatch splitting", () => {
  test("10 threads with a server limit of 3: four requests, results in input order", async () => {
    await client.limits();
    seen = [];
    const { results } = await client.graders.gradeBatch({ graderKey: "index", threads: Array.from({ length: 10 }, (_, i) => threadNo(i)) });
    assert.deepEqual(
      results,
      Array.from({ length: 10 }, (_, i) => ({ outcome: "scored", score: i })),
    );
    assert.deepEqual(
      seen.map((r) => r.threads),
      [3, 3, 3, 1],
    );
  });

  test("threads of ~1 KB under a 4 KiB body limit are split by bytes, not only by count", async () => {
    seen = [];
    const threads = Array.from({ length: 6 }, (_, i) => threadNo(i, 1000));
    const { results } = await client.graders.gradeBatch({ graderKey: "index", threads, concurrency: 1 });
    assert.deepEqual(
      results,
      threads.map((_, i) => ({ outcome: "scored", score: i })),
    );
    assert.ok(seen.length >= 2, `split in ${seen.length} requests`);
    assert.ok(
      seen.every((r) => (r.threads ?? 0) <= 2),
      `no part carries more than 2 such threads (${seen.map((r) => r.threads)})`,
    );
  });

  test("the parts after the first are pinned to the version that graded it", async () => {
    seen = [];
    const { version } = await client.graders.gradeBatch({ graderKey: "index", threads: Array.from({ length: 7 }, (_, i) => threadNo(i)) });
    assert.deepEqual(
      seen.map((r) => r.version),
      [undefined, version, version],
    );
  });

  test("the first part that fails stops the others; the call fails with it", async () => {
    // a server answering 400 to the second part: no lane sends anything more
    const failing = new Gradebox({
      baseURL: s.url,
      project: "opts",
      apiKey: await s.keyFor("opts"),
      maxRetries: 0,
      fetch: async (input, init) => {
        seen.push({ method: init?.method ?? "GET", path: new URL(String(input)).pathname });
        if (seen.length === 3) return new Response(JSON.stringify({ code: "INVALID_REQUEST", detail: "no" }), { status: 400 });
        return fetch(input, init);
      },
    });
    await failing.limits();
    seen = [{ method: "GET", path: "/v1/limits" }];
    const threads = Array.from({ length: 30 }, (_, i) => threadNo(i));
    await assert.rejects(failing.graders.gradeBatch({ graderKey: "index", threads, concurrency: 2 }), { status: 400 });
    // 10 parts: the first alone, then two lanes: the second fails, the third (already sent) ends its lane
    assert.equal(seen.length, 4, "limits, the first part, the failing second, the third sent beside it, and no more");
  });

  test("an answer without one result per thread is refused, not merged out of order", async () => {
    const short = new Gradebox({
      baseURL: s.url,
      project: "opts",
      apiKey: await s.keyFor("opts"),
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        if (!new URL(String(input)).pathname.endsWith("/grade-batch")) return res;
        const body = await res.json();
        return Response.json({ ...body, results: body.results.slice(1) });
      },
    });
    await assert.rejects(
      short.graders.gradeBatch({ graderKey: "index", threads: [threadNo(1), threadNo(2)] }),
      /answered 1 results for 2 threads/,
    );
  });

  test("a batch within the limits is one request", async () => {
    seen = [];
    await client.graders.gradeBatch({ graderKey: "index", threads: [threadNo(1), threadNo(2)] });
    assert.equal(seen.length, 1);
  });

  test("splitBatch: count and byte limits, order kept, an oversized thread alone", () => {
    assert.deepEqual(splitBatch(["a", "b", "c", "d", "e"], 2, 1000), [["a", "b"], ["c", "d"], ["e"]]);
    assert.deepEqual(splitBatch(["aaaa", "b", "cccccccc", "d"], 10, 7), [["aaaa", "b"], ["cccccccc"], ["d"]]);
    assert.deepEqual(splitBatch([], 3, 100), [[]]);
    // "é" is 2 bytes in UTF-8, "🎉" 4: the byte limit counts UTF-8, not UTF-16 units
    assert.deepEqual(splitBatch(["éé", "🎉"], 10, 5), [["éé"], ["🎉"]]);
  });
});

describe("gradeBatch with groups, a deadline and a summary, split over the limits", () => {
  // thread i scores i, with a named part "half" = i / 2
  const parts = "parts";
  before(() =>
    client.graders.create.function({
      key: parts,
      source: 'async (t) => { const i = Number(t.metadata.i ?? 0); return { score: i, subscores: [{ name: "half", score: i / 2 }] }; }',
    }),
  );
  after(() => client.graders.delete({ graderKey: parts }));
  const member = (i: number, p?: string) => ({
    turns: [{ role: "assistant" as const, content: "x" }],
    metadata: { i, ...(p ? { p } : {}) },
  });
  // groups interleaved in the input: a at 0, 2, 5; b at 1, 4; c at 3, 8; d at 6, 7; e alone at 9
  const ps = ["a", "b", "a", "c", "b", "a", "d", "d", "c", "e"];

  test("groupBy: parts of whole groups (never a group in two), results in input order, summary and components over the whole batch", async () => {
    seen = [];
    const threads = ps.map((p, i) => member(i, p));
    const answer = await client.graders.gradeBatch({ graderKey: parts, threads, groupBy: "p", summary: { threshold: 8, bins: 2 } });
    const batches = seen.filter((r) => r.path.endsWith("/grade-batch"));
    // whole groups packed in order of first appearance, at most 3 threads a request: a; b; c; d + e
    assert.deepEqual(
      batches.map((r) => r.p),
      [
        ["a", "a", "a"],
        ["b", "b"],
        ["c", "c"],
        ["d", "d", "e"],
      ],
    );
    assert.ok(
      batches.every((r) => r.groupBy === "p" && r.summary === undefined),
      "each part groups by p; the summary is computed here, not per part",
    );
    assert.deepEqual(
      answer.results.map((r) => (r.outcome === "scored" ? r.score : r.outcome)),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
    assert.deepEqual(answer.components, { half: [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5] });
    assert.equal(answer.provenance.grader, parts);
    const s = answer.summary;
    assert.ok(s);
    assert.deepEqual([s.count, s.outcomes, s.mean, s.min, s.max], [10, { scored: 10, error: 0, abstained: 0 }, 4.5, 0, 9]);
    assert.deepEqual(s.histogram, { edges: [0, 4.5, 9], counts: [5, 5] });
    // best per group: a 5, b 4, c 8, d 7, e 9; means: a 7/3, b 2.5, c 5.5, d 6.5, e 9; c and e reach 8
    assert.equal(s.groups?.groups, 5);
    assert.equal(s.groups?.k, 3);
    assert.ok(Math.abs((s.groups?.meanOfBest ?? 0) - 33 / 5) < 1e-12);
    assert.ok(Math.abs((s.groups?.meanOfMeans ?? 0) - (7 / 3 + 2.5 + 5.5 + 6.5 + 9) / 5) < 1e-12);
    assert.equal(s.groups?.passAtK, 2 / 5);
  });

  test("explicit groups: each part carries its threads' group indexes; a group over the limit fails before any request", async () => {
    seen = [];
    const groups = [4, 4, 9, 9, 9, 0, 4];
    const answer = await client.graders.gradeBatch({
      graderKey: parts,
      threads: groups.map((_, i) => member(i)),
      groups,
    });
    const batches = seen.filter((r) => r.path.endsWith("/grade-batch"));
    assert.deepEqual(
      batches.map((r) => r.groups),
      [[4, 4, 4], [9, 9, 9], [0]],
    );
    assert.deepEqual(
      answer.results.map((r) => (r.outcome === "scored" ? r.score : r.outcome)),
      [0, 1, 2, 3, 4, 5, 6],
    );
    assert.equal(answer.summary, undefined, "no summary unless asked");

    seen = [];
    await assert.rejects(
      client.graders.gradeBatch({ graderKey: parts, threads: [0, 1, 2, 3, 4].map((i) => member(i, "big")), groupBy: "p" }),
      /the group of p "big" holds 5 threads, more than the server grades in one request \(maxBatchThreads 3\)/,
    );
    await assert.rejects(
      client.graders.gradeBatch({ graderKey: parts, threads: [member(0), member(1)], groups: [0] }),
      /one group index per thread \(1 for 2 threads\)/,
    );
    assert.equal(seen.filter((r) => r.path.endsWith("/grade-batch")).length, 0, "nothing sent");
  });

  test("deadlineMs: every part is sent with at most the time left; a part whose time is gone is abstained without a request", async () => {
    seen = [];
    const threads = Array.from({ length: 7 }, (_, i) => member(i));
    const answer = await client.graders.gradeBatch({ graderKey: parts, threads, deadlineMs: 60_000, concurrency: 1 });
    const sent = seen.filter((r) => r.path.endsWith("/grade-batch")).map((r) => r.deadlineMs ?? 0);
    assert.equal(sent.length, 3);
    assert.ok(
      sent.every((d, i) => d >= 1 && d <= 60_000 && (i === 0 || d <= (sent[i - 1] as number))),
      `each part's deadline is the time left: ${sent}`,
    );
    assert.equal(answer.deadlineExceeded, 0);

    // a network that holds the first answer past the deadline: the other parts are never sent
    const slow = new Gradebox({
      baseURL: s.url,
      project: "opts",
      apiKey: await s.keyFor("opts"),
      fetch: async (input, init) => {
        const res = await spy(input, init);
        if (new URL(String(input)).pathname.endsWith("/grade-batch")) await new Promise((resolve) => setTimeout(resolve, 1200));
        return res;
      },
    });
    await slow.limits();
    seen = [];
    const late = await slow.graders.gradeBatch({ graderKey: parts, threads, deadlineMs: 1000, summary: true });
    assert.equal(seen.length, 1, "the first part only");
    assert.deepEqual(
      late.results.map((r) => (r.outcome === "abstained" ? r.abstained.code : r.outcome)),
      ["scored", "scored", "scored", ...Array(4).fill("DEADLINE_EXCEEDED")],
    );
    assert.equal(late.deadlineExceeded, 4);
    assert.deepEqual(late.summary?.outcomes, { scored: 3, error: 0, abstained: 4 });
    assert.deepEqual(late.components?.half, [0, 0.5, 1, null, null, null, null]);
  });
});

describe("list() as an async iterator", () => {
  test("for await walks every grader page by page; pages() shows the pages; await gives the array", async () => {
    for (const key of ["a1", "a2", "a3", "a4"]) await client.graders.create.function({ key, source: "async (t) => 1" });
    seen = [];
    const keys: string[] = [];
    const list = client.graders.list({ pageSize: 2 });
    assert.ok(list instanceof GraderList);
    for await (const g of list) keys.push(g.key);
    assert.deepEqual(keys, ["a1", "a2", "a3", "a4", "index"]);
    assert.equal(seen.length, 3, "three pages of two");

    const sizes: number[] = [];
    for await (const page of client.graders.list({ pageSize: 2 }).pages()) sizes.push(page.data.length);
    assert.deepEqual(sizes, [2, 2, 1]);

    const all = await client.graders.list({ pageSize: 2 });
    assert.deepEqual(
      all.map((g) => g.key),
      keys,
    );
  });

  test("breaking out of the loop fetches no further page", async () => {
    seen = [];
    for await (const g of client.graders.list({ pageSize: 2 })) if (g.key === "a1") break;
    assert.equal(seen.length, 1);
  });
});

describe("per-request options", () => {
  let slow: Server;
  let slowURL: string;
  let hits = 0;
  before(async () => {
    // answers after 400 ms
    slow = createServer((_req, res) => {
      hits++;
      setTimeout(() => res.end('{"data":[],"nextCursor":null}'), 400);
    });
    await new Promise<void>((resolve) => slow.listen(0, "127.0.0.1", resolve));
    slowURL = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
  });
  after(() => slow.close());

  test("timeout per request overrides the client's", async () => {
    const c = new Gradebox({ baseURL: slowURL, timeout: 10_000, maxRetries: 0 });
    await assert.rejects(c.graders.listPage({}, { timeout: 100 }), APITimeoutError);
    assert.deepEqual((await c.graders.listPage({})).data, [], "the client's own timeout still applies elsewhere");
  });

  test("maxRetries per request", async () => {
    const c = new Gradebox({ baseURL: slowURL, timeout: 50, maxRetries: 0 });
    hits = 0;
    await assert.rejects(c.graders.listPage({}, { maxRetries: 2 }), APITimeoutError);
    assert.equal(hits, 3, "one try and two retries");
  });

  test("signal aborts the request and its retries: APIUserAbortError", async () => {
    const c = new Gradebox({ baseURL: slowURL, timeout: 10_000, maxRetries: 5 });
    hits = 0;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = performance.now();
    await assert.rejects(c.graders.listPage({}, { signal: controller.signal }), APIUserAbortError);
    assert.ok(performance.now() - started < 350, "ended at the abort, not at the answer");
    assert.equal(hits, 1, "no retry after the abort");
    await assert.rejects(c.graders.get({ graderKey: "x" }, { signal: AbortSignal.abort() }), APIUserAbortError);
  });

  test("headers per request are added to the client's", async () => {
    seen = [];
    await client.graders.grade({ graderKey: "index", thread: threadNo(7) }, { headers: { "x-trace": "t-1" } });
    await client.graders.grade({ graderKey: "index", thread: threadNo(7) });
    assert.deepEqual(
      seen.map((r) => r.header),
      ["t-1", null],
    );
  });
});

test("a base URL that is not http(s) is refused when the client is made, saying where it came from and the likely fix", () => {
  assert.throws(() => new Gradebox({ baseURL: "127.0.0.1:8787" }), {
    name: "GradeboxError",
    message: 'baseURL must be an http:// or https:// URL, not "127.0.0.1:8787"; did you mean http://127.0.0.1:8787?',
  });
  assert.throws(() => new Gradebox({ baseURL: "ftp://example.com" }), {
    message: /^baseURL must be an http:\/\/ or https:\/\/ URL, not "ftp:\/\/example.com"$/,
  });
  const saved = process.env.GRADEBOX_URL;
  process.env.GRADEBOX_URL = "localhost:9000";
  try {
    assert.throws(() => new Gradebox(), { message: /^GRADEBOX_URL must be .*did you mean http:\/\/localhost:9000\?$/ });
  } finally {
    if (saved === undefined) delete process.env.GRADEBOX_URL;
    else process.env.GRADEBOX_URL = saved;
  }
  assert.equal(new Gradebox({ baseURL: "https://gradebox.example.com/" }).baseURL, "https://gradebox.example.com");
});

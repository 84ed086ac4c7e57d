// Grade tokens and OpenRLHF's remote reward model (POST /rm/:token), on a real server on a real
// port: tokens made, listed and revoked over HTTP by an admin key (never by a grader key), shown
// once; requests built exactly as OpenRLHF's client builds them (Python's json.dumps, its
// sharding over a comma-separated URL list, its five tries on any error, 4xx included).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Gradebox } from "../sdk/index.ts";
import { MAX_TRIMS, responseOf } from "../server/trainers/openrlhf.ts";
import { call, startServer, type TestServer } from "./support/helpers.ts";
import { type Attempt, openRlhfFetchRewards, pythonJsonDumps } from "./support/trainers.ts";

const EXACT = `export default async function grade(thread) {
  const expected = "answer" in thread.metadata ? thread.metadata.answer : thread.metadata.label;
  if (expected === null || expected === undefined) return null;
  if (expected === "throw") throw new Error("no");
  return thread.completion() === String(expected) ? 1 : 0;
}`;
const SHORT = `export default async function grade(thread) {
  return thread.completion().length <= 10 ? 1 : 0.5;
}`;

let s: TestServer;
let admin: string;
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

async function token(grader: string, body: object = {}) {
  // over the network, as an admin would: the URLs answered are built from the address the server was reached at
  const res = await fetch(`${s.url}/v1/projects/rl/graders/${grader}/tokens`, {
    method: "POST",
    headers: { ...bearer(admin), "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await res.json();
  assert.equal(res.status, 201, JSON.stringify(answer));
  return answer as { id: string; token: string; urls: { openrlhf: string; gymHost: string; gymPath: string } };
}

before(async () => {
  s = await startServer({ listen: true });
  admin = await s.keyFor("rl");
  for (const [key, source] of [
    ["exact", EXACT],
    ["short", SHORT],
  ]) {
    const res = await call(s.app, "POST", "/v1/projects/rl/graders", { key, source });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  }
  const both = await call(s.app, "POST", "/v1/projects/rl/graders/combined", {
    key: "both",
    mode: "weighted",
    graders: [
      { graderKey: "exact", weight: 1 },
      { graderKey: "short", weight: 1 },
    ],
  });
  assert.equal(both.status, 201, JSON.stringify(both.body));
});
after(() => s.close());

const TEMPLATE = (question: string) => `<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n`;
const COUNTS = ["gradebox/scored", "gradebox/abstained", "gradebox/errored", "gradebox/prompt_mismatch"];

describe("grade tokens over HTTP", () => {
  test("an admin key creates one (shown once, URL-safe, no comma), lists them without it, revokes it: 401 at once", async () => {
    const created = await token("exact", { label: "ppo run 7" });
    assert.match(created.token, /^gbr-[0-9a-f]{40}$/);
    assert.equal(created.urls.openrlhf, `${s.url}/rm/${created.token}`);
    assert.ok(!created.urls.openrlhf.includes(","));
    assert.equal(created.urls.gymHost, `${created.token}.gym.127.0.0.1`);
    const listed = await call(s.app, "GET", "/v1/projects/rl/graders/exact/tokens", undefined, bearer(admin));
    assert.equal(listed.status, 200);
    assert.ok(!JSON.stringify(listed.body).includes(created.token), "a token is never listed");
    assert.deepEqual(
      listed.body.data.map((t: { id: string; label: string; grader: string; options: { fallback: number; labelKey: string } }) => [
        t.id,
        t.label,
        t.grader,
        t.options.fallback,
        t.options.labelKey,
      ]),
      [[created.id, "ppo run 7", "exact", 0, "label"]],
    );
    const works = await fetch(created.urls.openrlhf, {
      method: "POST",
      body: '{"query":[],"prompts":[],"labels":[]}',
      headers: { "content-type": "application/json" },
    });
    assert.equal(works.status, 200);
    const revoked = await call(s.app, "DELETE", `/v1/projects/rl/graders/exact/tokens/${created.id}`, undefined, bearer(admin));
    assert.equal(revoked.status, 200);
    assert.equal(typeof revoked.body.revokedAt, "string");
    const refused = await fetch(created.urls.openrlhf, {
      method: "POST",
      body: '{"query":[],"prompts":[],"labels":[]}',
      headers: { "content-type": "application/json" },
    });
    assert.equal(refused.status, 401);
    assert.equal((await refused.json()).code, "UNAUTHORIZED");
    const again = await call(s.app, "DELETE", `/v1/projects/rl/graders/exact/tokens/${created.id}`, undefined, bearer(admin));
    assert.deepEqual([again.status, again.body.revokedAt], [200, revoked.body.revokedAt]);
  });

  test("a grader key manages no tokens (403); another grader's token id is 404; a missing grader is 404; a token is no API key", async () => {
    const grader = (await call(s.app, "POST", "/v1/projects/rl/keys", { role: "grader" }, bearer(admin))).body.key as string;
    const forbidden = await call(s.app, "POST", "/v1/projects/rl/graders/exact/tokens", {}, bearer(grader));
    assert.deepEqual([forbidden.status, forbidden.body.code], [403, "FORBIDDEN"]);
    const created = await token("exact");
    const elsewhere = await call(s.app, "DELETE", `/v1/projects/rl/graders/short/tokens/${created.id}`, undefined, bearer(admin));
    assert.deepEqual([elsewhere.status, elsewhere.body.code], [404, "TOKEN_NOT_FOUND"]);
    const missing = await call(s.app, "POST", "/v1/projects/rl/graders/nope/tokens", {}, bearer(admin));
    assert.deepEqual([missing.status, missing.body.code], [404, "GRADER_NOT_FOUND"]);
    const asKey = await call(s.app, "GET", "/v1/me", undefined, bearer(created.token));
    assert.equal(asKey.status, 401, "a grade token opens no /v1 route");
    const bad = await call(s.app, "POST", "/v1/projects/rl/graders/exact/tokens", { options: { fallback: "NaN" } }, bearer(admin));
    assert.equal(bad.status, 400);
  });

  test("the SDK creates, lists and revokes tokens", async () => {
    const client = new Gradebox({ apiKey: admin, baseURL: s.url, project: "rl" });
    const created = await client.tokens.create({ grader: "exact", label: "sdk", options: { fallback: -1 } });
    assert.match(created.token, /^gbr-/);
    assert.equal(created.options.fallback, -1);
    assert.ok((await client.tokens.list({ grader: "exact" })).some((t) => t.id === created.id));
    const revoked = await client.tokens.revoke({ grader: "exact", id: created.id });
    assert.equal(typeof revoked.revokedAt, "string");
  });
});

describe("POST /rm/:token, as OpenRLHF calls it", () => {
  test("one sample: the exact request OpenRLHF sends; the chat template's prompt cut, the end-of-turn token trimmed; lists throughout", async () => {
    const { urls } = await token("exact");
    const attempts: Attempt[] = [];
    const prompt = TEMPLATE("Combien font 2+2 ? é");
    const [answer] = await openRlhfFetchRewards(urls.openrlhf, [`${prompt}4<|im_end|>`], [prompt], ["4"], { attempts });
    assert.equal(attempts.length, 1);
    assert.equal(
      attempts[0]?.body,
      '{"query": ["<|im_start|>user\\nCombien font 2+2 ? \\u00e9<|im_end|>\\n<|im_start|>assistant\\n4<|im_end|>"], "prompts": ["<|im_start|>user\\nCombien font 2+2 ? \\u00e9<|im_end|>\\n<|im_start|>assistant\\n"], "labels": ["4"]}',
      "the body is Python's json.dumps of OpenRLHF's payload",
    );
    assert.deepEqual(answer, {
      rewards: [1],
      scores: [1],
      extra_logs: { "gradebox/scored": [1], "gradebox/abstained": [0], "gradebox/errored": [0], "gradebox/prompt_mismatch": [0] },
    });
  });

  test("two URLs: the samples are sharded, the second URL gets the empty-list call and answers empty lists with the same keys", async () => {
    const { urls } = await token("exact");
    const attempts: Attempt[] = [];
    const prompt = TEMPLATE("2+2?");
    const answers = await openRlhfFetchRewards(`${urls.openrlhf},${urls.openrlhf}`, [`${prompt}4`], [prompt], ["4"], { attempts });
    assert.deepEqual(
      attempts.map((a) => a.body),
      [pythonJsonDumps({ query: [`${prompt}4`], prompts: [prompt], labels: ["4"] }), '{"query": [], "prompts": [], "labels": []}'],
    );
    assert.deepEqual(answers[1], { rewards: [], scores: [], extra_logs: Object.fromEntries(COUNTS.map((k) => [k, []])) });
    assert.deepEqual((answers[0] as { rewards: number[] }).rewards, [1]);
  });

  test("a bad or revoked token answers 401 to each of OpenRLHF's 5 tries, which then gives up", async () => {
    const { urls, id } = await token("exact");
    await call(s.app, "DELETE", `/v1/projects/rl/graders/exact/tokens/${id}`, undefined, bearer(admin));
    for (const url of [urls.openrlhf, `${s.url}/rm/gbr-${"0".repeat(40)}`, `${s.url}/rm/not-a-token`]) {
      const attempts: Attempt[] = [];
      await assert.rejects(openRlhfFetchRewards(url, ["q"], ["q"], ["x"], { attempts, sleepMs: 10 }), /5 times/);
      assert.deepEqual(
        attempts.map((a) => a.status),
        [401, 401, 401, 401, 401],
      );
    }
  });

  test("abstentions and errors get the fallback (0.0, or the token's, or the query's) and are counted; never null or NaN", async () => {
    const prompt = TEMPLATE("q");
    const queries = [`${prompt}4`, `${prompt}4`, `${prompt}4`, `${prompt}5`];
    const labels = ["4", null, "throw", "4"];
    const [plain] = (await openRlhfFetchRewards(
      (
        await token("exact")
      ).urls.openrlhf,
      queries,
      queries.map(() => prompt),
      labels,
    )) as Array<{
      rewards: number[];
      extra_logs: Record<string, number[]>;
    }>;
    assert.deepEqual(plain?.rewards, [1, 0, 0, 0]);
    assert.deepEqual(plain?.extra_logs["gradebox/scored"], [1, 0, 0, 1]);
    assert.deepEqual(plain?.extra_logs["gradebox/abstained"], [0, 1, 0, 0]);
    assert.deepEqual(plain?.extra_logs["gradebox/errored"], [0, 0, 1, 0]);
    const own = await token("exact", { options: { fallback: -1 } });
    const [mine] = (await openRlhfFetchRewards(
      own.urls.openrlhf,
      queries,
      queries.map(() => prompt),
      labels,
    )) as Array<{ rewards: number[] }>;
    assert.deepEqual(mine?.rewards, [1, -1, -1, 0]);
    const [queried] = (await openRlhfFetchRewards(
      `${own.urls.openrlhf}?fallback=-0.5`,
      queries,
      queries.map(() => prompt),
      labels,
    )) as Array<{
      rewards: number[];
    }>;
    assert.deepEqual(queried?.rewards, [1, -0.5, -0.5, 0]);
  });

  test("a prompt that is not in front of its query: found ignoring whitespace; else graded whole, or failed with mismatch=error", async () => {
    const { urls } = await token("exact");
    const prompt = TEMPLATE("q");
    const spaced = prompt.replace("user\n", "user \n");
    const queries = [`${spaced}4`, "something else entirely: 4", "4"];
    const [whole] = (await openRlhfFetchRewards(
      urls.openrlhf,
      queries,
      [prompt, prompt, prompt],
      ["4", "something else entirely: 4", "4"],
    )) as Array<{
      rewards: number[];
      extra_logs: Record<string, number[]>;
    }>;
    assert.deepEqual(whole?.rewards, [1, 1, 1], "the second and third are graded whole");
    assert.deepEqual(whole?.extra_logs["gradebox/prompt_mismatch"], [0, 1, 1]);
    const [strict] = (await openRlhfFetchRewards(
      `${urls.openrlhf}?mismatch=error`,
      queries,
      [prompt, prompt, prompt],
      ["4", "x", "4"],
    )) as Array<{
      rewards: number[];
      extra_logs: Record<string, number[]>;
    }>;
    assert.deepEqual(strict?.rewards, [1, 0, 0]);
    assert.deepEqual(strict?.extra_logs["gradebox/errored"], [0, 1, 1]);
    const [none] = (await openRlhfFetchRewards(`${urls.openrlhf}?strip=none&label=answer`, ["4"], ["4"], ["4"])) as Array<{
      rewards: number[];
    }>;
    assert.deepEqual(none?.rewards, [1], "strip=none grades the query whole; label=answer puts the label in metadata.answer");
    const refused = await fetch(`${urls.openrlhf}?strip=sometimes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assert.deepEqual([refused.status, (await refused.json()).code], [400, "INVALID_REQUEST"]);
    const uneven = await fetch(urls.openrlhf, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"query": ["a"], "prompts": [], "labels": []}',
    });
    assert.deepEqual([uneven.status, (await uneven.json()).code], [400, "INVALID_REQUEST"]);
  });

  test("a combined grader's parts are components, in every answer, the fallback where a sample has none", async () => {
    const { urls } = await token("both");
    const prompt = TEMPLATE("q");
    const [scored] = (await openRlhfFetchRewards(urls.openrlhf, [`${prompt}4`], [prompt], ["4"])) as Array<Record<string, unknown>>;
    const [abstained] = (await openRlhfFetchRewards(urls.openrlhf, [`${prompt}4`], [prompt], [null])) as Array<Record<string, unknown>>;
    assert.deepEqual(scored?.extra_logs, {
      "gradebox/scored": [1],
      "gradebox/abstained": [0],
      "gradebox/errored": [0],
      "gradebox/prompt_mismatch": [0],
      "component/exact": [1],
      "component/short": [1],
    });
    assert.deepEqual(
      Object.keys(abstained?.extra_logs as object),
      Object.keys(scored?.extra_logs as object),
      "the same keys in every answer (OpenRLHF batches samples by the first one's keys)",
    );
    assert.deepEqual(
      (abstained?.extra_logs as Record<string, number[]> | undefined)?.["component/short"],
      [1],
      "short still scored: exact abstained and was left out",
    );
  });
});

test("end-of-turn markers: two are trimmed, and a run of a one-character stop string is trimmed at most MAX_TRIMS times", () => {
  const options = { strip: "none" as const, stopStrings: ["<|im_end|>", "<|endoftext|>", "a"] };
  assert.equal(responseOf("4<|im_end|><|endoftext|>", "", options).response, "4");
  // 1,000,000 characters of a stop string: a bounded number of trims, not one pass over the list per character
  const run = "x".concat("a".repeat(1_000_000));
  assert.equal(responseOf(run, "", options).response.length, run.length - MAX_TRIMS);
});

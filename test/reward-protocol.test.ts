// Stored graders over the reward-server protocol, called by a client that knows only the protocol:
// clients/reward_client.py (stdlib Python) against the real server on a real port, checked
// against the SDK's gradeBatch; then the protocol's refusals over plain HTTP.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { Gradebox } from "../sdk/index.ts";
import { repoRoot, startServer, type TestServer } from "./support/helpers.ts";

const run = promisify(execFile);
const project = "reward-proto";
const SCORER = `export default async function grade(thread) {
  const completion = thread.completion() ?? "";
  return (completion.includes(String(thread.metadata.expected ?? "")) ? 0.5 : 0) + completion.length / 100;
}`;
const THROWER = `export default async function grade(thread) {
  if (thread.metadata.boom) throw new Error("boom");
  return 1;
}`;

let s: TestServer;
let client: Gradebox;
const root = (key: string) => `${s.url}/v1/projects/${project}/graders/${key}/reward`;

before(async () => {
  s = await startServer({ listen: true });
  client = new Gradebox({ baseURL: s.url, project, apiKey: await s.keyFor(project) });
  await client.graders.create.function({ key: "scorer", source: SCORER, description: "contains expected, plus length" });
  await client.graders.create.function({ key: "thrower", source: THROWER });
});
after(() => s.close());

interface PyError {
  status: number;
  code: string | null;
  detail: string;
  problem: Record<string, unknown>;
}
interface Reward {
  reward: number;
  metadata: Record<string, unknown>;
  id?: string | number;
}
type Info = { version: string; name: string; description: string };

let files = 0;
/** Runs the Python client; `ok: false` with its error (stderr) when it exits non-zero. */
async function python<T>(key: string, command: string, payload?: unknown): Promise<{ ok: true; out: T } | { ok: false; err: PyError }> {
  const args = [join(repoRoot, "clients/reward_client.py"), root(key), "--api-key", await s.keyFor(project), command];
  if (payload !== undefined) {
    const file = join(s.dir, `request-${files++}.json`);
    writeFileSync(file, JSON.stringify(payload));
    args.push(file);
  }
  try {
    const { stdout } = await run("python3", args, { timeout: 20_000 });
    return { ok: true, out: JSON.parse(stdout) as T };
  } catch (e) {
    const { code, stderr } = e as { code?: number; stderr?: string };
    assert.equal(code, 1, `python client crashed: ${stderr}`);
    return { ok: false, err: (JSON.parse(String(stderr)) as { error: PyError }).error };
  }
}

const turns = (completion: string) => [
  { role: "user" as const, content: "question" },
  { role: "assistant" as const, content: completion },
];

describe("the Python reward client against a stored grader", () => {
  test("info names the grader and its current version; metadata_schema is a JSON object", async () => {
    const info = await python<Info>("scorer", "info");
    assert.ok(info.ok);
    assert.deepEqual(info.out, { version: "1", name: "scorer", description: "contains expected, plus length" });

    await client.graders.update({ graderKey: "scorer", source: `${SCORER}\n// v2` });
    const again = await python<Info>("scorer", "info");
    assert.ok(again.ok);
    assert.equal(again.out.version, "2");

    const schema = await python<Record<string, unknown>>("scorer", "metadata_schema");
    assert.ok(schema.ok);
    assert.ok(schema.out && typeof schema.out === "object" && !Array.isArray(schema.out), JSON.stringify(schema.out));
    assert.equal(schema.out.type, "object");
  });

  test("score and batch_score give the SDK's rewards, in order, with ids echoed", async () => {
    const requests = [
      { turns: turns("the answer is 4"), metadata: { expected: "4" }, id: "a" },
      { turns: turns("five"), metadata: { expected: "4" }, id: 7 },
      { turns: turns("no metadata at all"), metadata: null, id: "c" },
      { turns: turns("Paris"), metadata: { expected: "Paris", extra: { nested: [1, 2] } } },
      { turns: turns("lyon"), metadata: { expected: "Paris" }, id: "e" },
    ];
    // metadata null means {}: "" is contained in everything
    const expected = [0.65, 0.04, 0.68, 0.55, 0.04]; // 0.5 if it contains `expected`, plus length / 100

    const sdk = await client.graders.gradeBatch({
      graderKey: "scorer",
      threads: requests.map((r) => ({ turns: r.turns, metadata: r.metadata ?? {} })),
    });
    const sdkRewards = sdk.results.map((r) => ("score" in r ? r.score : Number.NaN));
    assert.deepEqual(
      sdkRewards.map((x) => Math.round(x * 100) / 100),
      expected,
    );

    const batch = await python<{ responses: Reward[] }>("scorer", "batch_score", { requests });
    assert.ok(batch.ok, JSON.stringify(!batch.ok && batch.err));
    assert.deepEqual(
      batch.out.responses.map((r) => r.reward),
      sdkRewards,
    );
    assert.deepEqual(
      batch.out.responses.map((r) => r.id),
      ["a", 7, "c", undefined, "e"],
    );
    for (const r of batch.out.responses) assert.deepEqual(r.metadata, {});

    for (const [i, request] of requests.entries()) {
      const one = await python<Reward>("scorer", "score", request);
      assert.ok(one.ok, JSON.stringify(!one.ok && one.err));
      assert.equal(one.out.reward, sdkRewards[i], `request ${i}`);
      assert.equal(one.out.id, request.id);
    }
  });

  test("a grader error reaches the Python client as RewardServerError with its code (and index in a batch)", async () => {
    const one = await python<Reward>("thrower", "score", { turns: turns("x"), metadata: { boom: true } });
    assert.ok(!one.ok);
    assert.equal(one.err.status, 422);
    assert.equal(one.err.code, "GRADER_ERROR");
    assert.match(one.err.detail, /boom/);

    const batch = await python<{ responses: Reward[] }>("thrower", "batch_score", [
      { turns: turns("x") },
      { turns: turns("y"), metadata: { boom: 1 } },
    ]);
    assert.ok(!batch.ok);
    assert.equal(batch.err.status, 422);
    assert.equal(batch.err.code, "GRADER_ERROR");
    assert.equal(batch.err.problem.index, 1);
  });
});

describe("the protocol over plain HTTP", () => {
  const post = async (key: string, path: string, body: unknown, auth = true) =>
    fetch(`${root(key)}/${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(auth ? { authorization: `Bearer ${await s.keyFor(project)}` } : {}) },
      body: JSON.stringify(body),
    });

  test("unknown fields are refused with 400 INVALID_REQUEST", async () => {
    for (const [path, body] of [
      ["score", { turns: turns("x"), extra: 1 }],
      ["batch_score", { requests: [{ turns: turns("x"), extra: 1 }] }],
      ["batch_score", { requests: [{ turns: turns("x") }], extra: 1 }],
    ] as const) {
      const res = await post("scorer", path, body);
      assert.equal(res.status, 400, `${path} ${JSON.stringify(body)}`);
      assert.match(res.headers.get("content-type") ?? "", /application\/problem\+json/);
      assert.equal((await res.json()).code, "INVALID_REQUEST");
    }
  });

  test("a null id means none and is echoed as null; integer and string ids are echoed as sent", async () => {
    const one = await post("scorer", "score", { turns: turns("x"), metadata: null, id: null });
    assert.equal(one.status, 200);
    const body = await one.json();
    assert.ok("id" in body && body.id === null, JSON.stringify(body));

    const batch = await post("scorer", "batch_score", {
      requests: [
        { turns: turns("a"), id: null },
        { turns: turns("b"), id: 0 },
        { turns: turns("c"), id: 41 },
        { turns: turns("d"), id: "q-1" },
        { turns: turns("e") },
      ],
    });
    assert.equal(batch.status, 200);
    const { responses } = await batch.json();
    assert.deepEqual(
      responses.map((r: { id?: unknown }) => ("id" in r ? r.id : "absent")),
      [null, 0, 41, "q-1", "absent"],
    );
    // a fractional id is no id of the protocol's
    assert.equal((await post("scorer", "score", { turns: turns("x"), id: 1.5 })).status, 400);
  });

  test("any role string reaches a TypeScript grader as it was sent", async () => {
    await client.graders.create.function({
      key: "roles",
      source: `export default async function grade(thread) {
        return { score: 1, metadata: { roles: thread.getTurns().map(([role]) => role), prompt: thread.messages().length } };
      }`,
    });
    const request = {
      turns: [
        { role: "developer", content: "be brief" },
        { role: "user", content: "q" },
        { role: "ipython", content: "42" },
        { role: "assistant", content: "a" },
      ],
    };
    const one = await post("roles", "score", request);
    assert.equal(one.status, 200);
    assert.deepEqual((await one.json()).metadata, { roles: ["developer", "user", "ipython", "assistant"], prompt: 3 });
    const batch = await post("roles", "batch_score", { requests: [request, { turns: [{ role: "developer", content: "x" }] }] });
    assert.deepEqual(
      (await batch.json()).responses.map((r: { metadata: { roles: string[] } }) => r.metadata.roles),
      [["developer", "user", "ipython", "assistant"], ["developer"]],
    );
    // the same thread over the API
    const sdk = await client.graders.grade({ graderKey: "roles", thread: request });
    assert.ok(sdk.outcome === "scored");
    assert.deepEqual(sdk.metadata?.roles, ["developer", "user", "ipython", "assistant"]);
    // a role is bounded text
    for (const role of ["", "r".repeat(65), "line\nbreak"]) {
      const bad = await post("roles", "score", { turns: [{ role, content: "x" }] });
      assert.equal(bad.status, 400, JSON.stringify(role));
      assert.match((await bad.json()).detail, /a role is 1 to 64 characters without control characters/);
    }
  });

  test("a missing key gets 401 on every endpoint", async () => {
    assert.equal((await post("scorer", "score", { turns: turns("x") }, false)).status, 401);
    assert.equal((await post("scorer", "batch_score", { requests: [{ turns: turns("x") }] }, false)).status, 401);
    for (const path of ["info", "metadata_schema"]) {
      const res = await fetch(`${root("scorer")}/${path}`);
      assert.equal(res.status, 401, path);
      assert.equal((await res.json()).code, "UNAUTHORIZED");
    }
  });

  test("a grader that throws: 422 GRADER_ERROR on /score, and with the failing index on /batch_score", async () => {
    const one = await post("thrower", "score", { turns: turns("x"), metadata: { boom: true } });
    assert.equal(one.status, 422);
    assert.equal((await one.json()).code, "GRADER_ERROR");

    const batch = await post("thrower", "batch_score", {
      requests: [{ turns: turns("x") }, { turns: turns("y") }, { turns: turns("z"), metadata: { boom: true } }],
    });
    assert.equal(batch.status, 422);
    const problem = await batch.json();
    assert.equal(problem.code, "GRADER_ERROR");
    assert.equal(problem.index, 2);

    const fine = await post("thrower", "batch_score", { requests: [{ turns: turns("x"), metadata: null }] });
    assert.equal(fine.status, 200);
    assert.deepEqual(await fine.json(), { responses: [{ reward: 1, metadata: {} }] });
  });
});

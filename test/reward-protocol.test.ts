// Stored graders over the reward-server protocol, called by a client that knows only the protocol:
// clients/reward_client.py (stdlib Python) against the real server on a real port, checked
// against the SDK's gradeBatch; then the protocol's refusals over plain HTTP.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { WebSocket } from "ws";
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
  s = await startServer({ listen: true, env: { GRADEBOX_BODY_LIMIT: String(256 * 1024) } });
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
    // each reward names the grader that scored it: its key, version and source digest
    for (const r of batch.out.responses) {
      const { provenance } = (r.metadata as { gradebox: { provenance: { grader: string; version: number; sourceSha256: string } } })
        .gradebox;
      assert.deepEqual([provenance.grader, provenance.sourceSha256.length], ["scorer", 64]);
    }

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
    const { roles, prompt } = (await one.json()).metadata;
    assert.deepEqual({ roles, prompt }, { roles: ["developer", "user", "ipython", "assistant"], prompt: 3 });
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
    const answered = await fine.json();
    assert.deepEqual(
      answered.responses.map((r: { reward: number }) => r.reward),
      [1],
    );
    assert.equal(answered.responses[0].metadata.gradebox.provenance.grader, "thrower");
  });
});

/** A WebSocket client as Adaptive's RewardClient is one: answers reassembled from their chunks, by id. */
class Socket {
  readonly answers = new Map<unknown, Record<string, unknown>>();
  readonly frames: Array<Record<string, unknown>> = [];
  private readonly chunks = new Map<unknown, { total: number; parts: string[] }>();
  private waiters: Array<() => void> = [];
  closed: { code: number; reason: string } | undefined;

  constructor(
    readonly ws: WebSocket,
    private readonly framing: "chunks" | "whole",
  ) {
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as Record<string, unknown>;
      this.frames.push(frame);
      if (this.framing === "whole") this.answers.set(frame.id, frame);
      else if ("total_num_chunks" in frame) this.chunks.set(frame.id, { total: frame.total_num_chunks as number, parts: [] });
      else {
        const acc = this.chunks.get(frame.id);
        assert.ok(acc, `a chunk of ${String(frame.id)} before its total_num_chunks`);
        acc.parts.push(frame.chunk as string);
        if (acc.parts.length === acc.total) {
          this.chunks.delete(frame.id);
          this.answers.set(frame.id, JSON.parse(acc.parts.join("")));
        }
      }
      this.wake();
    });
    ws.on("close", (code, reason) => {
      this.closed = { code, reason: String(reason) };
      this.wake();
    });
  }

  static async open(key: string, { auth = true, framing = "chunks" as "chunks" | "whole" } = {}) {
    const url = `${root(key).replace(/^http/, "ws")}/ws${framing === "whole" ? "?framing=whole" : ""}`;
    const ws = new WebSocket(url, { headers: auth ? { authorization: `Bearer ${await s.keyFor(project)}` } : {} });
    const socket = new Socket(ws, framing);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    return socket;
  }

  private wake() {
    for (const w of this.waiters.splice(0)) w();
  }
  async until(done: () => boolean): Promise<void> {
    while (!done()) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
  send(message: unknown) {
    this.ws.send(typeof message === "string" ? message : JSON.stringify(message));
  }
}

/** The HTTP status a refused upgrade answers. */
async function refusedUpgrade(url: string, headers: Record<string, string> = {}): Promise<number> {
  const ws = new WebSocket(url, { headers });
  return new Promise((resolve, reject) => {
    ws.on("unexpected-response", (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
    });
    ws.on("open", () => reject(new Error("the upgrade was accepted")));
    ws.on("error", () => {});
  });
}

describe("the protocol over a WebSocket (…/reward/ws)", () => {
  test("score and batch_score interleaved on one socket: every answer carries its id and the HTTP route's reward", async () => {
    const socket = await Socket.open("scorer");
    const requests = Array.from({ length: 12 }, (_, i) => ({ turns: turns(`answer ${i} is 4`), metadata: { expected: "4" } }));
    // ids of both kinds, requests of both kinds, all sent before any answer is read
    for (const [i, r] of requests.entries()) socket.send(i % 3 === 2 ? { id: i, requests: [r, requests[0]] } : { id: i, ...r });
    socket.send({ id: "text-id", ...requests[0] });
    await socket.until(() => socket.answers.size === 13);
    const http = await fetch(`${root("scorer")}/score`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${await s.keyFor(project)}` },
      body: JSON.stringify(requests[0]),
    });
    const expected = (await http.json()).reward;
    for (let i = 0; i < 12; i++) {
      const answer = socket.answers.get(i) as { id: number; reward?: number; responses?: Array<{ reward: number }> };
      assert.equal(answer.id, i);
      if (i % 3 === 2) {
        assert.equal(answer.responses?.length, 2);
        assert.equal(answer.responses?.[1].reward, expected);
      } else {
        assert.equal(typeof answer.reward, "number");
      }
    }
    assert.equal((socket.answers.get(0) as { reward: number }).reward, expected);
    assert.equal((socket.answers.get("text-id") as { reward: number }).reward, expected);
    // Adaptive's framing: a header then chunks, each with the id
    assert.ok(socket.frames.every((f) => "id" in f && ("total_num_chunks" in f || "chunk" in f)));
    socket.ws.close();
  });

  test("bad messages get an INVALID_REQUEST answer (with their id when they have one) and the socket goes on; a grader's error is its request's", async () => {
    const socket = await Socket.open("thrower", { framing: "whole" });
    socket.send("not json");
    socket.send({ turns: turns("no id") });
    socket.send({ id: 1, turns: [{ role: "", content: "x" }] });
    socket.send({ id: 2, turns: turns("x"), metadata: { boom: true } });
    socket.send({ id: 3, turns: [{ role: "developer", content: "x" }] });
    await socket.until(() => socket.frames.length === 5);
    const errors = socket.frames.filter((f) => f.id === null).map((f) => (f.error as { code: string }).code);
    assert.deepEqual(errors, ["INVALID_REQUEST", "INVALID_REQUEST"]);
    const errorOf = (id: number) => socket.answers.get(id)?.error as { code: string; message: string } | undefined;
    assert.equal(errorOf(1)?.code, "INVALID_REQUEST");
    assert.match(String(errorOf(1)?.message), /turns\.0\.role/);
    assert.equal(errorOf(2)?.code, "GRADER_ERROR");
    const third = socket.answers.get(3) as { id: number; reward: number; metadata: { gradebox: { provenance: { grader: string } } } };
    assert.deepEqual([third.id, third.reward, third.metadata.gradebox.provenance.grader], [3, 1, "thrower"]);
    // a binary message ends the socket
    socket.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    await socket.until(() => socket.closed !== undefined);
    assert.equal(socket.closed?.code, 1003);
  });

  test("abuse closes the socket: a message over the body limit (1009), too many invalid messages (1008)", async () => {
    const big = await Socket.open("scorer");
    big.send({ id: 1, turns: turns("x".repeat(300 * 1024)) });
    await big.until(() => big.closed !== undefined);
    assert.equal(big.closed?.code, 1009);

    const noisy = await Socket.open("scorer", { framing: "whole" });
    for (let i = 0; i < 20; i++) noisy.send("[]");
    await noisy.until(() => noisy.closed !== undefined);
    assert.equal(noisy.closed?.code, 1008);
    assert.equal(noisy.frames.length, 16);
  });

  test("the upgrade is authenticated and routed like any request: 401 without a key, 404 for an unknown grader, 400 without an upgrade", async () => {
    const url = `${root("scorer").replace(/^http/, "ws")}/ws`;
    assert.equal(await refusedUpgrade(url), 401);
    assert.equal(await refusedUpgrade(url, { authorization: "Bearer nope" }), 401);
    const auth = { authorization: `Bearer ${await s.keyFor(project)}` };
    assert.equal(await refusedUpgrade(`${root("missing").replace(/^http/, "ws")}/ws`, auth), 404);
    const plain = await fetch(`${root("scorer")}/ws`, { headers: auth });
    assert.equal(plain.status, 400);
    assert.match((await plain.json()).detail, /is a WebSocket/);
    // the HTTP routes still answer on the same server
    assert.equal((await fetch(`${root("scorer")}/info`, { headers: auth })).status, 200);
  });
});

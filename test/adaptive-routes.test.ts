// Adaptive's RewardClient against a grade token's address of the reward protocol (/v1/reward/<token>),
// on a real server on a real port, with exactly the requests its clients send: httpx's JSON
// (compact separators) with no Authorization header to <url>/score, /batch_score, /info and
// /metadata_schema; pydantic's model_dump_json over a WebSocket at <url>/ws (adaptive_harmony's
// client, reading Adaptive's chunked framing) and at <url> itself (adaptive_sdk's client, one
// message per answer). The stock Python client itself runs in `make test-trainers`.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { WebSocket } from "ws";
import { call, startServer, type TestServer } from "./support/helpers.ts";

const SCORER = `export default async function grade(thread) {
  if (thread.metadata.abstain) return null;
  const roles = thread.getTurns().map(([role]) => role).join(",");
  return { score: (thread.completion() ?? "").length / 100, metadata: { roles } };
}`;

let s: TestServer;
let admin: string;
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

before(async () => {
  s = await startServer({ listen: true, env: { GRADEBOX_BODY_LIMIT: String(64 * 1024) } });
  admin = await s.keyFor("adaptive");
  for (const key of ["scorer", "other"]) {
    const res = await call(s.app, "POST", "/v1/projects/adaptive/graders", { key, source: SCORER, description: "length" });
    assert.equal(res.status, 201, JSON.stringify(res.body));
  }
});
after(() => s.close());

async function token(grader: string): Promise<{ id: string; token: string; url: string }> {
  const res = await fetch(`${s.url}/v1/projects/adaptive/graders/${grader}/tokens`, {
    method: "POST",
    headers: { ...bearer(admin), "content-type": "application/json" },
    body: "{}",
  });
  const answer = (await res.json()) as { id: string; token: string; urls: { adaptive: string } };
  assert.equal(res.status, 201, JSON.stringify(answer));
  return { id: answer.id, token: answer.token, url: answer.urls.adaptive };
}

/** What Adaptive's Request.model_dump() holds: every field, nulls included. */
const request = (completion: string, { id = null as number | null, role = "user", metadata = null as object | null } = {}) => ({
  turns: [
    { role, content: "Answer briefly." },
    { role: "assistant", content: completion },
  ],
  metadata,
  id,
});
/** httpx's request: its JSON (compact separators), its headers, no Authorization. */
async function httpx(method: "GET" | "POST", url: string, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: {
      accept: "*/*",
      "accept-encoding": "gzip, deflate",
      "user-agent": "python-httpx/0.28.1",
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

interface Reward {
  reward: number;
  metadata: { roles: string; gradebox: { provenance: { grader: string } } };
  id: number | null;
}

describe("Adaptive's RewardClient over HTTP at urls.adaptive", () => {
  test("the URL is /v1/reward/<token>; info, metadata_schema, score and batch_score answer as the project-key routes do", async () => {
    const { token: t, url } = await token("scorer");
    assert.equal(url, `${s.url}/v1/reward/${t}`);
    const info = await httpx("GET", `${url}/info`);
    assert.deepEqual(info, { status: 200, body: { version: "1", name: "scorer", description: "length" } });
    assert.deepEqual(await httpx("GET", `${url}/metadata_schema`), { status: 200, body: { type: "object" } });

    // the client writes "id": null when it has none, and any role string
    const one = await httpx("POST", `${url}/score`, request("seven", { role: "developer" }));
    assert.equal(one.status, 200, JSON.stringify(one.body));
    const reward = one.body as unknown as Reward;
    assert.deepEqual([reward.reward, reward.id, reward.metadata.roles], [0.05, null, "developer,assistant"]);
    assert.equal(reward.metadata.gradebox.provenance.grader, "scorer");
    const byKey = await call(
      s.app,
      "POST",
      "/v1/projects/adaptive/graders/scorer/reward/score",
      request("seven", { role: "developer" }),
      bearer(admin),
    );
    assert.deepEqual(one.body, byKey.body);

    const batch = await httpx("POST", `${url}/batch_score`, {
      requests: [request("a", { id: 7 }), request("abc"), request("ab", { id: 0, metadata: { note: "x" } })],
    });
    assert.equal(batch.status, 200, JSON.stringify(batch.body));
    const responses = (batch.body as { responses: Reward[] }).responses;
    assert.deepEqual(
      responses.map((r) => [r.reward, r.id]),
      [
        [0.01, 7],
        [0.03, null],
        [0.02, 0],
      ],
    );
  });

  test("the grader's refusals are the project-key routes': 400 for a bad request, 422 ABSTAINED (with its index in a batch)", async () => {
    const { url } = await token("scorer");
    const bad = await httpx("POST", `${url}/score`, { turns: [], metadata: null, id: null });
    assert.deepEqual([bad.status, bad.body.code], [400, "INVALID_REQUEST"]);
    const abstained = await httpx("POST", `${url}/batch_score`, {
      requests: [request("a"), request("b", { metadata: { abstain: true } })],
    });
    assert.deepEqual([abstained.status, abstained.body.code, abstained.body.index], [422, "ABSTAINED", 1]);
  });
});

/** A client socket that reads answers as Adaptive's clients do: chunks joined by id (harmony's read_task), or whole messages. */
class AdaptiveSocket {
  readonly answers = new Map<number, Record<string, unknown>>();
  readonly frames: Array<Record<string, unknown>> = [];
  private readonly pending = new Map<number, { total: number; chunks: string[] }>();
  private waiters: Array<() => void> = [];

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as Record<string, unknown>;
      this.frames.push(frame);
      const id = frame.id as number;
      if (typeof frame.total_num_chunks === "number") this.pending.set(id, { total: frame.total_num_chunks, chunks: [] });
      else if (typeof frame.chunk === "string") {
        const acc = this.pending.get(id);
        assert.ok(acc, `a chunk of ${id} before its header`);
        acc.chunks.push(frame.chunk);
        if (acc.chunks.length === acc.total) {
          this.pending.delete(id);
          this.answers.set(id, JSON.parse(acc.chunks.join("")));
        }
      } else this.answers.set(id, frame);
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static async open(url: string): Promise<AdaptiveSocket> {
    // websockets' connect: no Authorization header, no subprotocol
    const ws = new WebSocket(url.replace(/^http/, "ws"));
    await new Promise<void>((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    return new AdaptiveSocket(ws);
  }
  async until(done: () => boolean): Promise<void> {
    while (!done()) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}

describe("Adaptive's RewardClient over a WebSocket at urls.adaptive", () => {
  test("<url>/ws (harmony's connect_websocket): ids 0, 1, 2… sent before any answer, each answered in Adaptive's chunks with the HTTP reward", async () => {
    const { url } = await token("scorer");
    const socket = await AdaptiveSocket.open(`${url}/ws`);
    const completions = Array.from({ length: 10 }, (_, i) => "x".repeat(i + 1));
    // pydantic's model_dump_json: compact, every field
    for (const [i, c] of completions.entries()) socket.ws.send(JSON.stringify(request(c, { id: i, role: i === 3 ? "developer" : "user" })));
    // Gradebox's own batch message on the same socket (Adaptive's client batches over HTTP only)
    socket.ws.send(JSON.stringify({ id: 10, requests: [request("abc"), request("abcd", { id: 5 })] }));
    await socket.until(() => socket.answers.size === 11);
    for (const [i, c] of completions.entries()) {
      const answer = socket.answers.get(i) as unknown as Reward;
      assert.deepEqual([answer.id, answer.reward], [i, c.length / 100]);
    }
    assert.equal((socket.answers.get(3) as unknown as Reward).metadata.roles, "developer,assistant");
    const batch = socket.answers.get(10) as { responses: Reward[] };
    assert.deepEqual(
      batch.responses.map((r) => [r.reward, r.id]),
      [
        [0.03, null],
        [0.04, 5],
      ],
    );
    assert.ok(socket.frames.every((f) => "total_num_chunks" in f || "chunk" in f));
    socket.ws.close();
  });

  test("<url> itself (adaptive_sdk's connect_websocket): one message per answer, the Response with its id", async () => {
    const { url } = await token("scorer");
    const socket = await AdaptiveSocket.open(url);
    socket.ws.send(JSON.stringify(request("abcde", { id: 0 })));
    socket.ws.send(JSON.stringify(request("ab", { id: 1, metadata: { abstain: true } })));
    await socket.until(() => socket.answers.size === 2);
    assert.equal(socket.frames.length, 2);
    const first = socket.answers.get(0) as unknown as Reward;
    assert.deepEqual([first.id, first.reward], [0, 0.05]);
    assert.equal((socket.answers.get(1) as { error: { code: string } }).error.code, "ABSTAINED");
    socket.ws.close();
  });
});

/** The HTTP status a refused upgrade answers. */
async function refusedUpgrade(url: string): Promise<number> {
  const ws = new WebSocket(url.replace(/^http/, "ws"));
  return new Promise((resolve, reject) => {
    ws.on("unexpected-response", (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
    });
    ws.on("open", () => reject(new Error("the upgrade was accepted")));
    ws.on("error", () => {});
  });
}

describe("what a token opens", () => {
  test("a revoked token answers 401 on every route and at both upgrades, before the body is read", async () => {
    const { id, url } = await token("scorer");
    assert.equal((await httpx("GET", `${url}/info`)).status, 200);
    const revoked = await call(s.app, "DELETE", `/v1/projects/adaptive/graders/scorer/tokens/${id}`, undefined, bearer(admin));
    assert.equal(revoked.status, 200);
    for (const path of ["/info", "/metadata_schema"]) assert.equal((await httpx("GET", `${url}${path}`)).status, 401, path);
    const refused = await httpx("POST", `${url}/score`, request("x"));
    assert.equal(refused.status, 401);
    assert.match(String(refused.body.detail), /not valid or has been revoked/);
    assert.equal((await httpx("POST", `${url}/batch_score`, { requests: [request("x")] })).status, 401);
    // a body over the limit is refused for the token, not for its size: it was never read
    assert.equal((await httpx("POST", `${url}/score`, request("x".repeat(100 * 1024)))).status, 401);
    assert.equal(await refusedUpgrade(`${url}/ws`), 401);
    assert.equal(await refusedUpgrade(url), 401);
    assert.equal((await httpx("GET", `${s.url}/v1/reward/not-a-token/info`)).status, 401);
  });

  test("a token grades with its own grader only, and is no API key", async () => {
    const { token: t, url } = await token("other");
    const info = await httpx("GET", `${url}/info`);
    assert.equal(info.body.name, "other");
    const asKey = await call(s.app, "GET", "/v1/projects/adaptive/graders/scorer/reward/info", undefined, bearer(t));
    assert.equal(asKey.status, 401, "a grade token opens no /v1/projects route");
    const plain = await fetch(`${url}/ws`);
    assert.equal(plain.status, 400, "a plain GET of the socket's address says it is a WebSocket");
    assert.match(((await plain.json()) as { detail: string }).detail, /is a WebSocket/);
  });
});

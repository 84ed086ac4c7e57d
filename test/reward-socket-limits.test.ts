// What a reward socket (…/reward/ws) may hold of the API process, against the real server on a
// real port: its requests in flight count against the project's share of the body budget (as HTTP
// bodies do), a project's open sockets are capped, closing a socket cancels its grading and gives
// its budget back, and an answer larger than a socket may queue is refused, not queued whole.
// The endpoint grader calls a reward server that never answers /score (test's own, on
// 127.0.0.1), so whatever its requests hold stays held until something cancels them.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, describe, test } from "node:test";
import { WebSocket } from "ws";
import { call, startServer, type TestServer } from "./support/helpers.ts";

const BODY_LIMIT = 64 * 1024;
const PER_PROJECT = 128 * 1024;
const SOCKETS = 2;
const BUFFER = 64 * 1024;

let s: TestServer;

/** A reward server whose /score and /batch_score never answer: it counts the calls it holds and those the caller gave up. */
class Silent {
  server: Server | undefined;
  url = "";
  held = 0;
  abandoned = 0;
  private readonly open = new Set<ServerResponse>();

  async start() {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.url?.endsWith("/info")) return void res.end(JSON.stringify({ version: "1", name: "silent", description: "" }));
      if (req.url?.endsWith("/metadata_schema")) return void res.end(JSON.stringify({ type: "object" }));
      req.resume();
      this.held++;
      this.open.add(res);
      res.once("close", () => {
        this.open.delete(res);
        this.abandoned++;
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }
  async close() {
    for (const res of this.open) res.destroy();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
let silent: Silent;

/** Whether `condition` holds within a few seconds. */
async function until(condition: () => boolean): Promise<boolean> {
  for (let i = 0; i < 250 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  return condition();
}

const socketUrl = (project: string, key: string) =>
  `${s.url.replace(/^http/, "ws")}/v1/projects/${project}/graders/${key}/reward/ws?framing=whole`;

/** One client socket: its answers by id (framing=whole) and how it closed. */
class Client {
  readonly answers = new Map<unknown, Record<string, unknown>>();
  closed = false;
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as Record<string, unknown>;
      this.answers.set(frame.id, frame);
    });
    ws.on("close", () => {
      this.closed = true;
    });
  }
  static async open(project: string, key: string) {
    const ws = new WebSocket(socketUrl(project, key), { headers: { authorization: `Bearer ${await s.keyFor(project)}` } });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    return new Client(ws);
  }
  send(message: unknown) {
    this.ws.send(JSON.stringify(message));
  }
  errorOf(id: unknown) {
    return this.answers.get(id)?.error as { code: string; message: string; limit?: number; retryAfter?: number } | undefined;
  }
  async close() {
    this.ws.close();
    await until(() => this.closed);
  }
}

/** The status and problem document of a refused upgrade. */
async function refusedUpgrade(project: string, key: string): Promise<{ status: number; body: { code?: string; detail?: string } }> {
  const ws = new WebSocket(socketUrl(project, key), { headers: { authorization: `Bearer ${await s.keyFor(project)}` } });
  return new Promise((resolve, reject) => {
    ws.on("unexpected-response", (_req, res) => {
      let text = "";
      res.on("data", (chunk) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || "{}") }));
    });
    ws.on("open", () => {
      ws.close();
      reject(new Error("the upgrade was accepted"));
    });
    ws.on("error", () => {});
  });
}

/** A score request of about `bytes` bytes as a message. */
const sized = (id: number, bytes: number) => ({
  id,
  turns: [
    { role: "user", content: "question" },
    { role: "assistant", content: "x".repeat(bytes - 120) },
  ],
});

before(async () => {
  s = await startServer({
    listen: true,
    env: {
      GRADEBOX_BODY_LIMIT: String(BODY_LIMIT),
      GRADEBOX_BODY_BYTES_PER_PROJECT: String(PER_PROJECT),
      GRADEBOX_REWARD_SOCKETS_PER_PROJECT: String(SOCKETS),
      GRADEBOX_REWARD_SOCKET_BUFFER_BYTES: String(BUFFER),
      GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32",
    },
  });
  silent = await new Silent().start();
  const hung = await call(s.app, "POST", "/v1/projects/hog/graders/external-endpoint", { key: "hung", url: silent.url, timeoutMs: 60_000 });
  assert.equal(hung.status, 201, JSON.stringify(hung.body));
  for (const project of ["hog", "calm"]) {
    const created = await call(s.app, "POST", `/v1/projects/${project}/graders`, {
      key: "len",
      source: "export default async function grade(thread) { return (thread.completion() ?? '').length / 1e6; }",
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  }
  const padded = await call(s.app, "POST", "/v1/projects/calm/graders", {
    key: "padded",
    source:
      "export default async function grade(thread) { return { score: 1, metadata: { pad: 'p'.repeat(12000), completion: thread.completion() ?? '' } }; }",
  });
  assert.equal(padded.status, 201, JSON.stringify(padded.body));
});
after(async () => {
  await s.close();
  await silent.close();
});

describe("a reward socket's requests in flight hold the project's body budget", () => {
  test("past the project's share a request is answered TOO_MANY_BODIES with its id; another project grades; closing the socket cancels its grading and gives the budget back", async () => {
    const hog = await Client.open("hog", "hung");
    const bytes = Buffer.byteLength(JSON.stringify(sized(0, 40_000)));
    // 40,000 bytes each: three fit in the 128 KiB share, the rest do not
    for (let id = 0; id < 6; id++) hog.send(sized(id, 40_000));
    assert.ok(await until(() => hog.answers.size === 3 && silent.held === 3), `answers ${[...hog.answers.keys()]}, held ${silent.held}`);
    for (const id of [3, 4, 5]) {
      const error = hog.errorOf(id);
      assert.equal(error?.code, "TOO_MANY_BODIES", JSON.stringify(hog.answers.get(id)));
      assert.equal(error?.limit, PER_PROJECT);
      assert.equal(error?.retryAfter, 1);
      assert.match(String(error?.message), new RegExp(`project "hog" already has ${3 * bytes} bytes .*GRADEBOX_BODY_BYTES_PER_PROJECT`));
    }
    assert.deepEqual([...hog.answers.keys()].sort(), [3, 4, 5]);
    assert.equal(s.app.bodyBudget.held("hog"), 3 * bytes);

    // the same share as HTTP bodies: the project's own POST is refused, another project's is served
    const auth = async (project: string) => ({ "content-type": "application/json", authorization: `Bearer ${await s.keyFor(project)}` });
    const body = JSON.stringify({ turns: sized(0, 40_000).turns });
    const hogs = await fetch(`${s.url}/v1/projects/hog/graders/len/reward/score`, { method: "POST", headers: await auth("hog"), body });
    assert.equal(hogs.status, 429);
    assert.equal((await hogs.json()).code, "TOO_MANY_BODIES");
    const calm = await fetch(`${s.url}/v1/projects/calm/graders/len/reward/score`, { method: "POST", headers: await auth("calm"), body });
    assert.equal(calm.status, 200);
    assert.equal((await calm.json()).reward, 39_880 / 1e6);
    const calmSocket = await Client.open("calm", "len");
    calmSocket.send(sized(1, 40_000));
    assert.ok(await until(() => calmSocket.answers.has(1)));
    assert.equal(calmSocket.answers.get(1)?.reward, 39_880 / 1e6);
    await calmSocket.close();

    // closed: the endpoint calls it started are aborted and its bytes come back
    await hog.close();
    assert.ok(await until(() => silent.abandoned === 3), `calls abandoned: ${silent.abandoned} of ${silent.held}`);
    assert.ok(await until(() => s.app.bodyBudget.held("hog") === 0), `still held: ${s.app.bodyBudget.held("hog")}`);
    const again = await Client.open("hog", "hung");
    for (let id = 0; id < 3; id++) again.send(sized(id, 40_000));
    assert.ok(await until(() => silent.held === 6), `held ${silent.held}`);
    assert.equal(again.answers.size, 0, JSON.stringify([...again.answers.values()]));
    await again.close();
    assert.ok(await until(() => s.app.bodyBudget.held("hog") === 0));
  });

  test("a message the schema refuses gives its bytes back at once", async () => {
    const socket = await Client.open("calm", "len");
    for (let id = 0; id < 8; id++) socket.send({ ...sized(id, 40_000), turns: [{ role: "", content: "x".repeat(39_900) }] });
    assert.ok(await until(() => socket.answers.size === 8));
    assert.deepEqual(
      [...socket.answers.keys()].map((id) => socket.errorOf(id)?.code),
      Array(8).fill("INVALID_REQUEST"),
    );
    assert.equal(s.app.bodyBudget.held("calm"), 0);
    await socket.close();
  });
});

describe("a project's reward sockets", () => {
  test(`at most ${SOCKETS} open: the next upgrade is refused 429 TOO_MANY_SOCKETS, other projects still connect, and a closed one makes room`, async () => {
    const open = [await Client.open("hog", "len"), await Client.open("hog", "len")];
    const refused = await refusedUpgrade("hog", "len");
    assert.equal(refused.status, 429);
    assert.equal(refused.body.code, "TOO_MANY_SOCKETS");
    assert.match(String(refused.body.detail), /already has 2 reward sockets open.*GRADEBOX_REWARD_SOCKETS_PER_PROJECT/);
    // the open ones still serve
    open[0].send(sized(7, 1000));
    assert.ok(await until(() => open[0].answers.has(7)));
    assert.equal(open[0].answers.get(7)?.reward, 880 / 1e6);

    const neighbour = await Client.open("calm", "len");
    await neighbour.close();

    await open[1].close();
    // the server sees the close a moment after the client does
    let third: Client | undefined;
    for (let i = 0; i < 250 && !third; i++) {
      third = await Client.open("hog", "len").catch(() => undefined);
      if (!third) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(third, "a socket of the project opens once one is closed");
    third.send(sized(8, 1000));
    assert.ok(await until(() => third.answers.has(8)));
    await third.close();
    await open[0].close();
  });
});

describe("what a reward socket queues to its client", () => {
  test("an answer larger than the socket may queue is that request's ANSWER_TOO_LARGE; smaller answers still come", async () => {
    const socket = await Client.open("calm", "padded");
    const request = { turns: sized(0, 200).turns };
    // eight rewards of 12,000 characters of metadata: about 96 KB, over the 64 KiB bound
    socket.send({ id: "big", requests: Array(8).fill(request) });
    socket.send({ id: "small", requests: Array(2).fill(request) });
    assert.ok(await until(() => socket.answers.size === 2));
    const error = socket.errorOf("big");
    assert.equal(error?.code, "ANSWER_TOO_LARGE", JSON.stringify(error).slice(0, 300));
    assert.equal(error?.limit, BUFFER);
    assert.match(String(error?.message), /GRADEBOX_REWARD_SOCKET_BUFFER_BYTES/);
    const small = socket.answers.get("small") as { responses: Array<{ reward: number }> };
    assert.deepEqual(
      small.responses.map((r) => r.reward),
      [1, 1],
    );
    assert.equal(socket.closed, false);
    await socket.close();
  });
});

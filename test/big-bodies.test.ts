// Large bodies from a hostile tenant: a 9.6 MB batch of 400 000 invalid turns is refused after
// the first 20 issues (server/validator.ts), and the bytes of bodies the API holds at once are
// bounded in all and per project (server/body-budget.ts), refused before they are read.

import assert from "node:assert/strict";
import { Agent, type ClientRequest, request } from "node:http";
import { after, before, describe, test } from "node:test";
import { z } from "zod";
import { safeParse } from "zod/v4/core";
import { loadConfig } from "../server/config.ts";
import { gradeBodies } from "../server/fast-body.ts";
import { firstIssues, MAX_LISTED_ISSUES } from "../server/validator.ts";
import { startServer, type TestServer } from "./support/helpers.ts";

const agent = new Agent({ keepAlive: true, maxSockets: 32 });
after(() => agent.destroy());

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

/** A request on a real socket; `body` as a string is sent with its Content-Length. */
function send(s: TestServer, key: string, method: string, path: string, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${s.url}${path}`, {
      method,
      agent,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body) }),
      },
    });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : {} }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** uploads still open when a test fails are cut before its server closes (which would wait for them) */
const uploads = new Set<ClientRequest>();

/** A chunked upload left open: it holds what it sent until it ends or is answered. */
function openUpload(s: TestServer, key: string, path: string) {
  const req: ClientRequest = request(`${s.url}${path}`, {
    method: "POST",
    agent: false,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "transfer-encoding": "chunked" },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : {} }));
    });
    req.on("error", reject);
  });
  uploads.add(req);
  req.on("close", () => uploads.delete(req));
  let answered = false;
  answer.then(
    () => (answered = true),
    () => (answered = true),
  );
  return { req, answer, answered: () => answered };
}

async function until(what: string, condition: () => boolean) {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(condition(), `never: ${what}`);
}

const BAD_TURN = '{"role":"","content":1}';
/** `count` threads of `turns` invalid turns each (two issues per turn), under `key` ("threads" or "requests") */
const badBatch = (key: string, count: number, turns: number, extra = "") =>
  `{${extra}"${key}":[${Array.from({ length: count }, () => `{"turns":[${Array(turns).fill(BAD_TURN).join(",")}]}`).join(",")}]}`;

/** the issues a 400's detail lists, and whether it says there are more */
function listed(detail: string) {
  const more = detail.endsWith(`; … and more issues (the first ${MAX_LISTED_ISSUES} are listed)`);
  const text = more ? detail.slice(0, detail.lastIndexOf("; … and more issues")) : detail;
  return { issues: text.split(/; (?=body\.)/), more };
}

describe("firstIssues: zod's first 20 issues, found without zod's every issue", () => {
  test("400 000 bad items: it stops after the 21st issue, having looked at a few dozen", () => {
    let looked = 0;
    const Item = z.object({
      role: z.string().refine((role) => {
        looked++;
        return role !== "";
      }, "role is empty"),
    });
    const Body = z.object({ items: z.array(Item) });
    const body = { items: Array.from({ length: 400_000 }, () => ({ role: "" })) };
    const { issues, more } = firstIssues(Body, body);
    assert.equal(issues.length, MAX_LISTED_ISSUES);
    assert.equal(more, true);
    assert.deepEqual(issues[19].path, ["items", 19, "role"]);
    assert.equal(issues[0].message, "role is empty");
    // zod's safeParse would look at all 400 000 (and make an issue for each)
    assert.ok(looked < 100, `looked at ${looked} items`);
  });

  test("the same issues as zod, in zod's order and words, on bodies bad in many ways", () => {
    const config = { maxTurns: 4, maxContent: 50 };
    const { Thread, GradeBody, GradeBatchBody } = gradeBodies(config);
    const Reward = z.strictObject({
      turns: z
        .array(z.strictObject({ role: z.enum(["user", "assistant"]), content: z.string().max(50, "long") }))
        .min(1, "one")
        .max(4, "four"),
      metadata: z
        .record(z.string(), z.unknown())
        .nullable()
        .optional()
        .refine((m) => !m || Object.keys(m).length < 3, "big"),
      id: z.union([z.string().max(256), z.number().int()]).optional(),
    });
    const RewardBatch = z.strictObject({ requests: z.array(Reward).min(1).max(5, "five") });
    const turn = (role: unknown, content: unknown) => ({ role, content });
    const threads: unknown[] = [
      { turns: [turn("user", "hi")] },
      { turns: [] },
      { turns: [turn("", 1), turn("user", 2)] },
      { turns: Array(6).fill(turn("x", 1)) },
      { turns: [turn("user", "x".repeat(51))], metadata: null },
      { metadata: {} },
      null,
      [],
      "x",
      { turns: [{ role: "user" }], extra: 1 },
      { turns: [turn("user", "a")], metadata: { a: 1, b: 2, c: 3 } },
      { turns: [turn("user", "a"), 5], id: "x".repeat(300) },
    ];
    const bodies: unknown[] = [{}, null, [], { threads: [] }, { threads: Array(30).fill(threads[2]) }];
    for (const t of threads) {
      for (const u of threads) {
        bodies.push({ thread: t }, { threads: [t, u], version: "x" }, { requests: [t, u], x: 1 }, t);
      }
    }
    let compared = 0;
    for (const schema of [Thread, GradeBody, GradeBatchBody, Reward, RewardBatch]) {
      for (const body of bodies) {
        const all = safeParse(schema, body).error?.issues ?? [];
        const first = firstIssues(schema, body);
        assert.deepEqual(first.issues, all.slice(0, MAX_LISTED_ISSUES), JSON.stringify(body));
        assert.equal(first.more, all.length > MAX_LISTED_ISSUES, JSON.stringify(body));
        compared += all.length > 0 ? 1 : 0;
      }
    }
    assert.ok(compared > 500, `${compared} bad bodies compared`);
  });
});

describe("a real server with the default limits", () => {
  let s: TestServer;
  let hostile: string;
  let neighbour: string;
  before(async () => {
    s = await startServer({ listen: true });
    hostile = await s.keyFor("hostile");
    neighbour = await s.keyFor("neighbour");
    for (const [project, key] of [
      ["hostile", hostile],
      ["neighbour", neighbour],
    ]) {
      const created = await send(s, key, "POST", `/v1/projects/${project}/graders`, JSON.stringify({ key: "g", source: "async (t) => 1" }));
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
  });
  after(() => s.close());

  const routes: Array<[string, string, string]> = [
    ["grade-batch", "/v1/projects/hostile/graders/g/grade-batch", badBatch("threads", 1000, 400)],
    ["reward/batch_score", "/v1/projects/hostile/graders/g/reward/batch_score", badBatch("requests", 1000, 400)],
    ["validate", "/v1/projects/hostile/graders/validate", badBatch("threads", 1000, 400, '"source":"async () => 1",')],
  ];
  for (const [name, path, body] of routes) {
    test(`${name}: a 9.6 MB body of 400 000 invalid turns is a 400 listing zod's first 20 issues`, async () => {
      assert.ok(body.length > 9_500_000 && body.length <= s.config.bodyLimit, `${body.length} bytes`);
      const res = await send(s, hostile, "POST", path, body);
      assert.equal(res.status, 400, JSON.stringify(res.body).slice(0, 500));
      assert.equal(res.body.code, "INVALID_REQUEST");
      const { issues, more } = listed(res.body.detail as string);
      assert.equal(issues.length, MAX_LISTED_ISSUES);
      assert.equal(more, true);
      const at = name === "reward/batch_score" ? "requests" : "threads";
      // zod's words for the first turn, as a one-turn body gets them
      if (name === "grade-batch") {
        const [role, content] = safeParse(gradeBodies(s.config).GradeBatchBody, JSON.parse(badBatch("threads", 1, 1))).error?.issues ?? [];
        assert.equal(issues[0], `body.${role.path.join(".")}: ${role.message}`);
        assert.equal(issues[1], `body.${content.path.join(".")}: ${content.message}`);
      }
      assert.match(issues[0], new RegExp(`^body\\.${at}\\.0\\.turns\\.0\\.role: `));
      assert.match(issues[19], new RegExp(`^body\\.${at}\\.0\\.turns\\.9\\.content: `));
    });
  }

  test("six at once from one project: 400s for the first it holds, TOO_MANY_BODIES for the rest; the neighbour grades; /healthz answers", async () => {
    const body = routes[0][2];
    const sent = Array.from({ length: 6 }, () => send(s, hostile, "POST", routes[0][1], body));
    const small = JSON.stringify({ thread: { turns: [{ role: "user", content: "hi" }] } });
    const [graded, health] = await Promise.all([
      send(s, neighbour, "POST", "/v1/projects/neighbour/graders/g/grade", small),
      send(s, neighbour, "GET", "/healthz"),
    ]);
    assert.equal(graded.status, 200, JSON.stringify(graded.body));
    assert.equal(graded.body.score, 1);
    assert.equal(health.status, 200);
    const answers = await Promise.all(sent);
    const codes = answers.map((a) => `${a.status} ${a.body.code}`);
    // a project's share (half of 64 MiB) holds three of them whatever the timing
    assert.ok(codes.filter((c) => c === "400 INVALID_REQUEST").length >= 3, codes.join(", "));
    assert.deepEqual(
      codes.filter((c) => c !== "400 INVALID_REQUEST"),
      codes.filter((c) => c === "429 TOO_MANY_BODIES"),
    );
    for (const refused of answers.filter((a) => a.status === 429)) assert.equal(refused.headers["retry-after"], "1");
    await until("every byte given back", () => s.app.bodyBudget.held() === 0);
  });
});

describe("a real server with small body caps: who is refused, deterministically", () => {
  let s: TestServer;
  const keys: Record<string, string> = {};
  const PART = 480_000;
  /** a chunked batch of invalid turns, about `bytes` long, left open */
  const part = (bytes: number) =>
    `{"threads":[{"turns":[${Array(Math.floor(bytes / (BAD_TURN.length + 1)))
      .fill(BAD_TURN)
      .join(",")}`;
  before(async () => {
    s = await startServer({
      listen: true,
      env: { GRADEBOX_BODY_LIMIT: "1000000", GRADEBOX_BODY_BYTES_IN_FLIGHT: "3000000", GRADEBOX_BODY_BYTES_PER_PROJECT: "2000000" },
    });
    for (const project of ["hog", "other", "calm"]) {
      keys[project] = await s.keyFor(project);
      const created = await send(
        s,
        keys[project],
        "POST",
        `/v1/projects/${project}/graders`,
        JSON.stringify({ key: "g", source: "async (t) => 1" }),
      );
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
  });
  after(async () => {
    for (const req of uploads) req.destroy();
    await s.close();
  });

  test("a project past its share gets 429 TOO_MANY_BODIES; past the server's total, anyone gets 503 BODY_CAPACITY; a small request still grades", async () => {
    const budget = s.app.bodyBudget;
    const path = (project: string) => `/v1/projects/${project}/graders/g/grade-batch`;
    // six uploads from hog, one after another: four fit in its share of 2 MB, two are refused at their first chunk
    const uploads = [];
    for (let i = 0; i < 6; i++) {
      const upload = openUpload(s, keys.hog, path("hog"));
      const before = budget.held("hog");
      upload.req.write(part(PART));
      await until(`upload ${i} counted or answered`, () => budget.held("hog") >= before + PART - 100 || upload.answered());
      uploads.push(upload);
    }
    const refused = uploads.filter((u) => u.answered());
    assert.equal(refused.length, 2);
    for (const { answer } of refused) {
      const res = await answer;
      assert.equal(res.status, 429);
      assert.equal(res.body.code, "TOO_MANY_BODIES");
      assert.equal(res.body.limit, 2_000_000);
      assert.equal(res.body.retryAfter, 1);
      assert.equal(res.headers["retry-after"], "1");
      assert.match(res.body.detail as string, /GRADEBOX_BODY_BYTES_PER_PROJECT/);
    }
    const held = uploads.filter((u) => !u.answered());
    assert.ok(budget.held("hog") <= 2_000_000);
    // with a Content-Length, refused before a byte of it is read
    const more = await send(s, keys.hog, "POST", path("hog"), badBatch("threads", 4, 1000));
    assert.equal(more.status, 429);
    assert.equal(more.body.code, "TOO_MANY_BODIES");

    // another project fills the rest of the server's 3 MB
    const other = openUpload(s, keys.other, path("other"));
    other.req.write(part(900_000));
    await until("other's upload counted", () => budget.held("other") >= 900_000 - 100);
    const big = badBatch("threads", 1, 20_000);
    assert.ok(big.length > budget.limits.bodyBytesInFlight - budget.held() && big.length < s.config.bodyLimit);
    const full = await send(s, keys.calm, "POST", path("calm"), big);
    assert.equal(full.status, 503, JSON.stringify(full.body));
    assert.equal(full.body.code, "BODY_CAPACITY");
    assert.equal(full.body.limit, 3_000_000);
    assert.equal(full.headers["retry-after"], "1");
    // a small request fits in what is left: the neighbour grades, and /healthz answers
    const small = await send(
      s,
      keys.calm,
      "POST",
      "/v1/projects/calm/graders/g/grade",
      JSON.stringify({ thread: { turns: [{ role: "user", content: "hi" }] } }),
    );
    assert.equal(small.status, 200, JSON.stringify(small.body));
    assert.equal((await send(s, keys.calm, "GET", "/healthz")).status, 200);

    // the open uploads end (their batches are invalid: 400), and give their bytes back
    for (const upload of [...held, other]) upload.req.end("]}]}");
    for (const upload of [...held, other]) {
      const res = await upload.answer;
      assert.equal(res.status, 400, JSON.stringify(res.body).slice(0, 300));
      assert.equal(res.body.code, "INVALID_REQUEST");
    }
    await until("every byte given back", () => budget.held() === 0);
    const after = await send(s, keys.calm, "POST", path("calm"), big);
    assert.equal(after.status, 400);
  });

  test("a chunked body is refused at the chunk that passes the share, while it is being sent", async () => {
    const budget = s.app.bodyBudget;
    const path = "/v1/projects/hog/graders/g/grade-batch";
    // the share is 2 MB and a body at most 1 MB: two others hold 1.5 MB first
    const holders = [openUpload(s, keys.hog, path), openUpload(s, keys.hog, path)];
    holders[0].req.write(part(900_000));
    holders[1].req.write(part(600_000));
    await until("the holders counted", () => budget.held("hog") >= 1_500_000 - 100);
    const upload = openUpload(s, keys.hog, path);
    upload.req.write(part(300_000));
    await until("its first part counted", () => budget.held("hog") >= 1_800_000 - 100);
    assert.equal(upload.answered(), false);
    upload.req.write(
      `,${Array(Math.floor(300_000 / (BAD_TURN.length + 1)))
        .fill(BAD_TURN)
        .join(",")}`,
    );
    const res = await upload.answer;
    assert.equal(res.status, 429);
    assert.equal(res.body.code, "TOO_MANY_BODIES");
    upload.req.destroy();
    for (const holder of holders) holder.req.end("]}]}");
    for (const holder of holders) assert.equal((await holder.answer).status, 400);
    await until("every byte given back", () => budget.held() === 0);
  });
});

test("the caps' configuration: 64 MiB and half of it per project by default; a share below the body limit is refused at start", () => {
  const base = { GRADEBOX_DB: ":memory:" };
  const defaults = loadConfig(base);
  assert.equal(defaults.bodyBytesInFlight, 64 * 1024 * 1024);
  assert.equal(defaults.bodyBytesPerProject, 32 * 1024 * 1024);
  // a larger body limit raises the default total to 4 bodies of it
  assert.equal(loadConfig({ ...base, GRADEBOX_BODY_LIMIT: String(40 * 1024 * 1024) }).bodyBytesInFlight, 160 * 1024 * 1024);
  assert.equal(loadConfig({ ...base, GRADEBOX_BODY_BYTES_IN_FLIGHT: "100000000" }).bodyBytesPerProject, 50_000_000);
  assert.throws(
    () => loadConfig({ ...base, GRADEBOX_BODY_BYTES_PER_PROJECT: "5000000" }),
    /GRADEBOX_BODY_BYTES_PER_PROJECT.*must be at least GRADEBOX_BODY_LIMIT \(10485760\)/,
  );
  assert.throws(
    () => loadConfig({ ...base, GRADEBOX_BODY_BYTES_IN_FLIGHT: "20000000", GRADEBOX_BODY_BYTES_PER_PROJECT: "30000000" }),
    /at most GRADEBOX_BODY_BYTES_IN_FLIGHT \(20000000\)/,
  );
});

// Tenants and keys: every /v1 route needs a live key, and a key sees only its own project.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import type { SqliteDb } from "../server/db/sqlite.ts";
import { call, startServer, type TestServer, testPostgres, thread } from "./support/helpers.ts";

let s: TestServer;
let keyA: string;
let keyB: string;
before(async () => {
  s = await startServer();
  keyA = await s.keyFor("alpha");
  keyB = await s.keyFor("beta");
  const res = await call(s.app, "POST", "/v1/projects/beta/graders", {
    key: "secret-grader",
    source: "async (t) => 0.25",
    description: "beta's",
  });
  assert.equal(res.status, 201);
});
after(() => s.close());

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe("authentication", () => {
  test("no key, a malformed header, an unknown key: 401 problem+json with WWW-Authenticate", async () => {
    for (const headers of [{}, { authorization: "Basic abc" }, { authorization: "Bearer" }, bearer("gbx_not-a-real-key")]) {
      const res = await s.app.inject({ method: "GET", url: "/v1/projects/alpha/graders", headers });
      assert.equal(res.statusCode, 401, JSON.stringify(headers));
      assert.match(String(res.headers["content-type"]), /problem\+json/);
      assert.equal(JSON.parse(res.body).code, "UNAUTHORIZED");
      assert.match(String(res.headers["www-authenticate"]), /^Bearer/);
    }
  });

  test("401 comes before any parsing of the body", async () => {
    const res = await s.app.inject({
      method: "POST",
      url: "/v1/projects/alpha/graders",
      payload: "{broken",
      headers: { "content-type": "application/json" },
    });
    assert.equal(res.statusCode, 401);
  });

  test("a revoked key stops working immediately", async () => {
    const { key, info } = await s.store.keys.create("alpha");
    assert.equal((await call(s.app, "GET", "/v1/projects/alpha/graders", undefined, bearer(key))).status, 200);
    await s.store.keys.revoke(info.id);
    const res = await call(s.app, "GET", "/v1/projects/alpha/graders", undefined, bearer(key));
    assert.equal(res.status, 401);
    assert.match(res.body.detail, /revoked/);
  });

  test("keys are stored only as hashes", { skip: testPostgres && "reads the SQLite file" }, async () => {
    (s.store.db as SqliteDb).raw.pragma("wal_checkpoint(TRUNCATE)");
    const bytes = readFileSync(s.config.dbPath).toString("latin1");
    assert.ok(bytes.includes("alpha"), "the database file is the one in use");
    assert.ok(!bytes.includes(keyA.slice(4)) && !bytes.includes(keyB.slice(4)), "no key appears in the database file");
  });
});

describe("isolation between projects", () => {
  const routes: Array<[string, "GET" | "POST" | "PUT" | "DELETE", string, unknown?]> = [
    ["list", "GET", "/v1/projects/beta/graders"],
    ["get", "GET", "/v1/projects/beta/graders/secret-grader"],
    ["create", "POST", "/v1/projects/beta/graders", { key: "intruder", source: "async (t) => 1" }],
    ["create combined", "POST", "/v1/projects/beta/graders/combined", { key: "c", mode: "any", graders: [{ graderKey: "secret-grader" }] }],
    ["validate", "POST", "/v1/projects/beta/graders/validate", { source: "async (t) => 1" }],
    ["lock", "PUT", "/v1/projects/beta/graders/secret-grader/lock", { locked: true }],
    ["delete", "DELETE", "/v1/projects/beta/graders/secret-grader"],
    ["grade", "POST", "/v1/projects/beta/graders/secret-grader/grade", { thread: thread("x") }],
    ["grade-batch", "POST", "/v1/projects/beta/graders/secret-grader/grade-batch", { threads: [thread("x")] }],
  ];
  for (const [what, method, url, body] of routes) {
    test(`${what}: project alpha's key gets 404 for project beta, exactly as for a project that does not exist`, async () => {
      const res = await call(s.app, method, url, body, bearer(keyA));
      assert.equal(res.status, 404, JSON.stringify(res.body));
      assert.equal(res.body.code, "PROJECT_NOT_FOUND");
      assert.doesNotMatch(JSON.stringify(res.body), /secret-grader|0\.25|beta's/);
      const missing = await call(s.app, method, url.replace("/beta/", "/gamma/"), body, bearer(keyA));
      assert.equal(missing.status, 404);
      assert.equal(missing.body.code, res.body.code);
      assert.equal(missing.body.title, res.body.title);
      assert.equal(missing.body.detail.replace("gamma", "beta"), res.body.detail, "no existence leak");
    });
  }
  test("beta's grader is untouched and beta's own key still works", async () => {
    const got = await call(s.app, "GET", "/v1/projects/beta/graders/secret-grader", undefined, bearer(keyB));
    assert.equal(got.status, 200);
    assert.equal(got.body.locked, false);
    const list = await call(s.app, "GET", "/v1/projects/beta/graders", undefined, bearer(keyB));
    assert.deepEqual(
      list.body.data.map((g: { key: string }) => g.key),
      ["secret-grader"],
    );
    const graded = await call(s.app, "POST", "/v1/projects/beta/graders/secret-grader/grade", { thread: thread("x") }, bearer(keyB));
    assert.equal(graded.body.score, 0.25);
  });
});

describe("the gradebox keys command", () => {
  test("create prints the key once; list never shows it; revoke stops it", async () => {
    const run = (...args: string[]) =>
      promisify(execFile)("npx", ["gradebox", ...args], {
        cwd: new URL("..", import.meta.url).pathname,
        env: { ...process.env, GRADEBOX_DB: s.config.dbPath },
      });
    const created = JSON.parse((await run("keys", "create", "--project", "cli-made", "--label", "ci", "--json")).stdout);
    assert.match(created.key, /^gbx_/);
    assert.equal(created.project, "cli-made");
    assert.equal((await call(s.app, "GET", "/v1/projects/cli-made/graders", undefined, bearer(created.key))).status, 200);

    const listed = (await run("keys", "list", "--project", "cli-made")).stdout;
    assert.match(listed, new RegExp(`${created.id}\\s+cli-made`));
    assert.ok(!listed.includes(created.key), "the key itself is never listed");

    await run("keys", "revoke", created.id);
    assert.equal((await call(s.app, "GET", "/v1/projects/cli-made/graders", undefined, bearer(created.key))).status, 401);
    await assert.rejects(run("keys", "create", "--project", "Not Valid"), /project must match/);
  });
});

// API keys over HTTP, for a team that is not on the server's host: a project's admin key (its
// first key) or the operator's token (GRADEBOX_ADMIN_TOKEN) creates, lists and revokes keys; a
// grader key cannot; a key is shown once; a revoked key is refused at once, by this node and by
// another one on the same database; the SDK's client.keys and `gradebox keys --server` do the same.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { ConflictError, Gradebox, NotFoundError, PermissionDeniedError } from "../sdk/index.ts";
import { Store } from "../server/store.ts";
import { call, repoRoot, startServer, type TestServer, testPostgres } from "./support/helpers.ts";

const ADMIN_TOKEN = `gba_${randomBytes(24).toString("hex")}`;
let s: TestServer;
let admin: string;
before(async () => {
  s = await startServer({ listen: true, env: { GRADEBOX_ADMIN_TOKEN: ADMIN_TOKEN } });
  admin = await s.keyFor("team"); // the project's first key: its admin
});
after(() => s.close());

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
/** As the operator: app.inject directly, as `call` would first make the path's project a key of its own. */
async function asOperator(method: "GET" | "POST" | "DELETE", url: string, body?: object, token = ADMIN_TOKEN) {
  const res = await s.app.inject({ method, url, headers: bearer(token), ...(body ? { payload: body } : {}) });
  return { status: res.statusCode, body: JSON.parse(res.body) };
}
const me = async (key: string) => (await call(s.app, "GET", "/v1/me", undefined, bearer(key))).status;

describe("over HTTP, with the project's admin key", () => {
  test("create: the key once, a grader key unless told; list: never a key; revoke: refused at once", async () => {
    const created = await call(s.app, "POST", "/v1/projects/team/keys", { label: "alice's laptop" }, bearer(admin));
    assert.equal(created.status, 201);
    assert.match(created.body.key, /^gbx_[\w-]{32}$/);
    assert.deepEqual(
      [created.body.project, created.body.role, created.body.label, created.body.revokedAt],
      ["team", "grader", "alice's laptop", null],
    );
    assert.equal(await me(created.body.key), 200, "the new key works");

    const listed = await call(s.app, "GET", "/v1/projects/team/keys", undefined, bearer(admin));
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.data.map((k: { role: string }) => k.role),
      ["admin", "grader"],
    );
    assert.ok(!JSON.stringify(listed.body).includes(created.body.key), "a key is never listed");
    assert.ok(listed.body.data.every((k: Record<string, unknown>) => !("key" in k) && !("hash" in k)));

    const revoked = await call(s.app, "DELETE", `/v1/projects/team/keys/${created.body.id}`, undefined, bearer(admin));
    assert.equal(revoked.status, 200);
    assert.equal(typeof revoked.body.revokedAt, "string");
    assert.equal(await me(created.body.key), 401, "refused from the answer on");
    const again = await call(s.app, "DELETE", `/v1/projects/team/keys/${created.body.id}`, undefined, bearer(admin));
    assert.deepEqual([again.status, again.body.revokedAt], [200, revoked.body.revokedAt], "revoking a revoked key answers it again");
  });

  test("a grader key manages no keys (403); another project's keys and unknown ids are 404", async () => {
    const grader = (await call(s.app, "POST", "/v1/projects/team/keys", { role: "grader" }, bearer(admin))).body;
    for (const [method, url] of [
      ["GET", "/v1/projects/team/keys"],
      ["POST", "/v1/projects/team/keys"],
      ["DELETE", `/v1/projects/team/keys/${grader.id}`],
    ] as const) {
      const res = await call(s.app, method, url, method === "POST" ? {} : undefined, bearer(grader.key));
      assert.equal(res.status, 403, `${method} ${url}`);
      assert.equal(res.body.code, "FORBIDDEN");
      assert.match(res.body.detail, /role is grader.*admin keys.*operator's token/);
    }
    assert.equal(await me(grader.key), 200, "still a working key for everything else");
    const other = await s.keyFor("elsewhere");
    const theirs = await call(s.app, "GET", "/v1/projects/elsewhere/keys", undefined, bearer(admin));
    assert.deepEqual([theirs.status, theirs.body.code], [404, "PROJECT_NOT_FOUND"]);
    const elsewhereId = (await s.store.keys.list("elsewhere"))[0].id;
    const cross = await call(s.app, "DELETE", `/v1/projects/team/keys/${elsewhereId}`, undefined, bearer(admin));
    assert.deepEqual([cross.status, cross.body.code], [404, "KEY_NOT_FOUND"], "another project's key is as unknown as none");
    assert.equal(await me(other), 200);
    const unknown = await call(s.app, "DELETE", "/v1/projects/team/keys/key_000000000000", undefined, bearer(admin));
    assert.deepEqual([unknown.status, unknown.body.code], [404, "KEY_NOT_FOUND"]);
    const bad = await call(s.app, "POST", "/v1/projects/team/keys", { role: "owner" }, bearer(admin));
    assert.deepEqual([bad.status, bad.body.code], [400, "INVALID_REQUEST"]);
  });

  test("the last live admin key cannot revoke itself (409 LAST_ADMIN_KEY); with a second admin it can", async () => {
    const adminId = (await s.store.keys.list("team")).find((k) => k.role === "admin")?.id as string;
    const last = await call(s.app, "DELETE", `/v1/projects/team/keys/${adminId}`, undefined, bearer(admin));
    assert.deepEqual([last.status, last.body.code], [409, "LAST_ADMIN_KEY"]);
    const second = (await call(s.app, "POST", "/v1/projects/team/keys", { role: "admin", label: "second" }, bearer(admin))).body;
    assert.equal(second.role, "admin");
    const gone = await call(s.app, "DELETE", `/v1/projects/team/keys/${adminId}`, undefined, bearer(second.key));
    assert.equal(gone.status, 200);
    assert.equal(await me(admin), 401);
    admin = second.key;
  });
});

describe("the operator's token (GRADEBOX_ADMIN_TOKEN)", () => {
  test("manages any project's keys, makes a new project's first (admin) key, and opens no other route", async () => {
    const first = await asOperator("POST", "/v1/projects/newcomers/keys", { label: "lead" });
    assert.equal(first.status, 201);
    assert.equal(first.body.role, "admin", "a project's first key is its admin");
    const listed = await asOperator("GET", "/v1/projects/team/keys");
    assert.equal(listed.status, 200);
    assert.ok(listed.body.data.length >= 3);
    // the operator may revoke a project's last admin key (and make another)
    const only = await asOperator("DELETE", `/v1/projects/newcomers/keys/${first.body.id}`);
    assert.equal(only.status, 200);
    const grading = await asOperator("GET", "/v1/projects/team/graders");
    assert.equal(grading.status, 401);
    assert.match(grading.body.detail, /manages API keys only/);
    const wrong = await asOperator("GET", "/v1/projects/team/keys", undefined, `${ADMIN_TOKEN}x`);
    assert.equal(wrong.status, 401);
  });

  test("without GRADEBOX_ADMIN_TOKEN no token is the operator's", async () => {
    const plain = await startServer();
    try {
      const res = await call(plain.app, "GET", "/v1/projects/team/keys", undefined, bearer(ADMIN_TOKEN));
      assert.equal(res.status, 401);
    } finally {
      await plain.close();
    }
  });
});

test("the 401 without a key names a command a remote user can run", async () => {
  const res = await s.app.inject({ method: "GET", url: "/v1/me" });
  assert.equal(res.statusCode, 401);
  assert.match(JSON.parse(res.body).detail, /gradebox keys create --server <this server's URL>/);
});

test("a key revoked over HTTP is refused by another node on the same database at once", {
  skip: testPostgres ? "one SQLite file here" : false,
}, async () => {
  const other = await Store.open({ db: s.config.dbPath, pgPool: 2 });
  try {
    const made = (await call(s.app, "POST", "/v1/projects/team/keys", {}, bearer(admin))).body;
    assert.equal(await other.cache.verifyKey(made.key), "team");
    assert.equal(await other.cache.verifyKey(made.key), "team", "cached");
    await call(s.app, "DELETE", `/v1/projects/team/keys/${made.id}`, undefined, bearer(admin));
    assert.equal(await other.cache.verifyKey(made.key), undefined);
  } finally {
    await other.close();
  }
});

test("the SDK: client.keys.create, list and revoke, with their typed errors", async () => {
  const client = new Gradebox({ baseURL: s.url, project: "team", apiKey: admin });
  const made = await client.keys.create({ label: "sdk" });
  assert.equal(made.role, "grader");
  assert.ok((await client.keys.list()).some((k) => k.id === made.id && !("key" in k)));
  const revoked = await client.keys.revoke({ id: made.id });
  assert.equal(typeof revoked.revokedAt, "string");
  await assert.rejects(client.keys.revoke({ id: "key_000000000000" }), NotFoundError);
  const asGrader = new Gradebox({ baseURL: s.url, project: "team", apiKey: (await client.keys.create()).key });
  await assert.rejects(asGrader.keys.list(), PermissionDeniedError);
  const adminId = (await client.keys.list()).filter((k) => k.role === "admin" && !k.revokedAt);
  assert.equal(adminId.length, 1);
  await assert.rejects(client.keys.revoke({ id: adminId[0].id }), ConflictError);
});

test("gradebox keys --server: create, list and revoke over HTTP, as the admin or the operator", async () => {
  const gradebox = (env: Record<string, string>, ...args: string[]) =>
    promisify(execFile)(process.execPath, ["bin/gradebox.js", ...args], {
      cwd: repoRoot,
      // no GRADEBOX_DB: it must not matter where the database is
      env: { ...process.env, GRADEBOX_DB: "/nonexistent/gradebox.db", GRADEBOX_PROJECT: "team", ...env },
    });
  const asAdmin = { GRADEBOX_API_KEY: admin };
  const created = JSON.parse((await gradebox(asAdmin, "keys", "create", "--server", s.url, "--label", "ci", "--json")).stdout);
  assert.deepEqual([created.project, created.role, created.label], ["team", "grader", "ci"]);
  assert.equal(await me(created.key), 200);
  const listed = (await gradebox(asAdmin, "keys", "list", "--server", s.url)).stdout;
  assert.match(listed, new RegExp(`^${created.id} +team +gbx_\\S*… {2}active {2}grader {2}ci$`, "m"));
  assert.ok(!listed.includes(created.key));
  assert.equal((await gradebox(asAdmin, "keys", "revoke", created.id, "--server", s.url)).stdout, `revoked ${created.id}\n`);
  assert.equal(await me(created.key), 401);

  const op = JSON.parse(
    (await gradebox({ GRADEBOX_ADMIN_TOKEN: ADMIN_TOKEN }, "keys", "create", "--server", s.url, "--project", "ops-made", "--json")).stdout,
  );
  assert.deepEqual([op.project, op.role], ["ops-made", "admin"]);
  const refused = await gradebox({ GRADEBOX_API_KEY: op.key }, "keys", "list", "--server", s.url).catch((e) => e);
  assert.equal(refused.code, 1, "the admin key of ops-made is not team's");
  assert.match(refused.stderr, /404 PROJECT_NOT_FOUND/);
});

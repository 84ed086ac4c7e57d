// Secrets belong to a project: stored through the API (sealed at rest, never returned), named
// only by their own project's models and endpoints, sent only to the host they are bound to;
// server environment secrets only to the projects the operator granted them to. The real
// server and SQLite file, a scripted OpenAI-compatible model and a reward server on loopback.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import Database from "better-sqlite3";
import { migrations } from "../server/db/migrate.ts";
import { FakeOpenAI } from "./support/fake-openai.ts";
import { call, startServer, type TestServer, testPostgres } from "./support/helpers.ts";
import { RecordingRewards } from "./support/recording-rewards.ts";

let fake: FakeOpenAI;
let rewards: RecordingRewards;
let s: TestServer;
const VICTIM = "/v1/projects/victim";
const ATTACKER = "/v1/projects/attacker";
const qa = {
  turns: [
    { role: "user", content: "Is the sky blue?" },
    { role: "assistant", content: "Yes." },
  ],
};

async function model(prefix: string, key: string, extra: Record<string, unknown>, baseURL = fake.url) {
  return call(s.app, "POST", `${prefix}/models`, { key, baseURL, model: "judge-1", timeoutMs: 2000, ...extra });
}
async function judgeOn(prefix: string, key: string, modelKey: string) {
  const r = await call(s.app, "POST", `${prefix}/graders/binary-judge`, { key, criteria: "answers", judgeModel: modelKey });
  assert.equal(r.status, 201, JSON.stringify(r.body));
}
const grade = (prefix: string, key: string) => call(s.app, "POST", `${prefix}/graders/${key}/grade`, { thread: qa });

before(async () => {
  fake = await new FakeOpenAI().start();
  rewards = await new RecordingRewards().start();
  process.env.GRADEBOX_SECRET_VICTIM_KEY = "sk-victim-env-value";
  process.env.GRADEBOX_SECRET_SHARED = "shared-env-value";
  s = await startServer({
    env: {
      GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32",
      GRADEBOX_SECRET_GRANTS: "GRADEBOX_SECRET_VICTIM_KEY=victim; GRADEBOX_SECRET_SHARED=*",
    },
    listen: true,
  });
});
after(async () => {
  await s.close();
  await fake.close();
  await rewards.close();
});
beforeEach(() => {
  fake.reset();
  rewards.headers.length = 0;
});

describe("the secrets API", () => {
  test("set, list, get, rotate, delete; a value is never returned and is sealed at rest", async () => {
    const created = await call(s.app, "PUT", `${VICTIM}/secrets/openai`, { value: "sk-victim-stored-123" });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(Object.keys(created.body).sort(), ["createdAt", "host", "name", "updatedAt"]);
    assert.equal(created.body.host, null);
    const rotated = await call(s.app, "PUT", `${VICTIM}/secrets/openai`, { value: "sk-victim-stored-456" });
    assert.equal(rotated.status, 200);
    const listed = await call(s.app, "GET", `${VICTIM}/secrets`);
    assert.deepEqual(
      listed.body.data.map((x: { name: string }) => x.name),
      ["openai"],
    );
    assert.doesNotMatch(JSON.stringify(listed.body), /sk-victim/);
    assert.doesNotMatch(JSON.stringify((await call(s.app, "GET", `${VICTIM}/secrets/openai`)).body), /sk-victim/);
    if (!testPostgres) {
      // the file holds the sealed value only
      const file = readFileSync(join(s.dir, "gradebox.db"));
      assert.equal(file.includes("sk-victim-stored"), false);
      const db = new Database(join(s.dir, "gradebox.db"), { readonly: true });
      const row = db.prepare("SELECT value FROM secrets WHERE project = 'victim' AND name = 'openai'").get() as { value: string };
      db.close();
      assert.match(row.value, /^v1:/);
    }
    // bad values and names are refused
    assert.equal((await call(s.app, "PUT", `${VICTIM}/secrets/openai`, { value: "" })).status, 400);
    assert.equal((await call(s.app, "PUT", `${VICTIM}/secrets/openai`, { value: "a\nb" })).status, 400);
    assert.equal((await call(s.app, "PUT", `${VICTIM}/secrets/openai`, { value: "x".repeat(8193) })).status, 400);
    assert.equal((await call(s.app, "PUT", `${VICTIM}/secrets/-bad`, { value: "x" })).status, 400);
    assert.equal((await call(s.app, "PUT", `${VICTIM}/secrets/temp`, { value: "x" })).status, 201);
    assert.equal((await call(s.app, "DELETE", `${VICTIM}/secrets/temp`)).status, 204);
    const gone = await call(s.app, "GET", `${VICTIM}/secrets/temp`);
    assert.equal(gone.status, 404);
    assert.equal(gone.body.code, "SECRET_NOT_FOUND");
  });

  test("another project sees none of a project's secrets, by list, get, delete or overwrite", async () => {
    await call(s.app, "PUT", `${VICTIM}/secrets/private`, { value: "victim-private-value" });
    assert.deepEqual((await call(s.app, "GET", `${ATTACKER}/secrets`)).body.data, []);
    assert.equal((await call(s.app, "GET", `${ATTACKER}/secrets/private`)).status, 404);
    assert.equal((await call(s.app, "DELETE", `${ATTACKER}/secrets/private`)).status, 404);
    // the attacker's own secret of the same name is its own row
    assert.equal((await call(s.app, "PUT", `${ATTACKER}/secrets/private`, { value: "attacker-value" })).status, 201);
    assert.equal((await call(s.app, "GET", `${VICTIM}/secrets/private`)).status, 200);
    // and a key of one project cannot reach another's route at all
    const key = await s.keyFor("attacker");
    const crossed = await s.app.inject({ method: "GET", url: `${VICTIM}/secrets`, headers: { authorization: `Bearer ${key}` } });
    assert.equal(crossed.statusCode, 404);
  });
});

describe("models and endpoints use their own project's secrets", () => {
  test("a model's stored key is sent as its bearer token, rotation applies at once", async () => {
    await call(s.app, "PUT", `${VICTIM}/secrets/judge-key`, { value: "sk-one" });
    assert.equal((await model(VICTIM, "keyed", { apiKeySecret: "judge-key" })).status, 201);
    await judgeOn(VICTIM, "keyed-judge", "keyed");
    assert.equal((await grade(VICTIM, "keyed-judge")).status, 200);
    assert.equal(fake.requests.at(-1)?.headers.authorization, "Bearer sk-one");
    assert.equal((await call(s.app, "GET", `${VICTIM}/secrets/judge-key`)).body.host, "127.0.0.1");
    await call(s.app, "PUT", `${VICTIM}/secrets/judge-key`, { value: "sk-two" });
    assert.equal((await grade(VICTIM, "keyed-judge")).status, 200);
    assert.equal(fake.requests.at(-1)?.headers.authorization, "Bearer sk-two");
    const inUse = await call(s.app, "DELETE", `${VICTIM}/secrets/judge-key`);
    assert.equal(inUse.status, 409);
    assert.equal(inUse.body.code, "SECRET_IN_USE");
    assert.deepEqual(inUse.body.usedBy, ['model "keyed"']);
  });

  test("naming another project's secret, or an existing one, answers exactly as a missing one", async () => {
    await call(s.app, "PUT", `${VICTIM}/secrets/victim-only`, { value: "sk-victim" });
    const other = await model(ATTACKER, "steal", { apiKeySecret: "victim-only" });
    const missing = await model(ATTACKER, "steal", { apiKeySecret: "no-such-secret" });
    assert.equal(other.status, 404);
    assert.equal(other.body.code, "SECRET_NOT_FOUND");
    assert.equal(missing.status, other.status);
    assert.equal(missing.body.detail.replaceAll("no-such-secret", "X"), other.body.detail.replaceAll("victim-only", "X"));
    assert.equal(fake.requests.length, 0);
  });

  test("a server environment secret goes only to the projects granted it; probing its name tells nothing", async () => {
    const stolen = await model(ATTACKER, "env-steal", { apiKeyEnv: "GRADEBOX_SECRET_VICTIM_KEY" });
    const unset = await model(ATTACKER, "env-none", { apiKeyEnv: "GRADEBOX_SECRET_NEVER_SET" });
    assert.equal(stolen.status, 400);
    assert.equal(unset.status, 400);
    assert.equal(stolen.body.detail.replace("VICTIM_KEY", "X"), unset.body.detail.replace("NEVER_SET", "X"));
    const ep = await call(s.app, "POST", `${ATTACKER}/graders/external-endpoint`, {
      key: "env-steal",
      url: rewards.url,
      headersEnv: { Authorization: "GRADEBOX_SECRET_VICTIM_KEY" },
    });
    assert.equal(ep.status, 400);
    assert.equal(rewards.headers.length, 0);
    // the granted project uses it
    assert.equal((await model(VICTIM, "env-ok", { apiKeyEnv: "GRADEBOX_SECRET_VICTIM_KEY" })).status, 201);
    await judgeOn(VICTIM, "env-ok-judge", "env-ok");
    assert.equal((await grade(VICTIM, "env-ok-judge")).status, 200);
    assert.equal(fake.requests.at(-1)?.headers.authorization, "Bearer sk-victim-env-value");
  });

  test("a secret goes only to the host it was bound to; setting it again moves it", async () => {
    await call(s.app, "PUT", `${ATTACKER}/secrets/rm-token`, { value: "tok-1" });
    const first = await call(s.app, "POST", `${ATTACKER}/graders/external-endpoint`, {
      key: "rm",
      url: rewards.url,
      headersSecret: { "X-Api-Key": "rm-token" },
    });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.equal((await call(s.app, "POST", `${ATTACKER}/graders/rm/grade`, { thread: qa })).status, 200);
    assert.equal(rewards.headers.at(-1)?.["x-api-key"], "tok-1");
    // the same secret for a model on another host name is refused, and nothing is sent there
    const elsewhere = await model(ATTACKER, "elsewhere", { apiKeySecret: "rm-token" }, fake.url.replace("127.0.0.1", "localhost"));
    assert.equal(elsewhere.status, 409);
    assert.equal(elsewhere.body.code, "SECRET_HOST_MISMATCH");
    assert.equal(elsewhere.body.boundHost, "127.0.0.1");
    assert.match(elsewhere.body.detail, /set it again/);
    // set again, the secret binds to the next host that uses it, and the old one no longer gets it
    await call(s.app, "PUT", `${ATTACKER}/secrets/rm-token`, { value: "tok-2" });
    const moved = await model(ATTACKER, "elsewhere", { apiKeySecret: "rm-token" }, fake.url.replace("127.0.0.1", "localhost"));
    assert.equal(moved.status, 201, JSON.stringify(moved.body));
    const before = rewards.headers.length;
    const refused = await call(s.app, "POST", `${ATTACKER}/graders/rm/grade`, { thread: qa });
    assert.equal(refused.status, 502);
    assert.equal(refused.body.code, "ENDPOINT_UNAVAILABLE");
    assert.match(refused.body.detail, /bound to host localhost, not 127\.0\.0\.1; it was not sent/);
    assert.equal(rewards.headers.length, before);
  });

  test("a server secret granted to every project is bound per project", async () => {
    for (const project of ["p1", "p2"]) {
      const r = await model(`/v1/projects/${project}`, "shared", { apiKeyEnv: "GRADEBOX_SECRET_SHARED" });
      assert.equal(r.status, 201, JSON.stringify(r.body));
    }
    const other = await model(
      "/v1/projects/p1",
      "shared-2",
      { apiKeyEnv: "GRADEBOX_SECRET_SHARED" },
      fake.url.replace("127.0.0.1", "localhost"),
    );
    assert.equal(other.body.code, "SECRET_HOST_MISMATCH");
    assert.match(other.body.detail, /ask the operator/);
  });
});

describe("bindings and grants over time", () => {
  test("a registration that fails binds nothing: a mistyped URL does not cost setting the secret again", async () => {
    await call(s.app, "PUT", `${ATTACKER}/secrets/typo`, { value: "tok-typo" });
    // nothing listens on port 9 of localhost
    const failed = await call(s.app, "POST", `${ATTACKER}/graders/external-endpoint`, {
      key: "typo",
      url: "http://localhost:9",
      headersSecret: { "X-Api-Key": "typo" },
      timeoutMs: 1000,
    });
    assert.equal(failed.status, 422, JSON.stringify(failed.body));
    assert.equal((await call(s.app, "GET", `${ATTACKER}/secrets/typo`)).body.host, null);
    const fixed = await call(s.app, "POST", `${ATTACKER}/graders/external-endpoint`, {
      key: "typo",
      url: rewards.url,
      headersSecret: { "X-Api-Key": "typo" },
    });
    assert.equal(fixed.status, 201, JSON.stringify(fixed.body));
    assert.equal((await call(s.app, "GET", `${ATTACKER}/secrets/typo`)).body.host, "127.0.0.1");
    // a model refused as a duplicate binds nothing either
    await call(s.app, "PUT", `${ATTACKER}/secrets/dup`, { value: "tok-dup" });
    assert.equal((await model(ATTACKER, "dup-model", {})).status, 201);
    const dup = await model(ATTACKER, "dup-model", { apiKeySecret: "dup" }, fake.url.replace("127.0.0.1", "localhost"));
    assert.equal(dup.body.code, "MODEL_EXISTS");
    assert.equal((await call(s.app, "GET", `${ATTACKER}/secrets/dup`)).body.host, null);
  });

  test("a server secret is usable only while the operator grants it, binding or not", async () => {
    process.env.GRADEBOX_SECRET_REVOKED = "sk-revoked";
    const project = "/v1/projects/granted";
    const env = { GRADEBOX_DB: s.config.dbPath, GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32", GRADEBOX_SECRETS_KEY: "cd".repeat(32) };
    const first = await startServer({ env: { ...env, GRADEBOX_SECRET_GRANTS: "GRADEBOX_SECRET_REVOKED=granted" } });
    try {
      const r = await call(first.app, "POST", `${project}/models`, {
        key: "m",
        baseURL: fake.url,
        model: "x",
        apiKeyEnv: "GRADEBOX_SECRET_REVOKED",
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      const j = await call(first.app, "POST", `${project}/graders/binary-judge`, { key: "j", criteria: "answers", judgeModel: "m" });
      assert.equal(j.status, 201);
      assert.equal((await call(first.app, "POST", `${project}/graders/j/grade`, { thread: qa })).status, 200);
      assert.equal(fake.requests.at(-1)?.headers.authorization, "Bearer sk-revoked");
    } finally {
      await first.close();
    }
    // the operator takes the grant back: the binding left in the registry grants nothing
    const second = await startServer({ env });
    try {
      const sent = fake.requests.length;
      const refused = await call(second.app, "POST", `${project}/graders/j/grade`, { thread: qa });
      assert.equal(refused.status, 502, JSON.stringify(refused.body));
      assert.equal(refused.body.code, "JUDGE_UNAVAILABLE");
      assert.match(refused.body.detail, /no server secret GRADEBOX_SECRET_REVOKED is available to project "granted"/);
      assert.equal(fake.requests.length, sent);
    } finally {
      await second.close();
    }
  });
});

describe("migration", { skip: testPostgres ? "reads a SQLite file" : false }, () => {
  test("registrations made before secrets belonged to projects keep working for the project that made them only", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gradebox-secrets-migration-"));
    const file = join(dir, "gradebox.db");
    // a registry at migration 8, with a model and an endpoint naming server variables
    const db = new Database(file);
    db.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
    for (const m of migrations("sqlite").filter((m) => m.version <= 8)) {
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(m.version, m.name, new Date().toISOString());
    }
    const now = new Date().toISOString();
    db.prepare(
      "INSERT INTO models (id, project, key, base_url, model, api_key_env, max_concurrency, timeout_ms, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
    ).run("m-old", "legacy", "old", fake.url, "judge-1", "GRADEBOX_SECRET_LEGACY", 2, 2000, now);
    db.close();
    process.env.GRADEBOX_SECRET_LEGACY = "sk-legacy";
    const old = await startServer({ env: { GRADEBOX_DB: file, GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32" } });
    try {
      const judge = await call(old.app, "POST", "/v1/projects/legacy/graders/binary-judge", {
        key: "j",
        criteria: "answers",
        judgeModel: "old",
      });
      assert.equal(judge.status, 201, JSON.stringify(judge.body));
      assert.equal((await call(old.app, "POST", "/v1/projects/legacy/graders/j/grade", { thread: qa })).status, 200);
      assert.equal(fake.requests.at(-1)?.headers.authorization, "Bearer sk-legacy");
      // no grant came with it for anyone else
      const other = await call(old.app, "POST", "/v1/projects/other/models", {
        key: "m",
        baseURL: fake.url,
        model: "x",
        apiKeyEnv: "GRADEBOX_SECRET_LEGACY",
      });
      assert.equal(other.status, 400);
    } finally {
      await old.close();
    }
  });
});

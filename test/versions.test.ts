// Grader versions through the SDK against the real server: update, list, get, restore, pin,
// locks, failed checks that change nothing, combined graders following or pinning a part, and
// a database made by the schema before versions existed, upgraded with nothing lost.

import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { ConflictError, Gradebox, NotFoundError, StringThread } from "../sdk/index.ts";
import { Store } from "../server/store.ts";
import { call, startServer, type TestServer, thread } from "./support/helpers.ts";

let s: TestServer;
let client: Gradebox;
before(async () => {
  s = await startServer({ listen: true });
  client = new Gradebox({ baseURL: s.url, project: "ver", apiKey: await s.keyFor("ver") });
});
after(() => s.close());

const answer = (n: number) => `async function grade(t) { return ${n} }`;
const one = new StringThread([["assistant", "x"]]);

describe("versions of a function grader", () => {
  test("an update stores version n+1 and grades with it at once; older versions stay readable and can be pinned", async () => {
    const created = await client.graders.create.function({ key: "evolving", source: answer(0.1), description: "first" });
    assert.equal(created.version, 1);
    assert.deepEqual(await client.graders.grade({ graderKey: "evolving", thread: one }).then((r) => [r.score, r.version]), [0.1, 1]);

    const updated = await client.graders.update({ graderKey: "evolving", source: answer(0.2) });
    assert.equal(updated.version, 2);
    assert.equal(updated.description, "first", "the description stays unless given");
    assert.equal(updated.source, answer(0.2));
    // the warm isolate of version 1 is not used for version 2
    assert.deepEqual(await client.graders.grade({ graderKey: "evolving", thread: one }).then((r) => [r.score, r.version]), [0.2, 2]);

    const versions = await client.graders.versions.list({ graderKey: "evolving" });
    assert.deepEqual(
      versions.map((v) => [v.version, v.description]),
      [
        [1, "first"],
        [2, "first"],
      ],
    );
    assert.notEqual(versions[0].sourceSha256, versions[1].sourceSha256);
    assert.equal((await client.graders.versions.get({ graderKey: "evolving", version: 1 })).source, answer(0.1));

    // pinned: grade and grade-batch with version 1 while 2 is current
    const pinned = await client.graders.grade({ graderKey: "evolving", thread: one, version: 1 });
    assert.deepEqual([pinned.score, pinned.version], [0.1, 1]);
    const batch = await client.graders.gradeBatch({ graderKey: "evolving", threads: [one, one], version: 1 });
    assert.deepEqual(batch.results, [
      { outcome: "scored", score: 0.1 },
      { outcome: "scored", score: 0.1 },
    ]);
    assert.equal(batch.version, 1);
  });

  test("restore makes a new version with an old source", async () => {
    const restored = await client.graders.versions.restore({ graderKey: "evolving", version: 1 });
    assert.equal(restored.version, 3);
    assert.equal(restored.source, answer(0.1));
    const versions = await client.graders.versions.list({ graderKey: "evolving" });
    assert.equal(versions[2].sourceSha256, versions[0].sourceSha256);
    assert.equal((await client.graders.grade({ graderKey: "evolving", thread: one })).score, 0.1);
  });

  test("an update that fails a check, or of a locked grader, changes nothing", async () => {
    const failed = await call(s.app, "PUT", "/v1/projects/ver/graders/evolving", { source: "async function grade(t) { return (" });
    assert.equal(failed.status, 422);
    assert.equal(failed.body.check, "syntax");
    await client.graders.lock({ graderKey: "evolving", locked: true });
    await assert.rejects(client.graders.update({ graderKey: "evolving", source: answer(0.9) }), (e: unknown) => {
      assert.ok(e instanceof ConflictError);
      assert.equal(e.code, "GRADER_LOCKED");
      return true;
    });
    await client.graders.lock({ graderKey: "evolving", locked: false });
    const got = await client.graders.get({ graderKey: "evolving" });
    assert.equal(got.version, 3);
    assert.equal(got.source, answer(0.1));
    assert.equal((await client.graders.versions.list({ graderKey: "evolving" })).length, 3);
  });

  test("an identical push stores nothing: 200 unchanged, still version N (also for a locked grader, a dry run and a restore of the current source)", async () => {
    await client.graders.create.function({ key: "same", source: answer(0.3), description: "d" });
    const again = await call(s.app, "PUT", "/v1/projects/ver/graders/same", { source: answer(0.3) });
    assert.equal(again.status, 200);
    assert.deepEqual([again.body.unchanged, again.body.version, again.body.report], [true, 1, { samples: 0, changed: [], scores: [] }]);
    const sdk = await client.graders.update({ graderKey: "same", source: answer(0.3), description: "d", samples: [] });
    assert.deepEqual([sdk.unchanged, sdk.version], [true, 1], "the same description and (no) samples are the same settings");
    await client.graders.lock({ graderKey: "same", locked: true });
    assert.deepEqual(
      await client.graders.update({ graderKey: "same", source: answer(0.3) }).then((r) => [r.unchanged, r.version]),
      [true, 1],
      "a locked grader answers an identical push: nothing would change",
    );
    await client.graders.lock({ graderKey: "same", locked: false });
    assert.deepEqual(
      await client.graders.update({ graderKey: "same", source: answer(0.3), dryRun: true }).then((r) => [r.unchanged, r.dryRun]),
      [true, true],
    );
    assert.deepEqual(await client.graders.versions.restore({ graderKey: "same", version: 1 }).then((r) => [r.unchanged, r.version]), [
      true,
      1,
    ]);
    assert.equal((await client.graders.versions.list({ graderKey: "same" })).length, 1, "two identical pushes: one version");
    // a setting the version records is a change, even with the same source
    const described = await client.graders.update({ graderKey: "same", source: answer(0.3), description: "other" });
    assert.deepEqual([described.unchanged, described.version], [undefined, 2]);
    const sampled = await client.graders.update({ graderKey: "same", source: answer(0.3), samples: [{ thread: one, expected: 0.3 }] });
    assert.deepEqual([sampled.unchanged, sampled.version], [undefined, 3]);
    const resampled = await client.graders.update({ graderKey: "same", source: answer(0.3), samples: [{ thread: one, expected: 0.3 }] });
    assert.deepEqual([resampled.unchanged, resampled.version], [true, 3]);
  });

  test("a version that does not exist is 404 VERSION_NOT_FOUND, for get, grade and restore", async () => {
    for (const attempt of [
      () => client.graders.versions.get({ graderKey: "evolving", version: 9 }),
      () => client.graders.grade({ graderKey: "evolving", thread: one, version: 9 }),
      () => client.graders.versions.restore({ graderKey: "evolving", version: 9 }),
    ]) {
      await assert.rejects(attempt(), (e: unknown) => e instanceof NotFoundError && e.code === "VERSION_NOT_FOUND");
    }
  });
});

describe("combined graders and versions", () => {
  test("a part by key follows its current version; a pinned part stays on its version", async () => {
    await client.graders.create.function({ key: "part", source: answer(1) });
    await client.graders.create.combined({
      key: "follows",
      mode: "weighted",
      graders: [{ graderKey: "part" }],
    });
    const pinned = await client.graders.create.combined({
      key: "pinned",
      mode: "weighted",
      graders: [{ graderKey: "part", version: 1 }],
    });
    assert.deepEqual(pinned.parts?.[0], { graderKey: "part", name: "part", weight: 1, version: 1, pinned: true });
    await client.graders.update({ graderKey: "part", source: answer(0) });
    assert.equal((await client.graders.grade({ graderKey: "follows", thread: one })).score, 0);
    assert.equal((await client.graders.grade({ graderKey: "pinned", thread: one })).score, 1);
    const bad = await call(s.app, "POST", "/v1/projects/ver/graders/combined", {
      key: "nowhere",
      mode: "any",
      graders: [{ graderKey: "part", version: 7 }],
    });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.code, "INVALID_COMPONENT");
  });
});

test("a database made before versions existed is upgraded: every grader becomes version 1, nothing lost", async () => {
  const dir = mkdtempSync(join(tmpdir(), "gradebox-upgrade-"));
  try {
    const path = join(dir, "old.db");
    // the schema as migrations 0001–0004 left it, with a grader stored by that schema
    const old = new Database(path);
    old.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT");
    const migrations = new URL("../migrations/", import.meta.url);
    for (const file of readdirSync(migrations)
      .filter((f) => /^000[1-4]_/.test(f))
      .sort()) {
      old.exec(readFileSync(new URL(file, migrations), "utf8"));
      old.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(Number(file.slice(0, 4)), file, "2026-01-01T00:00:00Z");
    }
    const v = await s.pool.validate("ver", answer(0.7));
    assert.ok(v.ok);
    old
      .prepare(
        `INSERT INTO graders (id, project, key, kind, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at)
         VALUES ('g-1', 'legacy', 'kept', 'function', 'from before', ?, ?, 'abc', 1, '[]', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')`,
      )
      .run(answer(0.7), v.compiled);
    old.close();

    const store = await Store.open({ db: path });
    try {
      const row = await store.mustGet("legacy", "kept");
      assert.equal(row.version, 1);
      assert.equal(row.locked, true);
      assert.deepEqual(
        (await store.versions("legacy", "kept")).map((x) => [x.version, x.description, x.sourceSha256]),
        [[1, "from before", "abc"]],
      );
      const first = await store.mustGetVersion("legacy", "kept", 1);
      assert.equal(first.source, answer(0.7));
      assert.equal(first.compiled, v.compiled);
      const [graded] = await s.pool.gradeBatch({ id: "upgraded@1", project: "legacy", compiled: row.compiled }, [thread("x")]);
      assert.deepEqual(graded, { score: 0.7 });
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe("sample threads", () => {
  const expects =
    "async function grade(t: StringThread): Promise<number> {\n  return t.completion() === t.metadata.expected.trim() ? 1 : 0;\n}";
  const sample = (completion: string, expected: string, score?: number) => ({
    thread: new StringThread([["assistant", completion]], { expected }),
    ...(score === undefined ? {} : { expected: score }),
  });

  test("with samples, test_run grades them instead of the built-in thread (whose metadata is {})", async () => {
    const bare = await call(s.app, "POST", "/v1/projects/ver/graders", { key: "no-samples", source: expects });
    assert.equal(bare.status, 422);
    assert.equal(bare.body.check, "test_run");
    const created = await client.graders.create.function({
      key: "with-samples",
      source: expects,
      samples: [sample("4", "4", 1), sample("5", "4", 0)],
    });
    assert.equal(created.version, 1);
  });

  test("a sample that scores other than its expected score fails test_run with its index, expected and actual", async () => {
    const res = await call(s.app, "POST", "/v1/projects/ver/graders", {
      key: "wrong-expectation",
      source: expects,
      samples: [{ thread: { turns: [{ role: "assistant", content: "4" }], metadata: { expected: "4" } }, expected: 0 }],
    });
    assert.equal(res.status, 422);
    assert.equal(res.body.check, "test_run");
    assert.deepEqual([res.body.index, res.body.expected, res.body.actual], [0, 0, 1]);
    assert.match(res.body.message, /sample 0 should score 0 but scored 1/);
    assert.equal(await s.store.get("ver", "wrong-expectation"), undefined, "nothing was stored");
  });

  test("an update reports each sample whose score changes; a dry run stores nothing; samples carry over", async () => {
    // three samples without expectations: their scores may change
    await client.graders.create.function({
      key: "lenient",
      source: expects,
      samples: [sample("4", "4"), sample(" 4 ", "4"), sample("5", "4")],
    });
    const trims =
      "async function grade(t: StringThread): Promise<number> {\n  return (t.completion() ?? '').trim() === t.metadata.expected.trim() ? 1 : 0;\n}";
    const dry = await client.graders.update({ graderKey: "lenient", source: trims, dryRun: true });
    assert.equal(dry.dryRun, true);
    assert.equal(dry.version, 1, "a dry run stores nothing");
    assert.deepEqual(dry.report, {
      samples: 3,
      changed: [{ index: 1, before: 0, after: 1 }],
      // every sample, for the console's before/after chart
      scores: [
        { index: 0, before: 1, after: 1 },
        { index: 1, before: 0, after: 1 },
        { index: 2, before: 0, after: 0 },
      ],
    });
    assert.equal((await client.graders.get({ graderKey: "lenient" })).version, 1);

    const real = await client.graders.update({ graderKey: "lenient", source: trims });
    assert.equal(real.version, 2);
    assert.deepEqual(real.report.changed, [{ index: 1, before: 0, after: 1 }]);
    // version 2 carries the samples: an update back reports the change the other way
    const back = await client.graders.update({ graderKey: "lenient", source: expects, dryRun: true });
    assert.deepEqual(back.report.changed, [{ index: 1, before: 1, after: 0 }]);
  });
});

// One store suite, two backends: the same operations against a SQLite file and a PostgreSQL
// database (a throwaway cluster), then what only a shared registry has to do: a change made
// through one store is heard by another within a second, and a warm grader costs no query.

import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { AppError } from "../server/errors.ts";
import { DEFAULT_QUOTAS } from "../server/store/quotas.ts";
import { versionBytes } from "../server/store/versions.ts";
import { type NewGrader, Store } from "../server/store.ts";
import { call, repoRoot, startServer, thread } from "./support/helpers.ts";
import { createDatabase, type Postgres, startPostgres } from "./support/pg.ts";

let postgres: Postgres;
const dir = mkdtempSync(join(tmpdir(), "gradebox-store-"));
before(async () => {
  postgres = await startPostgres();
});
after(async () => {
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const grader = (project: string, key: string, n = 1): NewGrader => ({
  project,
  key,
  description: `v${n}`,
  source: `async (t) => ${n}`,
  compiled: `compiled ${n}`,
  sourceSha256: `sha${n}`,
  warnings: [],
});

const code = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e) => (e instanceof AppError ? e.code : `not an AppError: ${e}`),
  );

test("both dialects have the same migrations, by number", () => {
  const numbers = (d: string) => readdirSync(join(repoRoot, d)).filter((f) => /^\d{4}_.+\.sql$/.test(f));
  assert.deepEqual(numbers("migrations/postgres"), numbers("migrations"));
  assert.ok(numbers("migrations").length >= 7);
});

for (const backend of ["sqlite", "postgres"] as const) {
  describe(`the store on ${backend}`, () => {
    let store: Store;
    let db: string;
    before(async () => {
      db = backend === "sqlite" ? join(dir, "store.db") : await createDatabase(postgres.url);
      store = await Store.open({ db });
    });
    after(() => store?.close());

    test("graders: insert, get, list by pages, a duplicate key refused", async () => {
      for (const key of ["b", "a", "c"]) await store.insert(grader("p", key));
      assert.equal(await code(store.insert(grader("p", "a"))), "GRADER_EXISTS");
      const a = await store.mustGet("p", "a");
      assert.deepEqual(
        [a.kind, a.version, a.locked, a.description, a.recentFaults, a.quarantinedAt],
        ["function", 1, false, "v1", 0, null],
      );
      assert.deepEqual(
        (await store.list("p", "", 2)).map((g) => g.key),
        ["a", "b"],
      );
      assert.deepEqual(
        (await store.list("p", "b", 2)).map((g) => g.key),
        ["c"],
      );
      assert.equal(await store.get("other", "a"), undefined);
    });

    test("versions: update stores the next, the old one stays readable; a stale expected version conflicts", async () => {
      const next = await store.update("p", "a", grader("p", "a", 2), 1);
      assert.equal(next.version, 2);
      assert.equal(next.compiled, "compiled 2");
      assert.equal((await store.mustGetVersion("p", "a", 1)).compiled, "compiled 1");
      assert.deepEqual(
        (await store.versions("p", "a")).map((v) => v.version),
        [1, 2],
      );
      assert.equal(await code(store.update("p", "a", grader("p", "a", 3), 1)), "GRADER_CONFLICT");
      assert.equal(await code(store.mustGetVersion("p", "a", 9)), "VERSION_NOT_FOUND");
    });

    test("languages: absent is typescript; each version records its own; a part carries its pinned or current version's", async () => {
      await store.insert({ ...grader("lang", "py"), language: "python" });
      await store.insert(grader("lang", "ts"));
      assert.equal((await store.mustGet("lang", "py")).language, "python");
      assert.equal((await store.mustGet("lang", "ts")).language, "typescript");
      const next = await store.update("lang", "py", { ...grader("lang", "py", 2), language: "typescript" }, 1);
      assert.deepEqual([next.version, next.language], [2, "typescript"]);
      assert.deepEqual(
        (await store.versions("lang", "py")).map((v) => [v.version, v.language]),
        [
          [1, "python"],
          [2, "typescript"],
        ],
      );
      assert.equal((await store.mustGetVersion("lang", "py", 1)).language, "python");
      const combined = await store.insertCombined({
        project: "lang",
        key: "mixed",
        description: "",
        mode: "weighted",
        parts: [
          { graderKey: "py", name: "pinned", weight: 1, version: 1 },
          { graderKey: "py", name: "current", weight: 1 },
        ],
      });
      assert.deepEqual(
        combined.parts?.map((p) => [p.name, p.version, p.language]),
        [
          ["pinned", 1, "python"],
          ["current", 2, "typescript"],
        ],
      );
      assert.equal(combined.language, undefined, "only a function grader has a language");
    });

    test("lock refuses delete and update; combined graders pin parts and keep them from deletion", async () => {
      await store.setLocked("p", "b", true);
      assert.equal(await code(store.delete("p", "b")), "GRADER_LOCKED");
      assert.equal(await code(store.update("p", "b", grader("p", "b", 2))), "GRADER_LOCKED");
      await store.setLocked("p", "b", false);
      const combined = await store.insertCombined({
        project: "p",
        key: "both",
        description: "",
        mode: "weighted",
        parts: [
          { graderKey: "a", name: "a", weight: 0.25, version: 1 },
          { graderKey: "c", name: "c", weight: 0.75 },
        ],
      });
      assert.deepEqual(
        combined.parts?.map((p) => [p.graderKey, p.version, p.pinned, p.weight, p.compiled]),
        [
          ["a", 1, true, 0.25, "compiled 1"],
          ["c", 1, false, 0.75, "compiled 1"],
        ],
      );
      assert.equal(await code(store.delete("p", "c")), "GRADER_IN_USE");
      assert.equal(
        await code(
          store.insertCombined({
            project: "p",
            key: "bad",
            description: "",
            mode: "any",
            parts: [{ graderKey: "zz", name: "z", weight: 1 }],
          }),
        ),
        "INVALID_COMPONENT",
      );
      assert.equal(await store.get("p", "bad"), undefined, "nothing half-written");
      const deleted = await store.delete("p", "both");
      assert.equal(deleted.ids.length, 1);
      assert.equal(await code(store.delete("p", "c")), "ok");
    });

    test("faults: the third in the window quarantines; release clears", async () => {
      const { id } = await store.mustGet("p", "b");
      assert.equal(await store.recordFault(id, "crash"), false);
      assert.equal(await store.recordFault(id, "crash"), false);
      assert.equal(await store.recordFault(id, "crash"), true);
      const q = await store.mustGet("p", "b");
      assert.ok(q.quarantinedAt);
      assert.equal(q.recentFaults, 3);
      const released = await store.release("p", "b");
      assert.deepEqual([released.quarantinedAt, released.recentFaults], [null, 0]);
    });

    test("models and judges: a model in use cannot be deleted", async () => {
      const model = await store.insertModel({
        project: "p",
        key: "m",
        baseURL: "https://x.example/v1",
        model: "x",
        maxConcurrency: 2,
        timeoutMs: 1000,
      });
      assert.equal(
        await code(
          store.insertModel({ project: "p", key: "m", baseURL: "https://x.example/v1", model: "x", maxConcurrency: 2, timeoutMs: 1000 }),
        ),
        "MODEL_EXISTS",
      );
      const spec = { type: "binary", model: "m", criteria: "ok" } as never;
      const judge = await store.insertJudge({ project: "p", key: "j", description: "", spec });
      assert.equal(judge.modelId, model.id);
      assert.deepEqual(judge.judge, spec);
      assert.equal(await code(store.deleteModel("p", "m")), "MODEL_IN_USE");
      await store.delete("p", "j");
      assert.equal(await store.deleteModel("p", "m"), model.id);
    });

    test("keys: verified by hash, listed without the key, revoked for good", async () => {
      const { key, info } = await store.keys.create("p", "ci");
      assert.equal(await store.keys.verify(key), "p");
      assert.equal(await store.keys.verify(`${key}x`), undefined);
      assert.ok((await store.keys.list("p")).some((k) => k.id === info.id && !JSON.stringify(k).includes(key)));
      await store.keys.revoke(info.id);
      assert.equal(await store.keys.verify(key), undefined);
      assert.equal(await code(store.keys.revoke(info.id)), "INVALID_REQUEST");
      assert.equal(await store.keys.isEmpty(), false);
    });

    test("quotas: writes at once never pass one; bytes are UTF-8 as written (as the migration measures); deletes free", async () => {
      const quotas = { ...DEFAULT_QUOTAS, graders: 3, bytes: 4000 };
      const small = await Store.open({ db, pgPool: 4, quotas });
      try {
        // eight creates at once (on PostgreSQL, several connections): only three fit
        const creates = await Promise.all(["a", "b", "c", "d", "e", "f", "g", "h"].map((k) => code(small.insert(grader("q", k)))));
        assert.deepEqual([creates.filter((c) => c === "ok").length, creates.filter((c) => c === "QUOTA_EXCEEDED").length], [3, 5]);
        assert.equal((await small.usage("q")).graders, 3);

        // "é" is two bytes: the count is bytes, not characters
        const big = (n: number): NewGrader => ({ ...grader("q", "a", n), source: "é".repeat(300) });
        const versionSize = versionBytes(big(2), "[]");
        assert.equal(versionSize, 600 + "compiled 2".length + 2 + 2 + 2);
        const before = (await small.usage("q")).bytes;
        const updates = await Promise.all([2, 3, 4, 5, 6, 7, 8, 9].map((n) => code(small.update("q", "a", big(n)))));
        const stored = updates.filter((c) => c === "ok").length;
        assert.equal(stored, Math.floor((4000 - before) / versionSize), updates.join());
        const after = (await small.usage("q")).bytes;
        assert.equal(after, before + stored * versionSize);
        assert.ok(after <= 4000);

        // the migration measures rows stored before it as the store does
        const sum = async () =>
          Number(
            (
              await small.db.get<{ n: number }>("SELECT sum(bytes) AS n FROM grader_versions WHERE grader_id = ?", [
                (await small.mustGet("q", "a")).id,
              ])
            )?.n,
          );
        const measured = await sum();
        await small.db.run("UPDATE grader_versions SET bytes = 0");
        const migration = readFileSync(
          join(repoRoot, backend === "sqlite" ? "migrations" : "migrations/postgres", "0013_quotas.sql"),
          "utf8",
        );
        const update = /UPDATE grader_versions[^;]+;/.exec(migration)?.[0] ?? "";
        await small.db.run(update);
        assert.equal(await sum(), measured);

        // a refused version is not stored; deleting one frees its bytes at once
        const last = (await small.mustGet("q", "a")).version;
        assert.equal(await code(small.deleteVersion("q", "a", last)), "VERSION_IN_USE");
        await small.deleteVersion("q", "a", 2);
        assert.equal((await small.usage("q")).bytes, after - versionSize);
        assert.equal(await code(small.update("q", "a", big(last + 1))), "ok");
        assert.equal((await small.mustGet("q", "a")).version, last + 1, "numbers are not reused");

        await small.delete("q", "a");
        assert.equal((await small.usage("q")).graders, 2);
        assert.equal(await code(small.insert(grader("q", "z"))), "ok");
      } finally {
        await small.close();
      }
    });

    test("a warm grader costs no query; a change through the store drops it", async () => {
      await store.insert(grader("warm", "g"));
      await store.cache.grader("warm", "g");
      const before = store.db.queries;
      for (let i = 0; i < 100; i++) await store.cache.grader("warm", "g");
      assert.equal(store.db.queries - before, 0);
      await store.update("warm", "g", grader("warm", "g", 2));
      assert.equal((await store.cache.grader("warm", "g")).version, 2);
    });
  });
}

test("the cache keeps at most its budget of script bytes, dropping the graders loaded first", async () => {
  const store = await Store.open({ db: join(dir, "budget.db"), cacheBytes: 100_000 });
  try {
    // each grader's source and compiled script: 2 × 10,000 characters, 40,000 bytes as UTF-16
    const big = (key: string): NewGrader => ({ ...grader("b", key), source: "s".repeat(10_000), compiled: "c".repeat(10_000) });
    const keys = ["k1", "k2", "k3", "k4"];
    for (const key of keys) await store.insert(big(key)); // each insert drops the project's entries: load after
    for (const key of keys) {
      await store.cache.grader("b", key);
      assert.ok(store.cache.scriptBytes <= 100_000, `${store.cache.scriptBytes} bytes kept`);
    }
    assert.equal(store.cache.scriptBytes, 80_000, "the last two");
    const queries = store.db.queries;
    await store.cache.grader("b", "k4");
    assert.equal(store.db.queries, queries, "the newest is kept");
    await store.cache.grader("b", "k1");
    assert.ok(store.db.queries > queries, "the oldest was dropped and is read again");
  } finally {
    await store.close();
  }
});

describe("a shared registry: two stores (two nodes) on one PostgreSQL database", () => {
  let a: Store;
  let b: Store;
  before(async () => {
    const url = await createDatabase(postgres.url);
    [a, b] = [await Store.open({ db: url }), await Store.open({ db: url })];
  });
  after(async () => {
    await a?.close();
    await b?.close();
  });

  /** ms until `check` holds, polling every 5 ms; fails past 1 s */
  async function within1s(check: () => Promise<boolean>): Promise<number> {
    const started = performance.now();
    while (!(await check())) {
      assert.ok(performance.now() - started < 1000, "not within 1 s");
      await new Promise((r) => setTimeout(r, 5));
    }
    return performance.now() - started;
  }

  test("B's warm cache drops a grader A deleted, locked or updated; and it is gone the moment A's delete returns", async () => {
    await a.insert(grader("s", "g"));
    assert.equal((await b.cache.grader("s", "g")).version, 1);
    const queries = b.db.queries;
    await b.cache.grader("s", "g");
    assert.equal(b.db.queries, queries, "warm on B: no query");

    await a.update("s", "g", grader("s", "g", 2));
    await within1s(async () => (await b.cache.grader("s", "g")).version === 2);
    await a.setLocked("s", "g", true);
    await within1s(async () => (await b.cache.grader("s", "g")).locked);
    await a.setLocked("s", "g", false);
    await within1s(async () => !(await b.cache.grader("s", "g")).locked);

    await b.cache.grader("s", "g");
    await a.delete("s", "g"); // returns once A heard its own notice, which B was sent at the same time
    assert.equal(await code(b.cache.grader("s", "g")), "GRADER_NOT_FOUND");
  });

  test("a quarantine recorded through A is seen by B", async () => {
    const { id } = await a.insert(grader("s", "crashy"));
    await b.cache.grader("s", "crashy");
    for (let i = 0; i < 3; i++) await a.recordFault(id, "crash");
    await within1s(async () => (await b.cache.grader("s", "crashy")).quarantinedAt !== null);
  });

  test("while B's listening connection is down B caches nothing and reads the registry every time; once back it caches again", async () => {
    await a.insert(grader("s", "cut"));
    await b.cache.grader("s", "cut"); // warm on B
    const listenerPid = (b.db as unknown as { listener?: { processID?: number } }).listener?.processID;
    assert.ok(listenerPid, "B listens on a connection of its own");
    await a.db.get("SELECT pg_terminate_backend(?) AS ok", [listenerPid]);
    await within1s(async () => !b.db.listening);
    const before = b.db.queries;
    await b.cache.grader("s", "cut");
    await b.cache.grader("s", "cut");
    assert.equal(b.db.queries - before, 2, "each read goes to the registry while changes could be missed");
    await a.update("s", "cut", grader("s", "cut", 2));
    assert.equal((await b.cache.grader("s", "cut")).version, 2, "and so sees the update at once");
    // it listens again (500 ms later) and caches again
    const started = performance.now();
    while (!b.db.listening) {
      assert.ok(performance.now() - started < 5000, "B listens again within 5 s");
      await new Promise((r) => setTimeout(r, 20));
    }
    await b.cache.grader("s", "cut");
    const warm = b.db.queries;
    await b.cache.grader("s", "cut");
    assert.equal(b.db.queries, warm, "cached again");
  });

  test("a key revoked through A stops working on B at once", async () => {
    const { key, info } = await a.keys.create("s");
    assert.equal(await b.cache.verifyKey(key), "s");
    const queries = b.db.queries;
    assert.equal(await b.cache.verifyKey(key), "s");
    assert.equal(b.db.queries, queries, "a known key: no query");
    await a.keys.revoke(info.id);
    assert.equal(await b.cache.verifyKey(key), undefined);
  });
});

test("postgres: writes that wait to be heard do not hold their connection meanwhile (a pool of one, five at once)", {
  timeout: 20_000,
}, async () => {
  const url = await createDatabase(postgres.url);
  const [small, other] = [await Store.open({ db: url, pgPool: 1 }), await Store.open({ db: url })];
  try {
    // each write publishes and then waits until the other node heard it; holding the pool's only
    // connection while asking the pool for another, the first of them never returned
    await Promise.all(Array.from({ length: 5 }, (_, i) => small.insert(grader("p", `g${i}`))));
    await Promise.all(Array.from({ length: 5 }, (_, i) => small.setLocked("p", `g${i}`, true)));
    assert.equal((await other.cache.grader("p", "g4")).locked, true);
  } finally {
    await small.close();
    await other.close();
  }
});

describe("through the API: what a warm grade costs the registry", () => {
  for (const backend of ["postgres", "sqlite"] as const) {
    test(`${backend}: no statement per warm grade${backend === "sqlite" ? " (PRAGMA data_version notices another process's writes: no table read)" : ""}`, async () => {
      const s = await startServer({
        env: { GRADEBOX_DB: backend === "postgres" ? await createDatabase(postgres.url) : join(dir, "hot.db") },
      });
      try {
        assert.equal((await call(s.app, "POST", "/v1/projects/hot/graders", { key: "g", source: "async (t) => 1" })).status, 201);
        const grade = () => call(s.app, "POST", "/v1/projects/hot/graders/g/grade", { thread: thread("x") });
        assert.equal((await grade()).status, 200); // warm: the grader and the key are known now
        const before = s.store.db.queries;
        for (let i = 0; i < 50; i++) assert.equal((await grade()).status, 200);
        assert.equal(s.store.db.queries - before, 0);
      } finally {
        await s.close();
      }
    });
  }
});

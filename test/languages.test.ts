// A function grader's language through the HTTP API and the SDK, against the real server: absent is
// typescript on a create and a validate and the current version's on an update; every grader and
// version shows its own; a bad one is a 400 naming the choices; the OpenAPI document has the
// enum. A Python grader is put in the store directly here (checking Python needs the runtime,
// test/python-graders.test.ts): the sandbox's calls are recorded to show that each one names the
// language of the code it is given, and that the TypeScript-only nesting bound is not applied to
// Python.

import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { VALIDATION_ID } from "../sandbox/host/tasks.ts";
import type { GraderCode, GraderLanguage } from "../sandbox/protocol/requests.ts";
import type { Language } from "../sandbox/validate/checks.ts";
import { MAX_NESTING } from "../sandbox/validate/source-bounds.ts";
import { Gradebox, languageOfFile } from "../sdk/index.ts";
import type { OpenAPIDocument } from "../server/openapi.ts";
import { Store } from "../server/store.ts";
import { call, startServer, type TestServer, testPostgres, thread } from "./support/helpers.ts";

const P = "/v1/projects/lang/graders";
const TS = "async function grade(t) { return 1 }";
const PY = "async def grade(thread):\n    return 1.0\n";

let s: TestServer;
/** what the sandbox was asked to run, in order: the language each call named */
const seen: Array<{ op: "grade" | "validate"; id?: string; language: GraderLanguage | undefined }> = [];
before(async () => {
  s = await startServer({ listen: true });
  const { pool } = s;
  const gradeBatch = pool.gradeBatch.bind(pool);
  const validate = pool.validate.bind(pool);
  // recorded, then passed on to the real pool unchanged
  pool.gradeBatch = (code: GraderCode, threads) => {
    // the pool's own grading of a source under validation is the sandbox's business, not the server's
    if (!code.id.startsWith(VALIDATION_ID)) seen.push({ op: "grade", id: code.id, language: code.language });
    return gradeBatch(code, threads);
  };
  pool.validate = (project, source, threads, options) => {
    seen.push({ op: "validate", language: (options as { language?: Language } | undefined)?.language });
    return validate(project, source, threads, options);
  };
});
after(() => s.close());

/** A Python grader as the store keeps one once its checks passed: the source is its own `compiled`. */
async function storePython(key: string, source = PY) {
  return s.store.insert({
    project: "lang",
    key,
    description: "",
    source,
    language: "python",
    compiled: source,
    sourceSha256: key,
    warnings: [],
  });
}

describe("HTTP", () => {
  test("absent is typescript: create, get, list, versions and a version show it", async () => {
    const created = await call(s.app, "POST", P, { key: "plain", source: TS });
    assert.equal(created.status, 201);
    assert.equal(created.body.language, "typescript");
    const explicit = await call(s.app, "POST", P, { key: "explicit", source: TS, language: "typescript" });
    assert.equal(explicit.body.language, "typescript");
    assert.equal((await call(s.app, "GET", `${P}/plain`)).body.language, "typescript");
    const listed = (await call(s.app, "GET", P)).body.data as Array<{ key: string; language?: string }>;
    assert.deepEqual(
      listed.filter((g) => ["plain", "explicit"].includes(g.key)).map((g) => g.language),
      ["typescript", "typescript"],
    );
    assert.deepEqual((await call(s.app, "GET", `${P}/plain/versions`)).body.data[0].language, "typescript");
    assert.equal((await call(s.app, "GET", `${P}/plain/versions/1`)).body.language, "typescript");
    const validated = await call(s.app, "POST", `${P}/validate`, { source: TS, threads: [thread("x")] });
    assert.deepEqual([validated.status, validated.body.results], [200, [{ outcome: "scored", score: 1 }]]);
  });

  test("a language that is not one of typescript, python: 400 INVALID_REQUEST naming the choices, on create, update and validate", async () => {
    for (const [method, url, body] of [
      ["POST", P, { key: "ruby", source: TS, language: "ruby" }],
      ["PUT", `${P}/plain`, { source: TS, language: "Python" }],
      ["POST", `${P}/validate`, { source: TS, language: 3 }],
    ] as const) {
      const res = await call(s.app, method, url, body);
      assert.equal(res.status, 400, `${method} ${url}`);
      assert.equal(res.body.code, "INVALID_REQUEST");
      assert.match(res.body.detail, /language must be one of typescript, python/);
    }
    assert.equal(await s.store.get("lang", "ruby"), undefined);
    assert.equal((await call(s.app, "GET", `${P}/plain`)).body.version, 1, "nothing stored");
  });

  test("only function graders have a language: a combined grader shows none", async () => {
    const res = await call(s.app, "POST", `${P}/combined`, { key: "combo", mode: "weighted", graders: [{ graderKey: "plain" }] });
    assert.equal(res.status, 201);
    assert.equal("language" in res.body, false);
    const listed = (await call(s.app, "GET", P)).body.data as Array<{ key: string }>;
    assert.equal("language" in (listed.find((g) => g.key === "combo") ?? {}), false);
  });

  test("a Python grader shows python; a new version may change the language, and each version keeps its own", async () => {
    await storePython("mixed");
    assert.equal((await call(s.app, "GET", `${P}/mixed`)).body.language, "python");
    // to TypeScript: checked as TypeScript (the body says so), stored as version 2
    const updated = await call(s.app, "PUT", `${P}/mixed`, { source: TS, language: "typescript" });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual([updated.body.version, updated.body.language], [2, "typescript"]);
    assert.deepEqual(
      (await call(s.app, "GET", `${P}/mixed/versions`)).body.data.map((v: { version: number; language: string }) => [
        v.version,
        v.language,
      ]),
      [
        [1, "python"],
        [2, "typescript"],
      ],
    );
    const first = await call(s.app, "GET", `${P}/mixed/versions/1`);
    assert.deepEqual([first.body.language, first.body.source], ["python", PY]);
    // an update without a language keeps the current version's
    const again = await call(s.app, "PUT", `${P}/mixed`, { source: "async function grade(t) { return 0.5 }" });
    assert.deepEqual([again.status, again.body.version, again.body.language], [200, 3, "typescript"]);
    const graded = await call(s.app, "POST", `${P}/mixed/grade`, { thread: thread("x") });
    assert.deepEqual([graded.body.score, graded.body.version], [0.5, 3]);
  });
});

describe("what the sandbox is told", () => {
  test("each call names the language of its code: validate, grade, a pinned version, a combined grader's parts", async () => {
    await storePython("told");
    await call(s.app, "PUT", `${P}/told`, { source: TS, language: "typescript" });
    await call(s.app, "POST", `${P}/combined`, {
      key: "told-both",
      mode: "weighted",
      graders: [
        { graderKey: "told", version: 1, name: "py" },
        { graderKey: "told", name: "ts" },
      ],
    });
    const row = await s.store.mustGet("lang", "told");
    seen.length = 0;
    await call(s.app, "POST", `${P}/validate`, { source: PY, language: "python" });
    await call(s.app, "POST", `${P}/validate`, { source: TS });
    await call(s.app, "POST", `${P}/told/grade`, { thread: thread("x") });
    await call(s.app, "POST", `${P}/told/grade-batch`, { threads: [thread("x")], version: 1 });
    await call(s.app, "POST", `${P}/told-both/grade-batch`, { threads: [thread("x")] });
    const byId = (id: string) => seen.filter((c) => c.id === id).map((c) => c.language);
    assert.deepEqual(
      seen.filter((c) => c.op === "validate").map((c) => c.language),
      ["python", "typescript"],
    );
    assert.deepEqual(byId(`${row.id}@2`), ["typescript", "typescript"], "the current version: alone and as a part");
    assert.deepEqual(byId(`${row.id}@1`), ["python", "python"], "version 1, pinned: alone and as a part");
  });

  test("an update's samples report grades the samples with the current version in its own language", async () => {
    await storePython("reported");
    const sample = { thread: thread("x"), expected: 1 };
    seen.length = 0;
    const res = await call(s.app, "PUT", `${P}/reported`, { source: TS, language: "typescript", samples: [sample], dryRun: true });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const row = await s.store.mustGet("lang", "reported");
    assert.deepEqual(
      seen.map((c) => [c.op, c.language]),
      [
        ["validate", "typescript"],
        ["grade", "python"],
      ],
    );
    assert.equal(seen[1].id, `${row.id}@1`);
  });

  test("the nesting bound is TypeScript's: a deeply bracketed Python source goes to the sandbox; the size bound holds for both", async () => {
    const deep = `async def grade(thread):\n    return ${"(".repeat(MAX_NESTING + 1)}1${")".repeat(MAX_NESTING + 1)}\n`;
    seen.length = 0;
    const ts = await call(s.app, "POST", `${P}/validate`, { source: deep });
    assert.equal(ts.status, 422);
    assert.match(ts.body.detail, /nest/);
    assert.equal(seen.length, 0, "refused before the sandbox");
    await call(s.app, "POST", `${P}/validate`, { source: deep, language: "python" });
    assert.deepEqual(
      seen.map((c) => c.language),
      ["python"],
    );
    const big = `async def grade(thread):\n    return 1.0\n${"#".repeat(65_536)}\n`;
    for (const language of ["python", "typescript"]) {
      const res = await call(s.app, "POST", `${P}/validate`, { source: big, language });
      assert.deepEqual([res.status, res.body.code], [413, "SOURCE_TOO_LARGE"]);
    }
  });
});

test("the SDK: a .py file is python, a .ts file and fn typescript, source the server's default; `language` wins; fn cannot be Python", async () => {
  const client = new Gradebox({ baseURL: s.url, project: "lang", apiKey: await s.keyFor("lang") });
  const dir = mkdtempSync(join(tmpdir(), "gradebox-sdk-lang-"));
  try {
    const py = join(dir, "grade.py");
    const ts = join(dir, "grade.ts");
    writeFileSync(py, PY);
    writeFileSync(ts, TS);
    seen.length = 0;
    // a Python source's verdict needs the runtime: what matters here is the language the sandbox was told
    const settled = (p: Promise<unknown>) => p.catch((error: unknown) => error);
    await settled(client.graders.validate({ file: py }));
    await settled(client.graders.validate({ file: ts }));
    await settled(client.graders.validate({ fn: async () => 1 }));
    await settled(client.graders.validate({ source: TS }));
    await settled(client.graders.validate({ file: ts, language: "python" }));
    assert.deepEqual(
      seen.map((c) => c.language),
      ["python", "typescript", "typescript", "typescript", "python"],
    );
    await assert.rejects(client.graders.validate({ fn: async () => 1, language: "python" }), /fn is a JavaScript function, not python/);
    const created = await client.graders.create.function({ key: "from-file", file: ts });
    assert.equal(created.language, "typescript");
    const updated = await client.graders.update({ graderKey: "from-file", source: "async function grade(t) { return 0 }" });
    assert.deepEqual([updated.version, updated.language], [2, "typescript"]);
    assert.deepEqual(["a.py", "b.PY", "c.ts", "d.mjs", "e.txt", "py"].map(languageOfFile), [
      "python",
      "python",
      "typescript",
      "typescript",
      undefined,
      undefined,
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the OpenAPI document names the Language enum, used by the create, update and validate bodies and by Grader and GraderVersion", async () => {
  const doc = (await s.app.inject({ url: "/openapi.json" })).json() as OpenAPIDocument;
  const schemas = doc.components.schemas as Record<string, { enum?: string[]; properties?: Record<string, Record<string, unknown>> }>;
  const language = schemas.Language ?? schemas.LanguageInput;
  assert.deepEqual(language?.enum, ["typescript", "python"]);
  const refOf = (schema: Record<string, unknown> | undefined) =>
    JSON.stringify(schema ?? {}).match(/#\/components\/schemas\/(Language\w*)/)?.[1];
  for (const name of ["Grader", "GraderDetail", "GraderVersion", "GraderVersionDetail"]) {
    assert.equal(refOf(schemas[name]?.properties?.language), "Language", name);
  }
  const body = (path: string, method: "post" | "put") => {
    const op = (doc.paths[path] as Record<string, { requestBody: { content: Record<string, { schema: Record<string, unknown> }> } }>)[
      method
    ];
    return op.requestBody.content["application/json"].schema as {
      properties: Record<string, Record<string, unknown>>;
      required?: string[];
    };
  };
  for (const [path, method] of [
    ["/v1/projects/{project}/graders", "post"],
    ["/v1/projects/{project}/graders/validate", "post"],
    ["/v1/projects/{project}/graders/{graderKey}", "put"],
  ] as const) {
    const schema = body(path, method);
    assert.match(refOf(schema.properties.language) ?? "", /^Language/, `${method} ${path}`);
    assert.equal(schema.required?.includes("language") ?? false, false, "optional");
  }
});

test("a database made before languages existed is upgraded: every function grader and version is typescript", async () => {
  if (testPostgres) return; // the migration is read from a SQLite file here; store.test.ts runs both dialects' schema
  const dir = mkdtempSync(join(tmpdir(), "gradebox-languages-"));
  try {
    const path = join(dir, "old.db");
    const old = new Database(path);
    old.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT");
    const migrations = new URL("../migrations/", import.meta.url);
    for (const file of readdirSync(migrations)
      .filter((f) => /^\d{4}_.+\.sql$/.test(f) && Number(f.slice(0, 4)) < 10)
      .sort()) {
      old.exec(readFileSync(new URL(file, migrations), "utf8"));
      old.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(Number(file.slice(0, 4)), file, "2026-01-01T00:00:00Z");
    }
    const at = "2026-01-01T00:00:00Z";
    old
      .prepare(
        `INSERT INTO graders (id, project, key, kind, description, source, compiled, source_sha256, locked, warnings, created_at, updated_at, version)
         VALUES ('g-1', 'legacy', 'kept', 'function', '', ?, 'compiled', 'abc', 0, '[]', ?, ?, 2)`,
      )
      .run(TS, at, at);
    const version = old.prepare(
      `INSERT INTO grader_versions (grader_id, version, description, source, compiled, source_sha256, warnings, samples, created_at)
       VALUES ('g-1', ?, '', ?, 'compiled', 'abc', '[]', '[]', ?)`,
    );
    version.run(1, TS, at);
    version.run(2, TS, at);
    old.close();
    const store = await Store.open({ db: path });
    try {
      assert.equal((await store.mustGet("legacy", "kept")).language, "typescript");
      assert.deepEqual(
        (await store.versions("legacy", "kept")).map((v) => v.language),
        ["typescript", "typescript"],
      );
    } finally {
      await store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

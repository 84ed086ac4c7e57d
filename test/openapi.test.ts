// The OpenAPI document is generated from the routes' zod schemas; a client generated from it by
// standard third-party tools (openapi-typescript + openapi-fetch) type-checks and works, and its
// errors are typed: each route's problem documents, with the codes that route can answer.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { ERRORS, type ErrorCode } from "../server/errors.ts";
import { repoRoot, startServer, type TestServer } from "./helpers.ts";

interface Schema {
  description?: string;
  properties?: Record<string, Schema>;
  enum?: unknown[];
}
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Array<{ name: string; description?: string }>;
  requestBody?: { description?: string; content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>;
}

let s: TestServer;
let spec: { openapi: string; tags?: Array<{ name: string }>; paths: Record<string, Record<string, Operation>> };
let operations: Map<string, Operation & { path: string }>;
const work = join(repoRoot, ".openapi-test");
before(async () => {
  s = await startServer({ listen: true });
  spec = JSON.parse((await s.app.inject({ method: "GET", url: "/docs/json" })).body);
  operations = new Map(
    Object.entries(spec.paths).flatMap(([path, ops]) =>
      Object.values(ops).map((op) => [op.operationId as string, { ...op, path }] as const),
    ),
  );
  mkdirSync(work, { recursive: true });
});
after(async () => {
  rmSync(work, { recursive: true, force: true });
  await s.close();
});

const OPERATIONS = [
  "me",
  "limits",
  "graders.create.function",
  "graders.create.combined",
  "graders.validate",
  "graders.list",
  "graders.get",
  "graders.lock",
  "graders.release",
  "graders.delete",
  "graders.grade",
  "graders.gradeBatch",
  "graders.update",
  "graders.versions.list",
  "graders.versions.get",
  "graders.versions.restore",
  "graders.create.binaryJudge",
  "graders.create.prebuiltJudge",
  "graders.create.rubricJudge",
  "graders.prompt",
  "models.create",
  "models.list",
  "models.get",
  "models.delete",
  "graders.create.externalEndpoint",
  "secrets.set",
  "secrets.list",
  "secrets.get",
  "secrets.delete",
  "reward.score",
  "reward.batchScore",
  "reward.info",
  "reward.metadataSchema",
];
const TAGS = ["graders", "versions", "judges", "models", "endpoints", "secrets", "reward", "account", "health"];

const codesOf = (response: Operation["responses"][string]) =>
  (response.content?.["application/problem+json"]?.schema.properties?.code?.enum ?? []) as ErrorCode[];
/** The codes an operation declares, whatever their status. */
const declaredCodes = (op: Operation) => Object.values(op.responses).flatMap(codesOf);

test("every route is in the OpenAPI 3.1 document with a summary, a description, tags and described responses", () => {
  assert.equal(spec.openapi, "3.1.0");
  assert.deepEqual(
    spec.tags?.map((t) => t.name),
    TAGS,
  );
  assert.deepEqual(
    [...operations.keys()].filter((id) => !["health", "ready"].includes(id)).sort(),
    [...OPERATIONS].sort(),
    "the operations are the ones listed here",
  );
  for (const [id, op] of operations) {
    assert.ok(op.summary && op.summary.length <= 60, `${id} has a short summary`);
    assert.ok(op.description && op.description.length >= 40, `${id} has a description`);
    assert.ok(op.tags?.length && op.tags.every((t) => TAGS.includes(t)), `${id} is tagged`);
    for (const p of op.parameters ?? []) assert.ok(p.description, `${id}: parameter ${p.name} is described`);
    for (const [status, response] of Object.entries(op.responses)) {
      assert.ok(response.description && response.description !== "Default Response", `${id} ${status} is described`);
      for (const [type, media] of Object.entries(response.content ?? {}))
        assert.ok(media.schema.description, `${id} ${status} ${type} schema`);
    }
    if (op.requestBody) {
      const body = op.requestBody.content["application/json"].schema;
      assert.ok(op.requestBody.description && body.description, `${id}: its body is described`);
      for (const [name, field] of Object.entries(body.properties ?? {}))
        assert.ok(field.description, `${id}: body field ${name} is described`);
    }
  }
});

test("each route declares the error statuses of its own codes, as application/problem+json", () => {
  for (const id of OPERATIONS) {
    const op = operations.get(id);
    assert.ok(op, id);
    const errors = Object.entries(op.responses).filter(([status]) => Number(status) >= 400);
    for (const [status, response] of errors) {
      assert.deepEqual(Object.keys(response.content ?? {}), ["application/problem+json"], `${id} ${status}: problem+json only`);
      const codes = codesOf(response);
      // a status no code of the route answers with is not declared
      assert.ok(codes.length > 0, `${id} ${status} has codes`);
      for (const code of codes) {
        assert.equal(ERRORS[code]?.status, Number(status), `${id}: ${code} is a ${status}`);
        assert.ok(response.description.includes(code), `${id} ${status}: its description names ${code}`);
      }
    }
    const codes = declaredCodes(op);
    // every /v1 route authenticates; a path in a project may be another project's; a body may be malformed
    for (const code of ["UNAUTHORIZED", "INTERNAL"] as const) assert.ok(codes.includes(code), `${id} declares ${code}`);
    if (op.path.includes("{project}")) assert.ok(codes.includes("PROJECT_NOT_FOUND") && codes.includes("INVALID_REQUEST"), id);
    if (op.requestBody) {
      for (const code of ["INVALID_JSON", "INVALID_ENCODING", "BODY_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE"] as const) {
        assert.ok(codes.includes(code), `${id} declares ${code}`);
      }
    }
  }
  // no more than a route can answer: reading never conflicts nor fails a check, grading a batch never fails as a whole
  const get = operations.get("graders.get") as Operation;
  assert.deepEqual(Object.keys(get.responses).sort(), ["200", "400", "401", "404", "500"]);
  assert.deepEqual(codesOf(get.responses["404"]).sort(), ["GRADER_NOT_FOUND", "PROJECT_NOT_FOUND"]);
  assert.equal(operations.get("me")?.responses["404"], undefined);
  assert.equal(operations.get("graders.gradeBatch")?.responses["422"], undefined);
  assert.ok(declaredCodes(operations.get("graders.grade") as Operation).includes("JUDGE_UNAVAILABLE"));
});

test("/docs serves the interactive documentation", async () => {
  const res = await s.app.inject({ method: "GET", url: "/docs/" });
  assert.equal(res.statusCode, 200);
  assert.match(res.body, /swagger-ui/i);
});

/** Type-checks the files of `work` in one program; the diagnostics of each file, formatted. */
function typeCheck(files: string[]): Map<string, string[]> {
  const program = ts.createProgram(
    files.map((f) => join(work, f)),
    {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noEmit: true,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      types: ["node"],
    },
  );
  const byFile = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const file = d.file ? d.file.fileName.slice(work.length + 1) : "(global)";
    const list = byFile.get(file) ?? [];
    list.push(`TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`);
    byFile.set(file, list);
  }
  return byFile;
}

const HEADER = `import createClient from "openapi-fetch";
import type { paths } from "./schema.d.ts";

const client = createClient<paths>({ baseUrl: process.env.URL, headers: { authorization: \`Bearer \${process.env.KEY}\` } });
const gen = { path: { project: "generated", graderKey: "gen" } };
`;

/** Snippets that must not type-check, each with the error it must fail with (a generated client's errors are not `any`). */
const MISTAKES: Record<string, { code: string; pattern: RegExp }> = {
  "a field no problem document has": {
    code: `const missing = await client.GET("/v1/projects/{project}/graders/{graderKey}", { params: gen });
export const x = missing.error?.nonexistent;`,
    pattern: /TS2339: Property 'nonexistent' does not exist/,
  },
  "a code the route never answers": {
    code: `const missing = await client.GET("/v1/projects/{project}/graders/{graderKey}", { params: gen });
export const x = missing.error?.code === "GRADER_EXISTS";`,
    pattern: /TS2367: .*"GRADER_EXISTS"/,
  },
  "a member only other codes' documents have": {
    code: `const me = await client.GET("/v1/me");
export const x = me.error?.check;`,
    pattern: /TS2339: Property 'check' does not exist/,
  },
  "another status for a code": {
    code: `const missing = await client.GET("/v1/projects/{project}/graders/{graderKey}", { params: gen });
if (missing.error?.code === "GRADER_NOT_FOUND") { const status: 400 = missing.error.status; console.log(status); }`,
    pattern: /TS2322: Type '404' is not assignable to type '400'/,
  },
};

test("a client generated by openapi-typescript + openapi-fetch type-checks, runs create → list → grade → delete, and its errors are typed", async () => {
  writeFileSync(join(work, "schema.d.ts"), astToString(await openapiTS(spec as never)));
  writeFileSync(
    join(work, "client.ts"),
    `${HEADER}
const params = { path: { project: "generated" } };
const created = await client.POST("/v1/projects/{project}/graders", { params, body: { key: "gen", source: "async (t) => t.getTurns().length / 10" } });
if (created.response.status !== 201 || created.data?.key !== "gen") throw new Error("create: " + JSON.stringify(created.error));
const listed = await client.GET("/v1/projects/{project}/graders", { params: { ...params, query: { limit: 10 } } });
const keys: string[] = (listed.data?.data ?? []).map((g) => g.key);
const graded = await client.POST("/v1/projects/{project}/graders/{graderKey}/grade", {
  params: gen,
  body: { thread: { turns: [{ role: "user", content: "q" }, { role: "assistant", content: "a" }] } },
});
const score: number | undefined = graded.data?.score;
const deleted = await client.DELETE("/v1/projects/{project}/graders/{graderKey}", { params: gen });
const missing = await client.GET("/v1/projects/{project}/graders/{graderKey}", { params: gen });
// the error is one of the route's problem documents: its code one of the route's, a code narrowing it to its status
let notFound: { code: "GRADER_NOT_FOUND"; status: 404; detail: string; requestId: string } | undefined;
if (missing.error) {
  const code: "UNAUTHORIZED" | "INTERNAL" | "PROJECT_NOT_FOUND" | "INVALID_REQUEST" | "GRADER_NOT_FOUND" = missing.error.code;
  if (missing.error.code === "GRADER_NOT_FOUND") {
    const { status, detail, requestId } = missing.error;
    notFound = { code: missing.error.code, status, detail, requestId };
  }
}
// a failed check's document has its check and position
const refused = await client.POST("/v1/projects/{project}/graders", { params, body: { key: "bad", source: "async (t) => {" } });
let check: "syntax" | "structure" | "signature" | "execution" | "test_run" | "template" | "endpoint" | undefined;
let line: number | undefined;
if (refused.error?.code === "VALIDATION_FAILED") ({ check, line } = refused.error);
console.log(JSON.stringify({ keys, score, deleted: deleted.response.status, missing: notFound?.code, status: notFound?.status, check, line: typeof line }));
`,
  );
  const mistakes = Object.values(MISTAKES).map((m, i) => {
    writeFileSync(join(work, `mistake-${i}.ts`), `${HEADER}${m.code}\n`);
    return `mistake-${i}.ts`;
  });
  const diagnostics = typeCheck(["client.ts", ...mistakes]);
  assert.deepEqual(diagnostics.get("client.ts"), [], "the client type-checks");
  assert.equal(diagnostics.get("(global)"), undefined);
  for (const [i, [what, { pattern }]] of Object.entries(MISTAKES).entries()) {
    const found = diagnostics.get(`mistake-${i}.ts`) ?? [];
    assert.equal(found.length, 1, `${what}: ${found.join("; ") || "type-checks, and must not"}`);
    assert.match(found[0], pattern, what);
  }
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", join(work, "client.ts")], {
    cwd: repoRoot,
    env: { ...process.env, URL: s.url, KEY: await s.keyFor("generated") },
  });
  assert.deepEqual(JSON.parse(stdout), {
    keys: ["gen"],
    score: 0.2,
    deleted: 204,
    missing: "GRADER_NOT_FOUND",
    status: 404,
    check: "syntax",
    line: "number",
  });
});

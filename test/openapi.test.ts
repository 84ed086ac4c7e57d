// The OpenAPI document is generated from the routes' zod schemas; a client generated from it by
// standard third-party tools (openapi-typescript + openapi-fetch) type-checks and works, and its
// errors are typed: each route's problem documents, with the codes that route can answer. Its
// wire types are named (components.schemas), and every operation has examples that fit them.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { Ajv2020 } from "ajv/dist/2020.js";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { ERRORS, type ErrorCode } from "../server/errors.ts";
import { EXAMPLES } from "../server/examples.ts";
import type { OpenAPIDocument } from "../server/openapi.ts";
import { repoRoot, startServer, type TestServer } from "./support/helpers.ts";

interface Schema {
  $ref?: string;
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
let spec: {
  openapi: string;
  tags?: Array<{ name: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};
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
  "usage",
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
  "graders.versions.delete",
  "graders.create.binaryJudge",
  "graders.create.prebuiltJudge",
  "graders.create.rubricJudge",
  "graders.prompt",
  "models.create",
  "models.list",
  "models.get",
  "models.delete",
  "graders.create.externalEndpoint",
  "graders.create.code",
  "secrets.set",
  "secrets.list",
  "secrets.get",
  "secrets.delete",
  "keys.create",
  "keys.list",
  "keys.revoke",
  "tokens.create",
  "tokens.list",
  "tokens.revoke",
  "reward.score",
  "reward.batchScore",
  "reward.info",
  "reward.metadataSchema",
  "reward.websocket",
];
const TAGS = ["graders", "versions", "judges", "models", "endpoints", "code", "secrets", "keys", "reward", "account", "health"];

/** A named schema's own (components.schemas); any other as it is. */
const resolve = (schema: Schema): Schema =>
  schema.$ref ? spec.components.schemas[schema.$ref.replace("#/components/schemas/", "")] : schema;

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
        assert.ok(resolve(media.schema).description, `${id} ${status} ${type} schema`);
    }
    if (op.requestBody) {
      const body = resolve(op.requestBody.content["application/json"].schema);
      assert.ok(op.requestBody.description && body.description, `${id}: its body is described`);
      for (const [name, field] of Object.entries(body.properties ?? {}))
        assert.ok(resolve(field).description, `${id}: body field ${name} is described`);
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

// ---- named schemas (server/openapi.ts) and examples (server/examples.ts) ----

const COMPONENT = "#/components/schemas/";
type Json = Record<string, unknown>;
let doc: OpenAPIDocument;
const refs = (value: unknown): string[] =>
  Array.isArray(value)
    ? value.flatMap(refs)
    : value !== null && typeof value === "object"
      ? Object.entries(value).flatMap(([k, v]) => (k === "$ref" && typeof v === "string" ? [v] : refs(v)))
      : [];
const allOperations = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, ...op })));

describe("named schemas and examples", () => {
  before(() => {
    doc = spec as unknown as OpenAPIDocument;
  });

  test("names the wire types, each reached from an operation, and every $ref resolves", () => {
    const names = Object.keys(doc.components.schemas);
    for (const name of [
      "Grader",
      "GraderDetail",
      "GradeResult",
      "ScoredResult",
      "AbstainedResult",
      "Provenance",
      "BatchSummary",
      "GradeError",
      "CombineMode",
      "Limits",
      "Model",
    ])
      assert.ok(names.includes(name), `${name} is named`);
    for (const name of [
      "Secret",
      "UpdateResult",
      "GraderVersion",
      "JudgeSpec",
      "RubricOption",
      "EndpointSpec",
      "ThreadInput",
      "SampleInput",
    ])
      assert.ok(names.includes(name), `${name} is named`);
    assert.deepEqual(names, [...names].sort(), "by name");
    for (const ref of refs(doc)) {
      assert.ok(ref.startsWith(COMPONENT) && names.includes(ref.slice(COMPONENT.length)), `${ref} resolves`);
    }
    const reached = new Set(refs(doc.paths).map((r) => r.slice(COMPONENT.length)));
    for (let grew = true; grew; ) {
      const before = reached.size;
      for (const name of [...reached]) for (const r of refs(doc.components.schemas[name])) reached.add(r.slice(COMPONENT.length));
      grew = reached.size > before;
    }
    assert.deepEqual(
      names.filter((n) => !reached.has(n)),
      [],
      "no component is unused",
    );
  });

  test("a named schema a request uses has no default: a generated client would make that field required", () => {
    // openapi-typescript (by default) takes a default in a named schema to mean "always present";
    // a request body is inline, where it does not (test/openapi.test.ts creates without a description)
    const inRequests = new Set<string>();
    const pending = allOperations().flatMap((op) => refs(op.requestBody ?? {}).map((r) => r.slice(COMPONENT.length)));
    while (pending.length) {
      const name = pending.pop() as string;
      if (inRequests.has(name)) continue;
      inRequests.add(name);
      pending.push(...refs(doc.components.schemas[name]).map((r) => r.slice(COMPONENT.length)));
    }
    assert.ok(inRequests.has("ThreadInput"));
    const defaults = (v: unknown, at: string): string[] =>
      Array.isArray(v)
        ? v.flatMap((x, i) => defaults(x, `${at}/${i}`))
        : v !== null && typeof v === "object"
          ? Object.entries(v).flatMap(([k, x]) => (k === "default" ? [at] : defaults(x, `${at}/${k}`)))
          : [];
    assert.deepEqual(
      [...inRequests].flatMap((name) => defaults(doc.components.schemas[name], name)),
      [],
    );
  });

  test("every operation has an example of its request body and of each success response, and each fits its schema", () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    const check = (where: string, media: { schema: Json; example?: unknown } | undefined) => {
      assert.ok(media && "example" in media, `${where} has an example`);
      const validate = ajv.compile({ ...media.schema, components: doc.components });
      assert.ok(validate(media.example), `${where}: ${ajv.errorsText(validate.errors)}`);
    };
    const ids: string[] = [];
    for (const op of allOperations()) {
      const id = op.operationId as string;
      ids.push(id);
      if (op.requestBody) check(`${id} request`, op.requestBody.content["application/json"]);
      for (const [status, response] of Object.entries(op.responses)) {
        const media = response.content?.["application/json"];
        if (Number(status) < 400 && media) check(`${id} ${status}`, media);
      }
    }
    assert.deepEqual(Object.keys(EXAMPLES).sort(), ids.sort(), "an example for each operation, and for no other");
  });

  test("the examples are what the server answers: limits, creating, validating and grading a function grader", async () => {
    const headers = { authorization: `Bearer ${await s.keyFor("acme")}`, "content-type": "application/json" };
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${s.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Json };
    };
    const example = (id: string) => EXAMPLES[id] as { request?: unknown; responses: Record<number, Json> };
    const graders = "/v1/projects/acme/graders";
    assert.deepEqual(await call("GET", "/v1/limits"), { status: 200, body: example("limits").responses[200] });
    const created = await call("POST", graders, example("graders.create.function").request);
    const times = { createdAt: created.body.createdAt, updatedAt: created.body.updatedAt };
    assert.deepEqual(created, { status: 201, body: { ...example("graders.create.function").responses[201], ...times } });
    assert.deepEqual(await call("POST", `${graders}/validate`, example("graders.validate").request), {
      status: 200,
      body: example("graders.validate").responses[200],
    });
    const graded = await call("POST", `${graders}/exact-answer/grade`, example("graders.grade").request);
    assert.deepEqual(graded, { status: 200, body: { ...example("graders.grade").responses[200], durationMs: graded.body.durationMs } });
  });

  test("two servers in one process document their own limits", async () => {
    const mine = await startServer();
    const other = await startServer({ env: { GRADEBOX_MAX_TURNS: "7" } });
    try {
      // the first server's document is built after the second registered its schemas
      const first = (await mine.app.inject({ url: "/openapi.json" })).json() as OpenAPIDocument;
      const second = (await other.app.inject({ url: "/openapi.json" })).json() as OpenAPIDocument;
      const maxTurns = (d: OpenAPIDocument) => ((d.components.schemas.ThreadInput.properties as Json).turns as Json).maxItems;
      assert.equal(maxTurns(first), 1000);
      assert.equal(maxTurns(second), 7);
      const grade = (d: OpenAPIDocument) => d.paths["/v1/projects/{project}/graders/{graderKey}/grade"].post.requestBody;
      assert.deepEqual(grade(first), grade(second), "the same names");
      for (const d of [first, second]) {
        for (const ref of refs(d)) assert.ok(d.components.schemas[ref.slice(COMPONENT.length)], `${ref} resolves`);
      }
    } finally {
      await Promise.all([mine.close(), other.close()]);
    }
  });
});

// The error responses the OpenAPI document declares are the ones the routes answer: each error
// the test can cheaply provoke is served as application/problem+json, with a status and a code
// that the document declares for that operation, and a body that the declared schema accepts.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import type { InjectOptions } from "fastify";
import type { ErrorCode } from "../server/errors.ts";
import { graderIdOf } from "../server/store.ts";
import { FakeOpenAI } from "./support/fake-openai.ts";
import { startServer, type TestServer } from "./support/helpers.ts";

interface Operation {
  operationId: string;
  path: string;
  method: string;
  requestBody?: unknown;
  responses: Record<string, { content?: Record<string, { schema: { properties?: { code?: { enum?: string[] } } } }> }>;
}

const P = "errs";
const BODY_LIMIT = 200_000;
let s: TestServer;
let fake: FakeOpenAI;
let operations: Map<string, Operation>;
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
const validators = new Map<string, ValidateFunction>();

const auth = async (project = P) => ({ authorization: `Bearer ${await s.keyFor(project)}` });
const qa = (metadata: Record<string, unknown> = {}) => ({
  turns: [
    { role: "user", content: "q" },
    { role: "assistant", content: "a" },
  ],
  metadata,
});
const FAILING = "async (t) => { if (t.metadata.bad) throw new Error('asked to fail'); return 1 }";

async function post(url: string, payload: unknown) {
  const res = await s.app.inject({ method: "POST", url, headers: await auth(), payload: payload as object });
  assert.ok(res.statusCode < 300, `${url}: ${res.body}`);
  return res.json();
}

before(async () => {
  fake = await new FakeOpenAI().start();
  s = await startServer({
    env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32", GRADEBOX_MAX_BATCH: "2", GRADEBOX_BODY_LIMIT: String(BODY_LIMIT) },
  });
  const doc = JSON.parse((await s.app.inject({ method: "GET", url: "/docs/json" })).body) as {
    paths: Record<string, Record<string, Omit<Operation, "path" | "method">>>;
  };
  operations = new Map(
    Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => [op.operationId, { ...op, path, method: method.toUpperCase() }] as const),
    ),
  );
  const graders = `/v1/projects/${P}/graders`;
  for (const key of ["plain", "locked", "quarantined", "part"]) await post(graders, { key, source: FAILING });
  // a version 2, so that restoring version 1 of the locked grader would change it (an identical push or restore is answered "unchanged")
  await s.app.inject({ method: "PUT", url: `${graders}/locked`, headers: await auth(), payload: { source: `${FAILING} ` } });
  await s.app.inject({ method: "PUT", url: `${graders}/locked/lock`, headers: await auth(), payload: { locked: true } });
  await post(`${graders}/combined`, { key: "combo", mode: "weighted", graders: [{ graderKey: "part" }] });
  const quarantined = await s.store.get(P, "quarantined");
  assert.ok(quarantined);
  for (let i = 0; i < 3; i++) await s.store.recordFault(graderIdOf(quarantined.id), "test");
  await post(`/v1/projects/${P}/models`, { key: "m", baseURL: fake.url, model: "x" });
  await post(`${graders}/binary-judge`, { key: "judge", judgeModel: "m", criteria: "be right" });
  fake.on(() => true, { status: 400 }); // every judge call fails, and is not retried
});
after(async () => {
  await s?.close();
  await fake?.close();
});

interface Case {
  op: string;
  what: string;
  status: number;
  code: ErrorCode;
  /** path parameters besides the defaults (project P, grader "plain", model "m", version 1) */
  params?: Record<string, string>;
  query?: string;
  body?: unknown;
  /** a body sent as is, with its content type */
  raw?: { payload: string | Buffer; type: string };
  /** the Authorization header: the project's key (default), none, or another project's key */
  as?: "none" | "other";
}

const CASES: Case[] = [
  { op: "me", what: "no API key", status: 401, code: "UNAUTHORIZED", as: "none" },
  { op: "graders.list", what: "another project's path", status: 404, code: "PROJECT_NOT_FOUND", as: "other" },
  { op: "graders.list", what: "a limit out of range", status: 400, code: "INVALID_REQUEST", query: "limit=0" },
  { op: "graders.get", what: "an unknown grader", status: 404, code: "GRADER_NOT_FOUND", params: { graderKey: "nope" } },
  {
    op: "graders.create.function",
    what: "malformed JSON",
    status: 400,
    code: "INVALID_JSON",
    raw: { payload: "{", type: "application/json" },
  },
  {
    op: "graders.create.function",
    what: "a body that is not UTF-8",
    status: 400,
    code: "INVALID_ENCODING",
    raw: { payload: Buffer.from([0x7b, 0xff, 0x7d]), type: "application/json" },
  },
  {
    op: "graders.create.function",
    what: "not JSON",
    status: 415,
    code: "UNSUPPORTED_MEDIA_TYPE",
    raw: { payload: "x", type: "text/plain" },
  },
  {
    op: "graders.create.function",
    what: "a body over the limit",
    status: 413,
    code: "BODY_TOO_LARGE",
    body: { key: "big", source: "x".repeat(BODY_LIMIT) },
  },
  {
    op: "graders.create.function",
    what: "a source over 64 KiB",
    status: 413,
    code: "SOURCE_TOO_LARGE",
    body: { key: "big", source: `async () => 1 //${"x".repeat(70_000)}` },
  },
  {
    op: "graders.create.function",
    what: "a syntax error",
    status: 422,
    code: "VALIDATION_FAILED",
    body: { key: "bad", source: "async (t) => {" },
  },
  { op: "graders.create.function", what: "a taken key", status: 409, code: "GRADER_EXISTS", body: { key: "plain", source: FAILING } },
  {
    op: "graders.validate",
    what: "threads over the batch limit",
    status: 413,
    code: "BATCH_TOO_LARGE",
    body: { source: FAILING, threads: [qa(), qa(), qa()] },
  },
  { op: "graders.lock", what: "a body failing its schema", status: 400, code: "INVALID_REQUEST", body: { locked: "yes" } },
  { op: "graders.grade", what: "a grader that throws", status: 422, code: "GRADER_ERROR", body: { thread: qa({ bad: true }) } },
  { op: "graders.grade", what: "an unknown version", status: 404, code: "VERSION_NOT_FOUND", body: { thread: qa(), version: 99 } },
  {
    op: "graders.grade",
    what: "a quarantined grader",
    status: 423,
    code: "GRADER_QUARANTINED",
    params: { graderKey: "quarantined" },
    body: { thread: qa() },
  },
  {
    op: "graders.grade",
    what: "a judge whose model fails",
    status: 502,
    code: "JUDGE_UNAVAILABLE",
    params: { graderKey: "judge" },
    body: { thread: qa() },
  },
  {
    op: "graders.gradeBatch",
    what: "threads over the batch limit",
    status: 413,
    code: "BATCH_TOO_LARGE",
    body: { threads: [qa(), qa(), qa()] },
  },
  {
    op: "graders.update",
    what: "a locked grader",
    status: 409,
    code: "GRADER_LOCKED",
    params: { graderKey: "locked" },
    body: { source: `${FAILING} // changed` },
  },
  {
    op: "graders.update",
    what: "a judge grader",
    status: 400,
    code: "INVALID_REQUEST",
    params: { graderKey: "judge" },
    body: { source: FAILING },
  },
  { op: "graders.delete", what: "a part of a combined grader", status: 409, code: "GRADER_IN_USE", params: { graderKey: "part" } },
  {
    op: "graders.create.combined",
    what: "a missing part",
    status: 422,
    code: "INVALID_COMPONENT",
    body: { key: "c2", mode: "any", graders: [{ graderKey: "nope" }] },
  },
  { op: "graders.versions.get", what: "an unknown version", status: 404, code: "VERSION_NOT_FOUND", params: { version: "99" } },
  { op: "graders.versions.restore", what: "a locked grader", status: 409, code: "GRADER_LOCKED", params: { graderKey: "locked" } },
  {
    op: "graders.create.binaryJudge",
    what: "an unknown model",
    status: 404,
    code: "MODEL_NOT_FOUND",
    body: { key: "j2", judgeModel: "nope", criteria: "be right" },
  },
  {
    op: "graders.create.binaryJudge",
    what: "a template that does not compile",
    status: 422,
    code: "VALIDATION_FAILED",
    body: { key: "j2", judgeModel: "m", criteria: "be right", template: "{{#if}}" },
  },
  { op: "graders.prompt", what: "a function grader", status: 400, code: "INVALID_REQUEST", body: { thread: qa() } },
  {
    op: "models.create",
    what: "a private address",
    status: 422,
    code: "EGRESS_DENIED",
    body: { key: "m2", baseURL: "http://10.0.0.1/v1", model: "x" },
  },
  {
    op: "models.create",
    what: "a taken key",
    status: 409,
    code: "MODEL_EXISTS",
    body: { key: "m", baseURL: "http://127.0.0.1:9/v1", model: "x" },
  },
  { op: "models.get", what: "an unknown model", status: 404, code: "MODEL_NOT_FOUND", params: { modelKey: "nope" } },
  { op: "models.delete", what: "a model a judge uses", status: 409, code: "MODEL_IN_USE" },
  {
    op: "graders.create.externalEndpoint",
    what: "a server that does not speak the protocol",
    status: 422,
    code: "VALIDATION_FAILED",
    body: { key: "e1", url: "http://127.0.0.1:9" },
  },
  {
    op: "graders.create.externalEndpoint",
    what: "a private address",
    status: 422,
    code: "EGRESS_DENIED",
    body: { key: "e1", url: "http://10.0.0.1" },
  },
  { op: "reward.info", what: "an unknown grader", status: 404, code: "GRADER_NOT_FOUND", params: { graderKey: "nope" } },
  { op: "reward.score", what: "a field the protocol does not have", status: 400, code: "INVALID_REQUEST", body: { ...qa(), extra: 1 } },
  { op: "reward.score", what: "a grader that throws", status: 422, code: "GRADER_ERROR", body: qa({ bad: true }) },
  {
    op: "reward.batchScore",
    what: "a request that fails",
    status: 422,
    code: "GRADER_ERROR",
    body: { requests: [qa(), qa({ bad: true })] },
  },
];

function urlOf(op: Operation, params: Record<string, string> = {}, query?: string): string {
  const values: Record<string, string> = { project: P, graderKey: "plain", modelKey: "m", version: "1", ...params };
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name]));
  return query ? `${path}?${query}` : path;
}

/** Asserts the response is a problem document the operation declares, for its status and code. */
function assertDeclared(op: Operation, res: { statusCode: number; headers: Record<string, unknown>; body: string }, what: string) {
  assert.match(String(res.headers["content-type"]), /^application\/problem\+json\b/, `${what}: served as problem+json`);
  const body = JSON.parse(res.body) as { code: string; status: number };
  const declared = op.responses[String(res.statusCode)];
  assert.ok(declared, `${what}: ${op.operationId} declares ${res.statusCode} (${body.code})`);
  const media = declared.content?.["application/problem+json"];
  assert.ok(media, `${what}: ${op.operationId} ${res.statusCode} is declared as application/problem+json`);
  assert.ok(media.schema.properties?.code?.enum?.includes(body.code), `${what}: ${op.operationId} ${res.statusCode} declares ${body.code}`);
  const key = `${op.operationId} ${res.statusCode}`;
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile(media.schema);
    validators.set(key, validate);
  }
  assert.ok(validate(body), `${what}: the body fits the declared schema: ${ajv.errorsText(validate.errors)}\n${res.body}`);
  return body;
}

test("each error a route is made to answer is declared for it, with its code, and its body fits the declared schema", async () => {
  for (const c of CASES) {
    const op = operations.get(c.op);
    assert.ok(op, c.op);
    const headers: Record<string, string> = c.as === "none" ? {} : c.as === "other" ? await auth("someone-else") : await auth();
    const request: InjectOptions = { method: op.method as InjectOptions["method"], url: urlOf(op, c.params, c.query), headers };
    if (c.raw) Object.assign(request, { payload: c.raw.payload, headers: { ...headers, "content-type": c.raw.type } });
    else if (c.body !== undefined) request.payload = c.body as object;
    const res = await s.app.inject(request);
    const what = `${c.op}, ${c.what}`;
    assert.equal(res.statusCode, c.status, `${what}: ${res.body}`);
    const body = assertDeclared(op, res, what);
    assert.equal(body.code, c.code, what);
  }
  // the table is not a token one: it reaches every family of error
  assert.deepEqual([...new Set(CASES.map((c) => c.status))].sort(), [400, 401, 404, 409, 413, 415, 422, 423, 502]);
});

test("every /v1 operation answers a missing API key and another project's path as it declares", async () => {
  const v1 = [...operations.values()].filter((op) => op.path.startsWith("/v1/"));
  assert.ok(v1.length >= 29);
  for (const op of v1) {
    const method = op.method as InjectOptions["method"];
    const missing = await s.app.inject({ method, url: urlOf(op) });
    assert.equal(missing.statusCode, 401, op.operationId);
    assert.equal(assertDeclared(op, missing, `${op.operationId} without a key`).code, "UNAUTHORIZED");
    if (!op.path.includes("{project}")) continue;
    const other = await s.app.inject({ method, url: urlOf(op), headers: await auth("someone-else") });
    assert.equal(other.statusCode, 404, op.operationId);
    assert.equal(assertDeclared(op, other, `${op.operationId} in another project`).code, "PROJECT_NOT_FOUND");
  }
});

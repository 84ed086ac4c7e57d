// Malformed requests, table-driven: each gets a 4xx problem+json with a stable code and a
// message a person can act on; nothing is persisted; the server keeps serving.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startServer, type TestServer } from "./support/helpers.ts";

let s: TestServer;
let key: string;
before(async () => {
  s = await startServer({
    env: { GRADEBOX_MAX_BATCH: "10", GRADEBOX_MAX_TURNS: "20", GRADEBOX_MAX_CONTENT: "1000", GRADEBOX_BODY_LIMIT: "200000" },
  });
  key = await s.keyFor("bad");
  const res = await s.app.inject({
    method: "POST",
    url: "/v1/projects/bad/graders",
    headers: { authorization: `Bearer ${key}` },
    payload: { key: "ok", source: "async (t) => 1" },
  });
  assert.equal(res.statusCode, 201);
});
after(() => s.close());

const P = "/v1/projects/bad/graders";
const turn = { role: "user", content: "hi" };
const good = { turns: [turn] };
type Case = [name: string, method: string, url: string, body: unknown, status: number, code: string, contentType?: string];
const json = (v: unknown) => JSON.stringify(v);
const create = (body: unknown, status = 400, code = "INVALID_REQUEST"): [string, string, unknown, number, string] => [
  "POST",
  P,
  body,
  status,
  code,
];
const grade = (body: unknown, status = 400, code = "INVALID_REQUEST"): [string, string, unknown, number, string] => [
  "POST",
  `${P}/ok/grade`,
  body,
  status,
  code,
];
const batch = (body: unknown, status = 400, code = "INVALID_REQUEST"): [string, string, unknown, number, string] => [
  "POST",
  `${P}/ok/grade-batch`,
  body,
  status,
  code,
];

const cases: Case[] = [
  // the body itself
  ["broken JSON", "POST", P, '{"key": "a", "source": ', 400, "INVALID_JSON"],
  ["trailing comma", "POST", P, '{"key": "a",}', 400, "INVALID_JSON"],
  ["empty body", "POST", P, "", 400, "INVALID_JSON"],
  ["whitespace body", "POST", P, "   ", 400, "INVALID_JSON"],
  ["null body", "POST", P, "null", 400, "INVALID_REQUEST"],
  ["array body", "POST", P, "[]", 400, "INVALID_REQUEST"],
  ["string body", "POST", P, '"grade"', 400, "INVALID_REQUEST"],
  ["number body", "POST", P, "42", 400, "INVALID_REQUEST"],
  ["__proto__ key", "POST", P, '{"key": "p", "source": "async (t) => 1", "__proto__": {"admin": true}}', 400, "INVALID_JSON"],
  ["constructor.prototype key", "POST", P, '{"key": "p", "source": "x", "constructor": {"prototype": {"a": 1}}}', 400, "INVALID_JSON"],
  ["\\u-escaped __proto__ key", "POST", P, '{"key": "p", "source": "x", "\\u005f_proto__": {"admin": true}}', 400, "INVALID_JSON"],
  [
    "\\u-escaped constructor key",
    "POST",
    P,
    '{"key": "p", "source": "x", "constr\\u0075ctor": {"prototype": {"a": 1}}}',
    400,
    "INVALID_JSON",
  ],
  [
    "not UTF-8",
    "POST",
    P,
    Buffer.concat([Buffer.from('{"key": "u", "source": "async (t) => 1 // '), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
    400,
    "INVALID_ENCODING",
  ],
  [
    "overlong UTF-8",
    "POST",
    P,
    Buffer.concat([Buffer.from('{"key": "u", "source": "'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]),
    400,
    "INVALID_ENCODING",
  ],
  ["body over the limit", "POST", P, json({ key: "big", source: "x".repeat(250_000) }), 413, "BODY_TOO_LARGE"],
  // content types
  ["text/plain", "POST", P, json({ key: "a", source: "async (t) => 1" }), 415, "UNSUPPORTED_MEDIA_TYPE", "text/plain"],
  ["form encoded", "POST", P, "key=a&source=x", 415, "UNSUPPORTED_MEDIA_TYPE", "application/x-www-form-urlencoded"],
  ["multipart", "POST", P, "--b\r\n\r\nx\r\n--b--", 415, "UNSUPPORTED_MEDIA_TYPE", "multipart/form-data; boundary=b"],
  ["xml", "POST", P, "<grader/>", 415, "UNSUPPORTED_MEDIA_TYPE", "application/xml"],
  // create: fields
  ["missing key", ...create({ source: "async (t) => 1" })],
  ["missing source", ...create({ key: "a" })],
  ["key is a number", ...create({ key: 5, source: "async (t) => 1" })],
  ["empty key", ...create({ key: "", source: "async (t) => 1" })],
  ["upper-case key", ...create({ key: "Bad", source: "async (t) => 1" })],
  ["key with a space", ...create({ key: "a b", source: "async (t) => 1" })],
  ["key of 129 characters", ...create({ key: "a".repeat(129), source: "async (t) => 1" })],
  ["Unicode key", ...create({ key: "ключ", source: "async (t) => 1" })],
  ["emoji key", ...create({ key: "grader-🎯", source: "async (t) => 1" })],
  ["key with a slash", ...create({ key: "a/b", source: "async (t) => 1" })],
  ["key with NUL", ...create({ key: "a\u0000b", source: "async (t) => 1" })],
  ["key starting with a dash", ...create({ key: "-a", source: "async (t) => 1" })],
  ["source is a number", ...create({ key: "a", source: 1 })],
  ["source is null", ...create({ key: "a", source: null })],
  ["source is an array", ...create({ key: "a", source: ["async (t) => 1"] })],
  ["source with a NUL byte", ...create({ key: "a", source: "async (t) => 1 // \u0000" })],
  ["source of 64 KiB + 1", ...create({ key: "a", source: `async (t) => 1;//${"x".repeat(65_537 - 16)}` }, 413, "SOURCE_TOO_LARGE")],
  ["description is a number", ...create({ key: "a", source: "async (t) => 1", description: 5 })],
  ["description of 2001 characters", ...create({ key: "a", source: "async (t) => 1", description: "d".repeat(2001) })],
  // threads
  ["grade without a thread", ...grade({})],
  ["thread is a string", ...grade({ thread: "hello" })],
  ["thread without turns", ...grade({ thread: { metadata: {} } })],
  ["turns is an object", ...grade({ thread: { turns: { role: "user" } } })],
  ["empty turns", ...grade({ thread: { turns: [] } })],
  ["unknown role", ...grade({ thread: { turns: [{ role: "", content: "x" }] } })],
  ["role with a control character", ...grade({ thread: { turns: [{ role: "us\ner", content: "x" }] } })],
  ["missing role", ...grade({ thread: { turns: [{ content: "x" }] } })],
  ["missing content", ...grade({ thread: { turns: [{ role: "user" }] } })],
  ["content is a number", ...grade({ thread: { turns: [{ role: "user", content: 1 }] } })],
  ["content is null", ...grade({ thread: { turns: [{ role: "user", content: null }] } })],
  ["turn as a tuple", ...grade({ thread: { turns: [["user", "x"]] } })],
  ["metadata is an array", ...grade({ thread: { turns: [turn], metadata: [1] } })],
  ["metadata is a string", ...grade({ thread: { turns: [turn], metadata: "m" } })],
  ["21 turns (limit 20)", ...grade({ thread: { turns: Array(21).fill(turn) } })],
  ["content of 1001 characters (limit 1000)", ...grade({ thread: { turns: [{ role: "user", content: "c".repeat(1001) }] } })],
  // batches
  ["batch without threads", ...batch({})],
  ["threads is an object", ...batch({ threads: good })],
  ["empty batch", ...batch({ threads: [] })],
  ["batch of 11 (limit 10)", ...batch({ threads: Array(11).fill(good) }, 413, "BATCH_TOO_LARGE")],
  ["one bad thread in a batch", ...batch({ threads: [good, { turns: [{ role: "", content: "y" }] }, good] })],
  // lock
  ["lock without locked", "PUT", `${P}/ok/lock`, {}, 400, "INVALID_REQUEST"],
  ["locked is a string", "PUT", `${P}/ok/lock`, { locked: "true" }, 400, "INVALID_REQUEST"],
  ["locked is a number", "PUT", `${P}/ok/lock`, { locked: 1 }, 400, "INVALID_REQUEST"],
  // path and query
  ["grader key in upper case", "GET", `${P}/OK`, undefined, 400, "INVALID_REQUEST"],
  ["Unicode grader key in the path", "GET", `${P}/${encodeURIComponent("ключ")}`, undefined, 400, "INVALID_REQUEST"],
  ["grader key of 129 characters in the path", "GET", `${P}/${"k".repeat(129)}`, undefined, 400, "INVALID_REQUEST"],
  ["grader key of 1000 characters in the path", "GET", `${P}/${"k".repeat(1000)}`, undefined, 400, "INVALID_REQUEST"],
  ["bad percent-encoding in the path", "GET", `${P}/%E0%A4%A`, undefined, 400, "INVALID_REQUEST"],
  ["limit 0", "GET", `${P}?limit=0`, undefined, 400, "INVALID_REQUEST"],
  ["limit 1000", "GET", `${P}?limit=1000`, undefined, 400, "INVALID_REQUEST"],
  ["limit not a number", "GET", `${P}?limit=many`, undefined, 400, "INVALID_REQUEST"],
  ["another project's path", "GET", "/v1/projects/other/graders", undefined, 404, "PROJECT_NOT_FOUND"],
  ["Unicode project", "GET", `/v1/projects/${encodeURIComponent("проект")}/graders`, undefined, 404, "PROJECT_NOT_FOUND"],
  // combined and validate
  ["unknown combine mode", "POST", `${P}/combined`, { key: "c", mode: "sum", graders: [{ graderKey: "ok" }] }, 400, "INVALID_REQUEST"],
  ["combined without parts", "POST", `${P}/combined`, { key: "c", mode: "any", graders: [] }, 400, "INVALID_REQUEST"],
  [
    "part weight is a string",
    "POST",
    `${P}/combined`,
    { key: "c", mode: "any", graders: [{ graderKey: "ok", weight: "2" }] },
    400,
    "INVALID_REQUEST",
  ],
  [
    "part that does not exist",
    "POST",
    `${P}/combined`,
    { key: "c", mode: "any", graders: [{ graderKey: "ghost" }] },
    422,
    "INVALID_COMPONENT",
  ],
  ["validate without source", "POST", `${P}/validate`, { threads: [good] }, 400, "INVALID_REQUEST"],
  ["validate with threads not an array", "POST", `${P}/validate`, { source: "async (t) => 1", threads: good }, 400, "INVALID_REQUEST"],
  // routes
  ["unknown route", "GET", "/v1/graders", undefined, 404, "NOT_FOUND"],
  ["unknown method", "PATCH", `${P}/ok`, { locked: true }, 404, "NOT_FOUND"],
];

const graderCount = async () => (await s.store.db.get<{ n: number }>("SELECT CAST(count(*) AS INTEGER) AS n FROM graders"))?.n;

test(`at least 60 malformed requests (${cases.length})`, () => {
  assert.ok(cases.length >= 60);
});

for (const [name, method, url, body, status, code, contentType] of cases) {
  test(`${name}: ${status} ${code}`, async () => {
    const before = await graderCount();
    const payload = body === undefined ? undefined : typeof body === "string" || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    const res = await s.app.inject({
      method: method as "GET",
      url,
      headers: {
        authorization: `Bearer ${key}`,
        ...(payload === undefined ? {} : { "content-type": contentType ?? "application/json" }),
      },
      ...(payload === undefined ? {} : { payload }),
    });
    assert.equal(res.statusCode, status, res.body);
    assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
    const problem = JSON.parse(res.body);
    assert.equal(problem.code, code);
    assert.equal(problem.status, status);
    assert.ok(typeof problem.detail === "string" && problem.detail.length >= 15, `an actionable message: ${problem.detail}`);
    assert.doesNotMatch(problem.detail, /\/work\/|node_modules|at .*\.ts:\d+/, "no internals in the message");
    assert.equal(problem.requestId, res.headers["x-request-id"]);
    assert.equal(await graderCount(), before, "nothing was persisted");
  });
}

test("the server keeps serving after all of it", async () => {
  const res = await s.app.inject({
    method: "POST",
    url: `${P}/ok/grade`,
    headers: { authorization: `Bearer ${key}` },
    payload: { thread: good },
  });
  assert.equal(res.statusCode, 200);
  assert.equal(JSON.parse(res.body).score, 1);
});

// Per-project quotas against the real server with small quotas set by env: the reported attack
// (a grader with large samples, PUT again and again with a changed comment) is refused once the
// project's bytes are used, storing nothing, while another project still creates; deleting a
// version or a grader frees the room at once, and usage is counted right after deletes. Graders,
// versions per grader, models, secrets and live grade tokens are capped the same way.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { cliWords } from "../cli/api.ts";
import { ConflictError, Gradebox } from "../sdk/index.ts";
import { startServer, type TestServer, thread } from "./support/helpers.ts";

const BYTES = 500_000;
let s: TestServer;

before(async () => {
  s = await startServer({
    listen: true,
    env: {
      GRADEBOX_QUOTA_BYTES: String(BYTES),
      GRADEBOX_QUOTA_GRADERS: "3",
      GRADEBOX_QUOTA_VERSIONS: "3",
      GRADEBOX_QUOTA_MODELS: "1",
      GRADEBOX_QUOTA_SECRETS: "1",
      GRADEBOX_QUOTA_GRADE_TOKENS: "1",
      GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32",
    },
  });
});
after(() => s?.close());

async function api(project: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.url}/v1/projects/${project}${path}`, {
    method,
    headers: { authorization: `Bearer ${await s.keyFor(project)}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const source = (comment: string) => `// ${comment}\nasync function grade(t) { return 1 }`;
// 10 samples of about 20 KB: about 200 KB a version, so the third version is past 500 000 bytes
const samples = Array.from({ length: 10 }, (_, i) => ({ thread: thread(`${i}`.padEnd(20_000, "x")), expected: 1 }));

const usage = async (project: string) => (await api(project, "GET", "/usage")).body;
const versions = async (project: string, key: string) =>
  (await api(project, "GET", `/graders/${key}/versions`)).body.data.map((v: { version: number }) => v.version);

describe("the bytes a project stores", () => {
  test("repeated PUTs of a grader with large samples are refused once past the quota; nothing of them is stored", async () => {
    const created = await api("big", "POST", "/graders", { key: "bigsamples", source: source("v1"), samples });
    assert.equal(created.status, 201, JSON.stringify(created.body));

    const answers: number[] = [];
    let refused: { status: number; body: Record<string, unknown> } | undefined;
    for (let i = 2; i <= 6 && !refused; i++) {
      const res = await api("big", "PUT", "/graders/bigsamples", { source: source(`v${i}`), samples });
      answers.push(res.status);
      if (res.status !== 200) refused = res;
    }
    assert.deepEqual(answers, [200, 409], "the second version fits, the third would not");
    assert.ok(refused);
    assert.equal(refused.body.code, "QUOTA_EXCEEDED");
    assert.equal(refused.body.quota, "bytes");
    assert.equal(refused.body.limit, BYTES);
    const detail = String(refused.body.detail);
    assert.match(detail, /project "big" stores .* of graders and this would add .*, over its quota of/);
    assert.match(detail, /GRADEBOX_QUOTA_BYTES=500000/);
    assert.match(detail, /"bigsamples" \(.* in 2 versions\)/, "names the largest graders");
    assert.match(detail, /DELETE \/v1\/projects\/big\/graders\/\{key\}\/versions\/\{version\}/);

    // nothing half-written: still two versions, the same use as the refusal reported
    assert.deepEqual(await versions("big", "bigsamples"), [1, 2]);
    const used = await usage("big");
    assert.equal(used.bytes.used, refused.body.used);
    assert.ok(used.bytes.used <= BYTES && used.bytes.used > 2 * 200_000, JSON.stringify(used));
    assert.deepEqual(used.bytes.limit, BYTES);
    assert.equal((await api("big", "GET", "/graders/bigsamples")).body.version, 2);

    // a new grader of the same size is refused too, whatever its key; another project still creates
    const another = await api("big", "POST", "/graders", { key: "more", source: source("m"), samples });
    assert.deepEqual([another.status, another.body.code, another.body.quota], [409, "QUOTA_EXCEEDED", "bytes"]);
    assert.equal((await api("neighbour", "POST", "/graders", { key: "bigsamples", source: source("n"), samples })).status, 201);
  });

  test("deleting an old version frees its bytes: the next PUT is stored", async () => {
    const before = (await usage("big")).bytes.used;
    assert.equal((await api("big", "DELETE", "/graders/bigsamples/versions/1")).status, 204);
    const after = (await usage("big")).bytes.used;
    assert.ok(after < before - 200_000 && after > 200_000, `${before} -> ${after}`);
    assert.deepEqual(await versions("big", "bigsamples"), [2]);

    const res = await api("big", "PUT", "/graders/bigsamples", { source: source("v3"), samples });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.version, 3, "version numbers are not reused");
    assert.deepEqual(await versions("big", "bigsamples"), [2, 3]);
    assert.equal((await api("big", "GET", "/graders/bigsamples/versions/1")).body.code, "VERSION_NOT_FOUND");
  });

  test("deleting the grader frees all it stored: usage is counted from what remains", async () => {
    assert.equal((await api("big", "DELETE", "/graders/bigsamples")).status, 204);
    const used = await usage("big");
    assert.deepEqual([used.graders.used, used.bytes.used], [0, 0]);
    assert.equal((await api("big", "POST", "/graders", { key: "again", source: source("a"), samples })).status, 201);
    assert.equal((await usage("big")).graders.used, 1);
  });
});

describe("a version can be deleted only when nothing depends on it", () => {
  test("the current version, a pinned one and a locked grader's are refused, with what to do", async () => {
    const p = "pins";
    assert.equal((await api(p, "POST", "/graders", { key: "part", source: source("1") })).status, 201);
    assert.equal((await api(p, "PUT", "/graders/part", { source: source("2") })).status, 200);
    assert.equal((await api(p, "PUT", "/graders/part", { source: source("3") })).status, 200);
    const combined = await api(p, "POST", "/graders/combined", {
      key: "pinned",
      mode: "weighted",
      graders: [{ graderKey: "part", version: 1 }],
    });
    assert.equal(combined.status, 201, JSON.stringify(combined.body));

    const current = await api(p, "DELETE", "/graders/part/versions/3");
    assert.deepEqual([current.status, current.body.code], [409, "VERSION_IN_USE"]);
    assert.match(current.body.detail, /current version/);
    const pinned = await api(p, "DELETE", "/graders/part/versions/1");
    assert.deepEqual([pinned.status, pinned.body.code, pinned.body.usedBy], [409, "VERSION_IN_USE", ["pinned"]]);
    assert.equal((await api(p, "DELETE", "/graders/part/versions/9")).body.code, "VERSION_NOT_FOUND");

    assert.equal((await api(p, "PUT", "/graders/part/lock", { locked: true })).status, 200);
    assert.equal((await api(p, "DELETE", "/graders/part/versions/2")).body.code, "GRADER_LOCKED");
    assert.equal((await api(p, "PUT", "/graders/part/lock", { locked: false })).status, 200);
    assert.equal((await api(p, "DELETE", "/graders/part/versions/2")).status, 204);
    assert.deepEqual(await versions(p, "part"), [1, 3]);
  });
});

describe("counted quotas", () => {
  test("versions per grader: the fourth is refused naming the oldest; deleting one makes room", async () => {
    const p = "many-versions";
    assert.equal((await api(p, "POST", "/graders", { key: "g", source: source("1") })).status, 201);
    for (const n of [2, 3]) assert.equal((await api(p, "PUT", "/graders/g", { source: source(`${n}`) })).status, 200);
    const refused = await api(p, "PUT", "/graders/g", { source: source("4") });
    assert.deepEqual(
      [refused.status, refused.body.code, refused.body.quota, refused.body.limit, refused.body.used],
      [409, "QUOTA_EXCEEDED", "versions", 3, 3],
    );
    assert.match(refused.body.detail, /grader "g" stores 3 versions, its quota \(GRADEBOX_QUOTA_VERSIONS=3\)/);
    assert.match(refused.body.detail, /DELETE \/v1\/projects\/many-versions\/graders\/g\/versions\/\{version\}; the oldest is 1/);
    // a dry run stores nothing, so it is not refused; an identical push changes nothing and is answered too
    assert.equal((await api(p, "PUT", "/graders/g", { source: source("4"), dryRun: true })).status, 200);
    assert.equal((await api(p, "PUT", "/graders/g", { source: source("3") })).body.unchanged, true);
    assert.deepEqual(await versions(p, "g"), [1, 2, 3]);

    // restore stores a version too
    assert.equal((await api(p, "POST", "/graders/g/versions/1/restore")).body.code, "QUOTA_EXCEEDED");
    assert.equal((await api(p, "DELETE", "/graders/g/versions/1")).status, 204);
    assert.equal((await api(p, "PUT", "/graders/g", { source: source("4") })).body.version, 4);
    assert.deepEqual(await versions(p, "g"), [2, 3, 4]);
  });

  test("graders per project, of every kind; a delete frees one at once", async () => {
    const p = "many-graders";
    for (const key of ["a", "b"]) assert.equal((await api(p, "POST", "/graders", { key, source: source(key) })).status, 201);
    assert.equal((await api(p, "POST", "/graders/combined", { key: "c", mode: "any", graders: [{ graderKey: "a" }] })).status, 201);
    assert.equal((await usage(p)).graders.used, 3);

    const fn = await api(p, "POST", "/graders", { key: "d", source: source("d") });
    assert.deepEqual([fn.status, fn.body.code, fn.body.quota, fn.body.limit, fn.body.used], [409, "QUOTA_EXCEEDED", "graders", 3, 3]);
    assert.match(fn.body.detail, /project "many-graders" has 3 graders, its quota \(GRADEBOX_QUOTA_GRADERS=3\); delete graders/);
    const combined = await api(p, "POST", "/graders/combined", { key: "e", mode: "any", graders: [{ graderKey: "b" }] });
    assert.equal(combined.body.code, "QUOTA_EXCEEDED");
    // a taken key is still answered as such
    assert.equal((await api(p, "POST", "/graders", { key: "a", source: source("a") })).body.code, "GRADER_EXISTS");

    assert.equal((await api(p, "DELETE", "/graders/c")).status, 204);
    assert.equal((await usage(p)).graders.used, 2);
    assert.equal((await api(p, "POST", "/graders", { key: "d", source: source("d") })).status, 201);
    const listed = (await api(p, "GET", "/graders")).body.data.map((g: { key: string }) => g.key);
    assert.deepEqual(listed, ["a", "b", "d"]);
  });

  test("models, secrets and live grade tokens; deleting or revoking frees one", async () => {
    const p = "few-things";
    const model = (key: string) => ({ key, baseURL: "http://127.0.0.1:9/v1", model: "m" });
    assert.equal((await api(p, "POST", "/models", model("m1"))).status, 201);
    const m2 = await api(p, "POST", "/models", model("m2"));
    assert.deepEqual([m2.status, m2.body.code, m2.body.quota, m2.body.used], [409, "QUOTA_EXCEEDED", "models", 1]);
    assert.equal((await api(p, "POST", "/models", model("m1"))).body.code, "MODEL_EXISTS");
    assert.equal((await api(p, "DELETE", "/models/m1")).status, 204);
    assert.equal((await api(p, "POST", "/models", model("m2"))).status, 201);

    assert.equal((await api(p, "PUT", "/secrets/s1", { value: "one" })).status, 201);
    assert.equal((await api(p, "PUT", "/secrets/s1", { value: "rotated" })).status, 200, "replacing a value adds nothing");
    const s2 = await api(p, "PUT", "/secrets/s2", { value: "two" });
    assert.deepEqual([s2.status, s2.body.code, s2.body.quota], [409, "QUOTA_EXCEEDED", "secrets"]);
    assert.equal((await api(p, "DELETE", "/secrets/s1")).status, 204);
    assert.equal((await api(p, "PUT", "/secrets/s2", { value: "two" })).status, 201);

    assert.equal((await api(p, "POST", "/graders", { key: "g", source: source("g") })).status, 201);
    const first = await api(p, "POST", "/graders/g/tokens", {});
    assert.equal(first.status, 201);
    const second = await api(p, "POST", "/graders/g/tokens", {});
    assert.deepEqual([second.status, second.body.code, second.body.quota], [409, "QUOTA_EXCEEDED", "gradeTokens"]);
    assert.match(second.body.detail, /revoke tokens/);
    assert.equal((await api(p, "DELETE", `/graders/g/tokens/${first.body.id}`)).status, 200);
    assert.equal((await api(p, "POST", "/graders/g/tokens", {})).status, 201);

    const used = await usage(p);
    assert.deepEqual(
      [used.graders.used, used.models.used, used.secrets.used, used.gradeTokens.used, used.versionsPerGrader],
      [1, 1, 1, 1, 3],
    );
  });

  test("the CLI words each quota's hint as the command that frees room", async () => {
    const p = "cli-words";
    const detail = async (method: string, path: string, body: unknown) => {
      const answer = await api(p, method, path, body);
      assert.equal(answer.body.code, "QUOTA_EXCEEDED", JSON.stringify(answer.body));
      return cliWords(String(answer.body.detail));
    };
    assert.equal((await api(p, "POST", "/graders", { key: "g", source: source("1") })).status, 201);
    for (const n of [2, 3]) assert.equal((await api(p, "PUT", "/graders/g", { source: source(`${n}`) })).status, 200);
    assert.match(await detail("PUT", "/graders/g", { source: source("4") }), /\(gradebox rm g@VERSION; the oldest is 1\)/);
    for (const key of ["h", "i"]) assert.equal((await api(p, "POST", "/graders", { key, source: source(key) })).status, 201);
    assert.match(await detail("POST", "/graders", { key: "j", source: source("j") }), /\(gradebox rm KEY\)/);
    const model = (key: string) => ({ key, baseURL: "http://127.0.0.1:9/v1", model: "m" });
    assert.equal((await api(p, "POST", "/models", model("m1"))).status, 201);
    assert.match(await detail("POST", "/models", model("m2")), /\(gradebox models delete KEY\)/);
    assert.equal((await api(p, "PUT", "/secrets/s1", { value: "one" })).status, 201);
    const secrets = await detail("PUT", "/secrets/s2", { value: "two" });
    assert.match(secrets, /\(gradebox secrets rm NAME\)/);
    assert.doesNotMatch(secrets, /DELETE \/v1/);
  });

  test("the SDK: usage(), versions.delete, and QUOTA_EXCEEDED as a ConflictError that is not retried", async () => {
    const client = new Gradebox({ baseURL: s.url, project: "sdk", apiKey: await s.keyFor("sdk") });
    await client.graders.create.function({ key: "k", source: source("1") });
    await client.graders.update({ graderKey: "k", source: source("2") });
    await client.graders.update({ graderKey: "k", source: source("3") });
    const error = await client.graders.update({ graderKey: "k", source: source("4") }).catch((e) => e);
    assert.ok(error instanceof ConflictError, String(error));
    assert.equal(error.code, "QUOTA_EXCEEDED");
    await client.graders.versions.delete({ graderKey: "k", version: 2 });
    assert.equal((await client.graders.update({ graderKey: "k", source: source("4") })).version, 4);
    const used = await client.usage();
    assert.equal(used.graders.used, 1);
    assert.ok(used.bytes.used > 0 && used.bytes.limit === BYTES);
  });
});

// client.secrets against the real server on a real port: set, rotate, list, get, delete; a
// model's apiKeySecret and an endpoint's headersSecret send the stored value to their host (a
// scripted OpenAI-compatible model and a reward server on loopback record what arrives); the
// server's refusals come back as the SDK's error classes with their codes.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, describe, test } from "node:test";
import type { z } from "zod";
import {
  BadRequestError,
  ConflictError,
  type CreateExternalEndpointParams,
  type CreateModelParams,
  Gradebox,
  InternalServerError,
  NotFoundError,
  type Secret,
} from "../sdk/index.ts";
import type { EndpointCreate } from "../server/endpoints/spec.ts";
import type { ModelCreate } from "../server/judges/spec.ts";
import type { Secret as ServerSecret } from "../server/secrets/secrets.ts";
import { FakeOpenAI } from "./support/fake-openai.ts";
import { startServer, type TestServer, testPostgres } from "./support/helpers.ts";
import { RecordingRewards } from "./support/recording-rewards.ts";

// the SDK's types and the server's schemas are one shape: tsc fails here when they drift
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const secretAgrees: Same<Secret, z.infer<typeof ServerSecret>> = true;
const modelParamsAgree: Same<keyof CreateModelParams, keyof z.input<typeof ModelCreate>> = true;
const endpointParamsAgree: Same<keyof CreateExternalEndpointParams, "key" | "description" | keyof z.input<typeof EndpointCreate>> = true;
void [secretAgrees, modelParamsAgree, endpointParamsAgree]; // compile-time checks only

let s: TestServer;
let client: Gradebox;
let fake: FakeOpenAI;
let rewards: RecordingRewards;
const thread = {
  turns: [
    { role: "user" as const, content: "Is the sky blue?" },
    { role: "assistant" as const, content: "Yes." },
  ],
};

before(async () => {
  fake = await new FakeOpenAI().start();
  rewards = await new RecordingRewards().start();
  s = await startServer({
    listen: true,
    env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32", ...(testPostgres ? { GRADEBOX_SECRETS_KEY: "cd".repeat(32) } : {}) },
  });
  client = new Gradebox({ baseURL: s.url, project: "sdk-secrets", apiKey: await s.keyFor("sdk-secrets") });
});
after(async () => {
  await s.close();
  await fake.close();
  await rewards.close();
});
beforeEach(() => {
  fake.reset();
  fake.fallback = { json: { reasoning: "ok", verdict: "PASS" } };
  rewards.headers.length = 0;
});

describe("client.secrets", () => {
  test("set creates, set again rotates, list and get show names, hosts and dates but never a value, delete removes", async () => {
    const created = await client.secrets.set({ name: "judge.key_1", value: "sk-sdk-first" });
    assert.deepEqual(Object.keys(created).sort(), ["createdAt", "host", "name", "updatedAt"]);
    assert.equal(created.name, "judge.key_1");
    assert.equal(created.host, null);
    const rotated = await client.secrets.set({ name: "judge.key_1", value: "sk-sdk-second" });
    assert.equal(rotated.createdAt, created.createdAt, "the same secret, set again");
    assert.ok(rotated.updatedAt >= created.updatedAt);
    await client.secrets.set({ name: "another", value: "v" });

    const listed = await client.secrets.list();
    assert.deepEqual(
      listed.map((x) => x.name),
      ["another", "judge.key_1"],
    );
    assert.deepEqual(await client.secrets.get({ name: "judge.key_1" }), rotated);
    assert.doesNotMatch(JSON.stringify(listed), /sk-sdk/);

    await client.secrets.delete({ name: "another" });
    const gone = await client.secrets.get({ name: "another" }).catch((e: unknown) => e);
    assert.ok(gone instanceof NotFoundError, String(gone));
    assert.equal(gone.code, "SECRET_NOT_FOUND");
    await assert.rejects(
      client.secrets.delete({ name: "another" }),
      (e: unknown) => e instanceof NotFoundError && e.code === "SECRET_NOT_FOUND",
    );
  });

  test("a value the server refuses is a BadRequestError, and nothing is stored", async () => {
    for (const value of ["", "two\nlines", "x".repeat(8193)]) {
      await assert.rejects(client.secrets.set({ name: "refused", value }), BadRequestError, JSON.stringify(value.slice(0, 20)));
    }
    await assert.rejects(client.secrets.set({ name: "-leading-dash", value: "v" }), BadRequestError);
    await assert.rejects(client.secrets.get({ name: "refused" }), NotFoundError);
  });

  test("another project's client sees none of them", async () => {
    await client.secrets.set({ name: "mine", value: "v" });
    const other = new Gradebox({ baseURL: s.url, project: "sdk-other", apiKey: await s.keyFor("sdk-other") });
    assert.deepEqual(await other.secrets.list(), []);
    await assert.rejects(other.secrets.get({ name: "mine" }), NotFoundError);
  });
});

describe("models and endpoints name the project's secrets", () => {
  test("apiKeySecret: the model shows the name, its judge sends the value as the bearer token; in use, it cannot be deleted", async () => {
    await client.secrets.set({ name: "judge-key", value: "sk-judge-1" });
    const model = await client.models.create({ key: "keyed", baseURL: fake.url, model: "judge-1", apiKeySecret: "judge-key" });
    assert.equal(model.apiKeySecret, "judge-key");
    assert.equal(model.apiKeyEnv, undefined);
    assert.equal((await client.models.get({ modelKey: "keyed" })).apiKeySecret, "judge-key");
    assert.doesNotMatch(JSON.stringify(await client.models.list()), /sk-judge/);
    assert.equal((await client.secrets.get({ name: "judge-key" })).host, "127.0.0.1", "bound to the model's host");

    await client.graders.create.binaryJudge({ key: "keyed-judge", criteria: "answers", judgeModel: "keyed" });
    assert.equal((await client.graders.grade({ graderKey: "keyed-judge", thread })).score, 1);
    assert.equal(fake.requests.at(-1)?.headers.authorization, "Bearer sk-judge-1");
    await client.secrets.set({ name: "judge-key", value: "sk-judge-2" });
    await client.graders.grade({ graderKey: "keyed-judge", thread });
    assert.equal(fake.requests.at(-1)?.headers.authorization, "Bearer sk-judge-2", "a rotation applies at the next call");

    const inUse = await client.secrets.delete({ name: "judge-key" }).catch((e: unknown) => e);
    assert.ok(inUse instanceof ConflictError, String(inUse));
    assert.equal(inUse.code, "SECRET_IN_USE");
    assert.deepEqual(inUse.body.usedBy, ['model "keyed"']);
    await client.graders.delete({ graderKey: "keyed-judge" });
    await client.models.delete({ modelKey: "keyed" });
    await client.secrets.delete({ name: "judge-key" });
  });

  test("a secret bound to one host is refused for another (ConflictError SECRET_HOST_MISMATCH); a missing one is a NotFoundError", async () => {
    await client.secrets.set({ name: "bound", value: "sk-bound" });
    await client.models.create({ key: "here", baseURL: fake.url, model: "judge-1", apiKeySecret: "bound" });
    const elsewhere = await client.models
      .create({ key: "there", baseURL: fake.url.replace("127.0.0.1", "localhost"), model: "judge-1", apiKeySecret: "bound" })
      .catch((e: unknown) => e);
    assert.ok(elsewhere instanceof ConflictError, String(elsewhere));
    assert.equal(elsewhere.code, "SECRET_HOST_MISMATCH");
    assert.equal(elsewhere.body.boundHost, "127.0.0.1");
    const missing = await client.models
      .create({ key: "none", baseURL: fake.url, model: "judge-1", apiKeySecret: "never-set" })
      .catch((e: unknown) => e);
    assert.ok(missing instanceof NotFoundError, String(missing));
    assert.equal(missing.code, "SECRET_NOT_FOUND");
    assert.deepEqual(
      (await client.models.list()).map((m) => m.key),
      ["here"],
    );
    assert.equal(fake.requests.length, 0, "registering calls no model");
  });

  test("headersSecret: the endpoint shows the header's secret, and every call to the reward server carries the value", async () => {
    await client.secrets.set({ name: "rm-token", value: "tok-sdk" });
    const g = await client.graders.create.externalEndpoint({ key: "rm", url: rewards.url, headersSecret: { "X-Api-Key": "rm-token" } });
    assert.deepEqual(g.endpoint?.headersSecret, { "X-Api-Key": "rm-token" });
    assert.equal(g.endpoint?.headersEnv, undefined);
    assert.equal(rewards.headers.at(-1)?.["x-api-key"], "tok-sdk", "the /info probe carried it");
    assert.equal((await client.graders.grade({ graderKey: "rm", thread })).score, 1);
    assert.equal(rewards.headers.at(-1)?.["x-api-key"], "tok-sdk");
    assert.equal((await client.secrets.get({ name: "rm-token" })).host, "127.0.0.1");
    await assert.rejects(
      client.secrets.delete({ name: "rm-token" }),
      (e: unknown) => e instanceof ConflictError && e.code === "SECRET_IN_USE",
    );
  });
});

test("503 SECRETS_NOT_CONFIGURED (no secrets key on the server) is not retried: only the operator can change it", async () => {
  // a SQLite server always has a key (made beside its database), so a scripted one answers as a server without one
  let calls = 0;
  const server = createServer((_req, res) => {
    calls++;
    res.writeHead(503, { "content-type": "application/problem+json" });
    res.end('{"code":"SECRETS_NOT_CONFIGURED","status":503,"detail":"this server has no secrets key"}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const error = await new Gradebox({ baseURL: url, maxRetries: 2 }).secrets.set({ name: "k", value: "v" }).catch((e: unknown) => e);
    assert.ok(error instanceof InternalServerError, String(error));
    assert.equal(error.status, 503);
    assert.equal(error.code, "SECRETS_NOT_CONFIGURED");
    assert.equal(calls, 1, "asked once");
  } finally {
    server.close();
  }
});

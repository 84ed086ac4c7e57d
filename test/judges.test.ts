// Judge graders end to end: the real server and SQLite file, a scripted OpenAI-compatible
// server on loopback (test/support/fake-openai.ts) standing in for the model.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, describe, test } from "node:test";
import { ConflictError, Gradebox, GradeboxError, GraderValidationError, StringThread, UnprocessableEntityError } from "../sdk/index.ts";
import { FakeOpenAI } from "./support/fake-openai.ts";
import { call, startServer, type TestServer } from "./support/helpers.ts";

let fake: FakeOpenAI;
let s: TestServer;
const P = "/v1/projects/judges";

const qa = (completion: string, extra: Array<{ role: string; content: string }> = []) => ({
  turns: [...extra, { role: "user", content: "Is the sky blue?" }, { role: "assistant", content: completion }],
});

async function model(key: string, options: Record<string, unknown> = {}) {
  const r = await call(s.app, "POST", `${P}/models`, {
    key,
    baseURL: fake.url,
    model: "judge-1",
    maxConcurrency: 4,
    timeoutMs: 2000,
    ...options,
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body;
}
async function binary(key: string, body: Record<string, unknown> = {}) {
  const r = await call(s.app, "POST", `${P}/graders/binary-judge`, { key, criteria: "answers the question", judgeModel: "m", ...body });
  assert.equal(r.status, 201, JSON.stringify(r.body));
}
const grade = (key: string, thread: unknown) => call(s.app, "POST", `${P}/graders/${key}/grade`, { thread });

before(async () => {
  fake = await new FakeOpenAI().start();
  s = await startServer({
    env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32", GRADEBOX_SECRET_GRANTS: "GRADEBOX_SECRET_JUDGE_KEY=judges" },
    listen: true,
  });
  await model("m");
  await binary("polite");
});
after(async () => {
  await s.close();
  await fake.close();
});
beforeEach(() => fake.reset());

describe("models", () => {
  test("create, list, get; no secret stored; duplicate and unknown keys refused", async () => {
    const got = await call(s.app, "GET", `${P}/models/m`);
    assert.equal(got.status, 200);
    assert.equal(got.body.baseURL, fake.url);
    assert.equal(got.body.maxConcurrency, 4);
    assert.equal((await call(s.app, "GET", `${P}/models`)).body.data.length >= 1, true);
    const dup = await call(s.app, "POST", `${P}/models`, { key: "m", baseURL: fake.url, model: "x" });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.code, "MODEL_EXISTS");
    assert.equal((await call(s.app, "GET", `${P}/models/nope`)).body.code, "MODEL_NOT_FOUND");
    // a secret's variable must be one the operator set aside, and set
    const env = await call(s.app, "POST", `${P}/models`, { key: "k1", baseURL: fake.url, model: "x", apiKeyEnv: "AWS_SECRET_ACCESS_KEY" });
    assert.equal(env.status, 400);
    assert.match(env.body.detail, /GRADEBOX_SECRET_/);
    const unset = await call(s.app, "POST", `${P}/models`, {
      key: "k2",
      baseURL: fake.url,
      model: "x",
      apiKeyEnv: "GRADEBOX_SECRET_NOT_SET",
    });
    assert.equal(unset.status, 400);
    assert.match(unset.body.detail, /no server secret GRADEBOX_SECRET_NOT_SET is available to project "judges"/);
  });

  test("the API key named by apiKeyEnv is sent as a bearer token and never shown", async () => {
    process.env.GRADEBOX_SECRET_JUDGE_KEY = "sk-test-123";
    await model("keyed", { apiKeyEnv: "GRADEBOX_SECRET_JUDGE_KEY" });
    await binary("keyed-judge", { judgeModel: "keyed" });
    assert.equal((await grade("keyed-judge", qa("Yes."))).status, 200);
    assert.equal(fake.requests[0].headers.authorization, "Bearer sk-test-123");
    assert.doesNotMatch(JSON.stringify((await call(s.app, "GET", `${P}/models/keyed`)).body), /sk-test/);
  });

  test("a model in use cannot be deleted; once its graders are gone it can", async () => {
    await model("doomed");
    await binary("uses-doomed", { judgeModel: "doomed" });
    const refused = await call(s.app, "DELETE", `${P}/models/doomed`);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, "MODEL_IN_USE");
    assert.deepEqual(refused.body.usedBy, ["uses-doomed"]);
    assert.equal((await call(s.app, "DELETE", `${P}/graders/uses-doomed`)).status, 204);
    assert.equal((await call(s.app, "DELETE", `${P}/models/doomed`)).status, 204);
    const missing = await call(s.app, "POST", `${P}/graders/binary-judge`, { key: "orphan", criteria: "x", judgeModel: "doomed" });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, "MODEL_NOT_FOUND");
  });
});

describe("binary judges and templates", () => {
  test("PASS/FAIL with the judge's reasoning, token usage and structured output", async () => {
    fake.on(/Yes\./, { json: { reasoning: "it answers", verdict: "PASS" }, usage: { prompt_tokens: 100, completion_tokens: 7 } });
    fake.on(/Maybe/, { json: { reasoning: "it dodges", verdict: "FAIL" } });
    const pass = await grade("polite", qa("Yes."));
    assert.equal(pass.status, 200);
    assert.equal(pass.body.score, 1);
    assert.equal(pass.body.reason, "it answers");
    assert.equal(pass.body.metadata.verdict, "PASS");
    assert.deepEqual(pass.body.metadata.usage, { promptTokens: 100, completionTokens: 7, totalTokens: 107 });
    const fail = await grade("polite", qa("Maybe"));
    assert.equal(fail.body.score, 0);
    assert.equal(fail.body.metadata.verdict, "FAIL");
    const format = fake.requests[0].body.response_format as { type: string; json_schema: { strict: boolean } };
    assert.equal(format.type, "json_schema");
    assert.equal(fake.requests[0].body.model, "judge-1");
    assert.equal(fake.requests[0].body.messages[0].role, "system");
  });

  test("feedbackKey is stored, shown, named in every result (SDK and reward routes) and bounded; a developer turn reaches the prompt", async () => {
    await binary("helpful-judge", { feedbackKey: "helpfulness" });
    const shown = await call(s.app, "GET", `${P}/graders/helpful-judge`);
    assert.equal(shown.body.judge.feedbackKey, "helpfulness");
    fake.fallback = { json: { reasoning: "fine", verdict: "PASS" } };
    const one = await grade("helpful-judge", qa("Yes.", [{ role: "developer", content: "Answer in one word." }]));
    assert.equal(one.status, 200);
    assert.equal(one.body.metadata.feedbackKey, "helpfulness");
    assert.match(String(fake.requests[0].body.messages.at(-1)?.content), /developer: Answer in one word\./);
    const batch = await call(s.app, "POST", `${P}/graders/helpful-judge/grade-batch`, { threads: [qa("Yes."), qa("No.")] });
    assert.deepEqual(
      batch.body.results.map((r: { metadata: { feedbackKey: string } }) => r.metadata.feedbackKey),
      ["helpfulness", "helpfulness"],
    );
    const reward = await s.app.inject({
      method: "POST",
      url: `${P}/graders/helpful-judge/reward/score`,
      headers: { authorization: `Bearer ${await s.keyFor("judges")}` },
      payload: { ...qa("Yes."), id: 3 },
    });
    assert.equal(reward.json().metadata.feedbackKey, "helpfulness");
    assert.equal(reward.json().id, 3);
    // the SDK's create takes it too
    const sdk = new Gradebox({ baseURL: s.url, project: "judges", apiKey: await s.keyFor("judges") });
    const created = await sdk.graders.create.binaryJudge({ key: "sdk-judge", criteria: "x", judgeModel: "m", feedbackKey: "sdk.key" });
    assert.equal(created.judge?.type === "binary" && created.judge.feedbackKey, "sdk.key");
    // without it, no field at all
    assert.equal((await grade("polite", qa("Yes."))).body.metadata.feedbackKey, undefined);
    const bad = await call(s.app, "POST", `${P}/graders/binary-judge`, {
      key: "bad-fk",
      criteria: "x",
      judgeModel: "m",
      feedbackKey: "has space",
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.detail, /feedbackKey must be 1 to 128 letters/);
  });

  test("every template variable renders on a multi-turn thread with documents and tools", async () => {
    const template = [
      "completion={{{completion}}}",
      "last_user={{{last_user_turn_content}}}",
      "context_str=[{{{context_str}}}]",
      "without_last_user=[{{{context_str_without_last_user}}}]",
      "turns={{#each turns}}{{@index}}:{{role}}={{{content}}};{{/each}}",
      "context_turns={{#each context_turns}}{{role}};{{/each}}",
      "context_turns_without_last_user={{#each context_turns_without_last_user}}{{role}};{{/each}}",
      "metadata={{metadata.domain}}/{{#if metadata.missing}}yes{{else}}no{{/if}}",
      "schema={{{output_schema}}}",
      "vars={{template_variables.tone}}",
      "criteria={{{criteria}}}",
      "escaped={{completion}}",
    ].join("\n");
    const sample = {
      thread: {
        turns: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "q" },
          { role: "assistant", content: "a" },
        ],
        metadata: { domain: "d" },
      },
    };
    await binary("all-vars", { template, templateVariables: { tone: "dry" }, criteria: "is <b>right</b>", samples: [sample] });
    fake.fallback = { json: { reasoning: "r", verdict: "PASS" } };
    const thread = {
      turns: [
        { role: "system", content: "You answer from documents." },
        { role: "document", content: "Doc one." },
        { role: "user", content: "First question?" },
        { role: "assistant", content: "Calling a tool." },
        { role: "tool", content: '{"temp": 20}' },
        { role: "user", content: "So what is it?" },
        { role: "assistant", content: "It is 20 <degrees>." },
      ],
      metadata: { domain: "weather" },
    };
    assert.equal((await grade("all-vars", thread)).status, 200);
    assert.equal(fake.requests.length, 1);
    const messages = fake.requests[0].body.messages;
    assert.equal(messages.length, 1, "a template is the whole prompt");
    const context =
      "system: You answer from documents.\n\ndocument: Doc one.\n\nuser: First question?\n\nassistant: Calling a tool.\n\n" +
      'tool: {"temp": 20}\n\nuser: So what is it?';
    const withoutLastUser =
      "system: You answer from documents.\n\ndocument: Doc one.\n\nuser: First question?\n\nassistant: Calling a tool.\n\n" +
      'tool: {"temp": 20}';
    const schema = JSON.stringify({
      type: "object",
      properties: { reasoning: { type: "string" }, verdict: { type: "string", enum: ["PASS", "FAIL"] } },
      required: ["reasoning", "verdict"],
      additionalProperties: false,
    });
    assert.equal(
      messages[0].content,
      [
        "completion=It is 20 <degrees>.",
        "last_user=So what is it?",
        `context_str=[${context}]`,
        `without_last_user=[${withoutLastUser}]`,
        'turns=0:system=You answer from documents.;1:document=Doc one.;2:user=First question?;3:assistant=Calling a tool.;4:tool={"temp": 20};5:user=So what is it?;6:assistant=It is 20 <degrees>.;',
        "context_turns=system;document;user;assistant;tool;user;",
        "context_turns_without_last_user=system;document;user;assistant;tool;",
        "metadata=weather/no",
        `schema=${schema}`,
        "vars=dry",
        "criteria=is <b>right</b>",
        "escaped=It is 20 &lt;degrees&gt;.",
      ].join("\n"),
    );
    // the console's "show prompt" renders the same text without calling the model
    const shown = await call(s.app, "POST", `${P}/graders/all-vars/prompt`, { thread });
    assert.equal(shown.status, 200);
    assert.equal(shown.body.messages[0].content, messages[0].content);
    assert.equal(fake.requests.length, 1);
  });

  test("templates that do not compile, use partials, or fail on the sample thread are refused with check template and a position", async () => {
    const cases: Array<[string, RegExp, number | undefined]> = [
      ["Judge:\n  {{#if completion}}x{{/each}}", /doesn't match/, 2],
      ["{{> header}}", /partials are not available/, 1],
      ["{{log completion}}", /unknown helper log/, 1],
      ["fine\n{{metadata.domain}}", /"domain" not defined/, 2],
      ["{{#if x}}", /syntax error near "\{\{#if x\}\}".*got the end of the template/, 1],
    ];
    for (const [template, message, line] of cases) {
      const r = await call(s.app, "POST", `${P}/graders/binary-judge`, { key: "bad-template", criteria: "x", judgeModel: "m", template });
      assert.equal(r.status, 422, template);
      assert.equal(r.body.code, "VALIDATION_FAILED");
      assert.equal(r.body.check, "template");
      assert.match(r.body.message, message);
      assert.equal(r.body.line, line, template);
      if (line !== undefined) assert.ok(r.body.column >= 1);
    }
    assert.equal((await call(s.app, "GET", `${P}/graders/bad-template`)).status, 404, "nothing stored");
  });

  test("a template whose render grows with the thread stops at its budget; the rest of the batch fails without rendering", async () => {
    // five nested loops: 2^5 passes on the sample thread (stored), 100^5 on a 100-turn thread
    const template =
      "{{#each turns}}{{#each ../turns}}{{#each ../turns}}{{#each ../turns}}{{#each ../turns}}x{{/each}}{{/each}}{{/each}}{{/each}}{{/each}}";
    const created = await call(s.app, "POST", `${P}/graders/binary-judge`, { key: "nested", criteria: "x", judgeModel: "m", template });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const long = { turns: Array.from({ length: 100 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: "t" })) };
    const batch = await call(s.app, "POST", `${P}/graders/nested/grade-batch`, { threads: [long, long, long] });
    assert.equal(batch.status, 200);
    const [first, ...rest] = batch.body.results;
    assert.equal(first.error.code, "GRADER_ERROR");
    assert.match(first.error.message, /renders more than 1,000,000 characters/);
    for (const result of rest) {
      assert.equal(result.error.code, "GRADER_ERROR");
      assert.match(result.error.message, /not rendered for this thread: an earlier thread of this batch went over its budget/);
    }
    assert.equal(fake.requests.length, 0, "no model call for a prompt that never rendered");
  });

  test("a thread that does not end with an assistant turn gets INVALID_THREAD, without a model call", async () => {
    const r = await grade("polite", { turns: [{ role: "user", content: "hi" }] });
    assert.equal(r.status, 422);
    assert.equal(r.body.code, "INVALID_THREAD");
    assert.equal(fake.requests.length, 0);
  });
});

describe("reading the judge's reply", () => {
  test("JSON in prose and in a code fence is read", async () => {
    fake.on(/prose/, { content: 'Sure! Here is my verdict: {"reasoning": "fine {really}", "verdict": "PASS"} Hope that helps.' });
    fake.on(/fence/, { content: '```json\n{"reasoning": "no", "verdict": "FAIL"}\n```' });
    assert.equal((await grade("polite", qa("prose"))).body.score, 1);
    assert.equal((await grade("polite", qa("fence"))).body.score, 0);
    assert.equal(fake.requests.length, 2, "no re-ask");
  });

  test("garbage is re-asked once; garbage again is JUDGE_INVALID_OUTPUT", async () => {
    fake.on(/garbage-once/, { content: "I think it is fine." }, 1);
    fake.on(/garbage-once/, { json: { reasoning: "ok", verdict: "PASS" } });
    const once = await grade("polite", qa("garbage-once"));
    assert.equal(once.body.score, 1);
    assert.equal(fake.requests.length, 2);
    const reask = fake.requests[1].body.messages;
    assert.equal(reask.at(-2)?.role, "assistant");
    assert.equal(reask.at(-2)?.content, "I think it is fine.");
    assert.match(reask.at(-1)?.content ?? "", /cannot be used: the reply holds no JSON object/);

    fake.reset();
    fake.on(/garbage-always/, { json: { reasoning: "ok", verdict: "MAYBE" } });
    const twice = await grade("polite", qa("garbage-always"));
    assert.equal(twice.status, 502);
    assert.equal(twice.body.code, "JUDGE_INVALID_OUTPUT");
    assert.match(twice.body.detail, /asked twice: "verdict" must be "PASS" or "FAIL"/);
    assert.equal(fake.requests.length, 2);
  });

  test("a body that is not a chat completion, or over 1 MB, is JUDGE_INVALID_OUTPUT", async () => {
    fake.fallback = { garbageBody: true };
    const garbage = await grade("polite", qa("x"));
    assert.equal(garbage.body.code, "JUDGE_INVALID_OUTPUT", JSON.stringify(garbage.body));
    fake.fallback = { hugeBytes: 8 * 1024 * 1024 };
    const huge = await grade("polite", qa("x"));
    assert.equal(huge.body.code, "JUDGE_INVALID_OUTPUT", JSON.stringify(huge.body));
    assert.match(huge.body.detail, /over 1048576 bytes/);
  });

  test("a server without structured output is asked again without it, and remembered", async () => {
    await model("plain");
    await binary("plain-judge", { judgeModel: "plain" });
    fake.rejectStructured = true;
    assert.equal((await grade("plain-judge", qa("Yes."))).body.score, 1);
    assert.equal((await grade("plain-judge", qa("Yes."))).body.score, 1);
    assert.deepEqual(
      fake.requests.map((r) => r.body.response_format !== undefined),
      [true, false, false],
    );
  });
});

describe("failures, retries, breaker, concurrency", () => {
  test("429 with retry-after and 500 are retried; a truncated body too", async () => {
    fake.on(/retry-429/, { status: 429, retryAfter: "0" }, 1);
    fake.on(/retry-500/, { status: 500 }, 2);
    fake.on(/retry-cut/, { truncate: true }, 1);
    for (const word of ["retry-429", "retry-500", "retry-cut"]) {
      const r = await grade("polite", qa(word));
      assert.equal(r.status, 200, `${word}: ${JSON.stringify(r.body)}`);
    }
    assert.equal(fake.requests.length, 2 + 3 + 2);
  });

  test("retry-after is honoured", async () => {
    fake.on(/wait-a-second/, { status: 429, retryAfter: "1" }, 1);
    const started = performance.now();
    assert.equal((await grade("polite", qa("wait-a-second"))).status, 200);
    assert.ok(performance.now() - started >= 950, "waited for retry-after");
  });

  test("a hanging model times out, is retried, then JUDGE_UNAVAILABLE; the breaker then fails fast", async () => {
    await model("flaky", { timeoutMs: 200 });
    await binary("flaky-judge", { judgeModel: "flaky" });
    fake.fallback = { hang: true };
    const hung = await grade("flaky-judge", qa("x"));
    assert.equal(hung.status, 502);
    assert.equal(hung.body.code, "JUDGE_UNAVAILABLE");
    assert.match(hung.body.detail, /did not answer in time \(after 3 attempts\)/);
    assert.equal(fake.requests.length, 3);
    fake.fallback = { status: 503 };
    // 3 + 3 consecutive failures open the breaker (5) during the second item
    await grade("flaky-judge", qa("x"));
    const before = fake.requests.length;
    const fast = await grade("flaky-judge", qa("x"));
    assert.equal(fast.body.code, "JUDGE_UNAVAILABLE");
    assert.match(fast.body.detail, /circuit open/);
    assert.equal(fake.requests.length, before, "no call while the breaker is open");
  });

  test("through the SDK, a model nobody listens on is JUDGE_UNAVAILABLE naming the refused connection, asked once: the breaker stays closed", async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    await model("nobody", { baseURL: `http://127.0.0.1:${closed}/v1` });
    await binary("nobody-judge", { judgeModel: "nobody" });
    const sdk = new Gradebox({ baseURL: s.url, project: "judges", apiKey: await s.keyFor("judges"), maxRetries: 2 });
    const detail = async () => {
      const error = await sdk.graders.grade({ graderKey: "nobody-judge", thread: qa("x") }).catch((e: unknown) => e);
      assert.ok(error instanceof GradeboxError, String(error));
      assert.equal((error as GradeboxError & { code: string }).code, "JUDGE_UNAVAILABLE");
      return (error as Error).message;
    };
    // the server's own three attempts, not the SDK's on top of them (which opened the breaker on the first call)
    assert.match(await detail(), /cannot reach the model: connect ECONNREFUSED 127\.0\.0\.1:\d+ \(after 3 attempts\)$/);
    // the fifth failure in a row opens the breaker during the second call
    assert.match(await detail(), /cannot reach the model: connect ECONNREFUSED .* \(after 2 attempts\)$/);
    // open, it still says what failed
    assert.match(
      await detail(),
      /failed 5 times in a row \(the last: cannot reach the model: connect ECONNREFUSED .*\); .*\(circuit open\)$/,
    );
  });

  test("a combined grader's judge parts share the request's prompt budget: past 16,000,000 characters in all, the rest are not sent", async () => {
    const parts = Array.from({ length: 6 }, (_, k) => ({ graderKey: "polite", name: `p${k}` }));
    const created = await call(s.app, "POST", `${P}/graders/combined`, { key: "six-judges", mode: "weighted", graders: parts });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    // 5 threads of 600,000 characters: one part's prompts are 3 M characters, six parts' 18 M
    const threads = Array.from({ length: 5 }, () => qa("a".repeat(600_000)));
    const r = await call(s.app, "POST", `${P}/graders/six-judges/grade-batch`, { threads });
    assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    const failed = (r.body.results as Array<{ outcome: string; error?: { code: string; message: string } }>).filter(
      (x) => x.outcome === "error",
    );
    assert.ok(failed.length > 0, "some threads went past the budget");
    for (const f of failed) {
      assert.equal(f.error?.code, "COMPONENT_FAILED");
      assert.match(f.error?.message ?? "", /the judge prompts of this request would pass 16,000,000 characters in all/);
    }
    // at most the budget's worth of prompts reached the model: 16 M / 600 K
    assert.ok(fake.requests.length <= 26, `${fake.requests.length} prompts sent`);
  });

  test("a batch runs items concurrently up to maxConcurrency and returns them in order", async () => {
    fake.on(/item-/, (req) => ({ json: { reasoning: req.prompt.match(/item-\d+/)?.[0], verdict: "PASS" }, delayMs: 30 }));
    const threads = Array.from({ length: 24 }, (_, i) => qa(`item-${i}`));
    const r = await call(s.app, "POST", `${P}/graders/polite/grade-batch`, { threads });
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.results.map((x: { reason: string }) => x.reason),
      threads.map((_, i) => `item-${i}`),
    );
    assert.equal(fake.maxInFlight, 4, "the model's maxConcurrency, reached and not passed");
  });
});

describe("pre-built RAG judges", () => {
  const berners = {
    turns: [
      { role: "document", content: "Tim Berners-Lee created the first website." },
      { role: "document", content: "Tim Berners-Lee invented the world wide web." },
      { role: "user", content: "Who published the first website?" },
      { role: "assistant", content: "Tim Berners-Lee published the first website in August 1990." },
    ],
  };
  const claims = ["Tim Berners-Lee published the first website.", "The first website was published in August 1990."];

  test("faithfulness: the reference's example scores 0.5, with a verdict per claim", async () => {
    assert.equal(
      (await call(s.app, "POST", `${P}/graders/prebuilt-judge`, { key: "faith", type: "FAITHFULNESS", judgeModel: "m" })).status,
      201,
    );
    fake.on(/atomic/, { json: { claims } });
    // a careful judge: the documents say he created it; nothing says when
    fake.on(/context supports it/, (req) => {
      assert.match(req.prompt, /1\. Tim Berners-Lee created the first website\.\n2\. Tim Berners-Lee invented the world wide web\./);
      return {
        json: {
          verdicts: [
            { index: 1, reason: "document 1 says he created it", verdict: "SUPPORTED" },
            { index: 2, reason: "no document gives a date", verdict: "UNSUPPORTED" },
          ],
        },
      };
    });
    const r = await grade("faith", berners);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.score, 0.5);
    assert.equal(r.body.reason, "1 of 2 supported claims");
    assert.deepEqual(
      r.body.subscores.map((x: { value: number; metadata: { claim: string } }) => [x.metadata.claim, x.value]),
      [
        [claims[0], 1],
        [claims[1], 0],
      ],
    );
  });

  test("context relevancy = relevant chunks / chunks; answer relevancy = relevant claims / claims", async () => {
    await call(s.app, "POST", `${P}/graders/prebuilt-judge`, { key: "ctx", type: "CONTEXT_RELEVANCY", judgeModel: "m" });
    await call(s.app, "POST", `${P}/graders/prebuilt-judge`, { key: "ans", type: "ANSWER_RELEVANCY", judgeModel: "m" });
    fake.on(/Context chunks/, {
      json: {
        verdicts: [
          { index: 1, reason: "it is about the first website", verdict: "RELEVANT" },
          { index: 2, reason: "about the web, not the website", verdict: "IRRELEVANT" },
        ],
      },
    });
    const ctx = await grade("ctx", berners);
    assert.equal(ctx.body.score, 0.5);
    assert.equal(ctx.body.subscores[1].metadata.chunk, "Tim Berners-Lee invented the world wide web.");

    fake.on(/atomic/, { json: { claims: ["A", "B", "C"] } });
    fake.on(/RELEVANT to answering the question, or IRRELEVANT/, {
      json: {
        verdicts: [
          { index: 1, reason: "", verdict: "RELEVANT" },
          { index: 2, reason: "", verdict: "IRRELEVANT" },
          { index: 3, reason: "", verdict: "RELEVANT" },
        ],
      },
    });
    const ans = await grade("ans", berners);
    assert.equal(ans.body.score, 2 / 3);
    assert.equal(ans.body.subscores.length, 3);
  });

  test("a verdict list of the wrong length is re-asked, then refused; no documents is INVALID_THREAD", async () => {
    fake.on(/Context chunks/, { json: { verdicts: [{ index: 1, reason: "", verdict: "RELEVANT" }] } });
    const short = await grade("ctx", berners);
    assert.equal(short.body.code, "JUDGE_INVALID_OUTPUT");
    assert.match(short.body.detail, /expected 2 verdicts/);
    const none = await grade("faith", qa("x"));
    assert.equal(none.body.code, "INVALID_THREAD");
    assert.match(none.body.detail, /document turns/);
  });
});

describe("rubric judges", () => {
  const criteria = [
    { name: "accurate", requirement: "States facts correctly", weight: 10 },
    { name: "cited", requirement: "Cites a source", weight: 10 },
    { name: "rude", requirement: "Insults the user", weight: -5 },
  ];
  const verdicts = {
    json: {
      criteria: [
        { name: "accurate", reason: "correct", verdict: "MET" },
        { name: "cited", reason: "cannot tell", verdict: "CANNOT_ASSESS" },
        { name: "rude", reason: "cannot tell", verdict: "CANNOT_ASSESS" },
      ],
    },
  };

  test("the four CANNOT_ASSESS strategies score as scoreRubric does, with a verdict and reason per criterion", async () => {
    // skip: only "accurate" counts → 10/10; zero: 10/20; partial: (10 + 5)/20; fail: (10 + 0 − 5)/20
    const expected = { skip: 1, zero: 0.5, partial: 0.75, fail: 0.25 };
    for (const [cannotAssess, score] of Object.entries(expected)) {
      const key = `rubric-${cannotAssess}`;
      const created = await call(s.app, "POST", `${P}/graders/rubric-judge`, { key, judgeModel: "m", criteria, cannotAssess });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      fake.fallback = verdicts;
      const r = await grade(key, qa("The sky is blue."));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.score, score, cannotAssess);
      assert.deepEqual(
        r.body.subscores.map((x: { name: string; metadata: { verdict: string } }) => [x.name, x.metadata.verdict]),
        [
          ["accurate", "MET"],
          ["cited", "CANNOT_ASSESS"],
          ["rude", "CANNOT_ASSESS"],
        ],
      );
    }
    assert.equal(fake.requests.length, 4, "one call per item judges every criterion");
    assert.match(fake.requests[0].prompt, /1\. accurate: States facts correctly[\s\S]*3\. rude \(a fault/);
  });

  test("multi-choice criteria take an option's value; an unknown option is re-asked", async () => {
    await call(s.app, "POST", `${P}/graders/rubric-judge`, {
      key: "rubric-choice",
      judgeModel: "m",
      criteria: [
        {
          name: "tone",
          requirement: "How friendly is it?",
          weight: 1,
          options: [
            { label: "cold", value: 0 },
            { label: "neutral", value: 0.5 },
            { label: "warm", value: 1 },
          ],
        },
      ],
    });
    fake.on(/How friendly/, { json: { criteria: [{ name: "tone", reason: "", verdict: "lukewarm" }] } }, 1);
    fake.on(/How friendly/, { json: { criteria: [{ name: "tone", reason: "polite", verdict: "Neutral" }] } });
    const r = await grade("rubric-choice", qa("Hello."));
    assert.equal(r.body.score, 0.5);
    assert.equal(r.body.subscores[0].metadata.verdict, "neutral");
    assert.equal(fake.requests.length, 2);
  });

  test("all CANNOT_ASSESS under skip has no score: INVALID_SCORE, not a made-up 0", async () => {
    fake.fallback = {
      json: {
        criteria: criteria.map((c) => ({ name: c.name, reason: "", verdict: "CANNOT_ASSESS" })),
      },
    };
    const r = await grade("rubric-skip", qa("x"));
    assert.equal(r.body.code, "INVALID_SCORE");
  });
});

test("a combined grader mixes a judge and a function grader", async () => {
  const fn = await call(s.app, "POST", `${P}/graders`, {
    key: "short",
    source: "export default async function grade(thread) { return (thread.completion() ?? '').length < 20 ? 1 : 0; }",
  });
  assert.equal(fn.status, 201, JSON.stringify(fn.body));
  const combined = await call(s.app, "POST", `${P}/graders/combined`, {
    key: "mixed",
    mode: "weighted",
    graders: [
      { graderKey: "polite", weight: 3 },
      { graderKey: "short", weight: 1 },
    ],
  });
  assert.equal(combined.status, 201, JSON.stringify(combined.body));
  fake.on(/Yes, it is\./, { json: { reasoning: "fine", verdict: "PASS" } });
  fake.on(/No\./, { json: { reasoning: "wrong", verdict: "FAIL" } });
  const r = await call(s.app, "POST", `${P}/graders/mixed/grade-batch`, {
    threads: [qa("Yes, it is."), qa("No."), qa(`Yes, it is.${"!".repeat(30)}`)],
  });
  assert.equal(r.status, 200);
  assert.deepEqual(
    r.body.results.map((x: { score: number }) => x.score),
    [1, 0.25, 0.75],
  );
  assert.equal(r.body.results[1].subscores[0].metadata.reason, "wrong");
  // a judge part that fails fails the item, named
  fake.fallback = { json: { verdict: "??" } };
  const failed = await call(s.app, "POST", `${P}/graders/mixed/grade`, { thread: qa("hmm") });
  assert.equal(failed.body.code, "COMPONENT_FAILED");
  assert.match(failed.body.detail, /part "polite" \(grader polite\) failed with JUDGE_INVALID_OUTPUT/);
});

test("judge calls, latency and tokens per model are in /metrics", async () => {
  fake.fallback = { json: { reasoning: "ok", verdict: "PASS" }, usage: { prompt_tokens: 11, completion_tokens: 2 } };
  await grade("polite", qa("metrics"));
  const res = await s.app.inject({ method: "GET", url: "/metrics", headers: { authorization: `Bearer ${s.metricsToken}` } });
  for (const series of [
    /gradebox_judge_calls_total\{model="judges\/m",outcome="ok"\} [1-9]/,
    /gradebox_judge_call_duration_seconds_count\{model="judges\/m"\} [1-9]/,
    /gradebox_judge_tokens_total\{model="judges\/m",type="prompt"\} [1-9]/,
    /gradebox_judge_calls_total\{model="judges\/flaky",outcome="unavailable"\} [1-9]/,
    /gradebox_judge_calls_total\{model="judges\/m",outcome="invalid_output"\} [1-9]/,
  ]) {
    assert.ok(series.test(res.body), `${series} in /metrics`);
  }
});

describe("egress policy", () => {
  let strict: TestServer;
  before(async () => {
    strict = await startServer();
  });
  after(async () => strict.close());

  test("loopback, private, link-local, metadata and names resolving to loopback are refused by default", async () => {
    for (const baseURL of [
      fake.url,
      "http://10.0.0.1/v1",
      "http://169.254.169.254/latest",
      "http://[::1]:8080/v1",
      "http://[::ffff:127.0.0.1]/v1",
      "http://localhost:9/v1",
    ]) {
      const r = await call(strict.app, "POST", "/v1/projects/e/models", { key: "m", baseURL, model: "x" });
      assert.equal(r.status, 422, baseURL);
      assert.equal(r.body.code, "EGRESS_DENIED", baseURL);
      assert.match(r.body.detail, /GRADEBOX_EGRESS_ALLOW/);
    }
  });

  test("a redirect opens a new connection, checked like the first: an allowed model cannot bounce a call to a private address", async () => {
    fake.on(/bounce/, { redirect: "http://10.0.0.1/v1/chat/completions" });
    const r = await grade("polite", qa("bounce"));
    assert.equal(r.status, 422, JSON.stringify(r.body));
    assert.equal(r.body.code, "EGRESS_DENIED");
    assert.match(r.body.detail, /10\.0\.0\.1 is a loopback, private, link-local or metadata address/);
    assert.equal(fake.requests.length, 1);
  });

  test("every call is checked: a model stored before the policy tightened gets EGRESS_DENIED, and no request reaches it", async () => {
    await strict.store.insertModel({ project: "e", key: "sneaky", baseURL: fake.url, model: "x", maxConcurrency: 1, timeoutMs: 1000 });
    const created = await call(strict.app, "POST", "/v1/projects/e/graders/binary-judge", {
      key: "j",
      criteria: "x",
      judgeModel: "sneaky",
    });
    assert.equal(created.status, 201);
    const r = await call(strict.app, "POST", "/v1/projects/e/graders/j/grade", { thread: qa("x") });
    assert.equal(r.status, 422);
    assert.equal(r.body.code, "EGRESS_DENIED");
    assert.equal(fake.requests.length, 0);
  });
});

test("the SDK: client.models.*, graders.create.{binaryJudge,prebuiltJudge,rubricJudge}, graders.prompt, typed errors", async () => {
  const client = new Gradebox({ baseURL: s.url, project: "sdk-judges", apiKey: await s.keyFor("sdk-judges") });
  const created = await client.models.create({ key: "local", baseURL: fake.url, model: "judge-1", maxConcurrency: 2 });
  assert.equal(created.maxConcurrency, 2);
  assert.deepEqual(
    (await client.models.list()).map((m) => m.key),
    ["local"],
  );
  assert.equal((await client.models.get({ modelKey: "local" })).baseURL, fake.url);
  const binary = await client.graders.create.binaryJudge({ key: "helpful", criteria: "answers the question", judgeModel: "local" });
  assert.equal(binary.kind, "judge");
  assert.deepEqual(binary.judge, { type: "binary", model: "local", criteria: "answers the question" });
  const rag = await client.graders.create.prebuiltJudge({ key: "faith", type: "FAITHFULNESS", judgeModel: "local" });
  assert.deepEqual(rag.judge, { type: "prebuilt", model: "local", metric: "FAITHFULNESS" });
  const rubric = await client.graders.create.rubricJudge({
    key: "rubric",
    judgeModel: "local",
    criteria: [{ name: "correct", requirement: "is correct" }],
    cannotAssess: "zero",
  });
  assert.equal(rubric.judge?.type === "rubric" && rubric.judge.criteria[0].weight, 10, "the default weight is stored");
  fake.fallback = { json: { reasoning: "direct", verdict: "PASS" } };
  const thread = new StringThread([
    ["user", "Is the sky blue?"],
    ["assistant", "Yes."],
  ]);
  const graded = await client.graders.grade({ graderKey: "helpful", thread });
  assert.equal(graded.score, 1);
  assert.equal(graded.reason, "direct");
  const { messages } = await client.graders.prompt({ graderKey: "helpful", thread });
  assert.match(messages[1].content, /Criteria:\nanswers the question/);
  await assert.rejects(
    client.graders.create.binaryJudge({ key: "broken", criteria: "x", judgeModel: "local", template: "{{#if x}}" }),
    (e: unknown) => e instanceof GraderValidationError && e.check === "template" && e.line === 1,
  );
  await assert.rejects(
    client.models.delete({ modelKey: "local" }),
    (e: unknown) => e instanceof ConflictError && e.code === "MODEL_IN_USE",
  );
  await assert.rejects(
    client.graders.grade({ graderKey: "faith", thread }),
    (e: unknown) => e instanceof UnprocessableEntityError && e.code === "INVALID_THREAD",
  );
});

describe("one project's share of the event loop", () => {
  let one: TestServer;
  before(async () => {
    one = await startServer({ env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32", GRADEBOX_LOOP_WORK_PER_PROJECT: "1" } });
    for (const project of ["busy", "calm"]) {
      const m = await call(one.app, "POST", `/v1/projects/${project}/models`, {
        key: "m",
        baseURL: fake.url,
        model: "judge-1",
        maxConcurrency: 8,
      });
      assert.equal(m.status, 201, JSON.stringify(m.body));
      const j = await call(one.app, "POST", `/v1/projects/${project}/graders/binary-judge`, { key: "j", criteria: "c", judgeModel: "m" });
      assert.equal(j.status, 201, JSON.stringify(j.body));
    }
  });
  after(() => one.close());

  test("a project's judge gradings take turns (GRADEBOX_LOOP_WORK_PER_PROJECT), another project's run beside them", async () => {
    fake.on(/slow/, { json: { reasoning: "ok", verdict: "PASS" }, delayMs: 150 });
    const grade = (project: string) => call(one.app, "POST", `/v1/projects/${project}/graders/j/grade`, { thread: qa("slow") });
    const answers = await Promise.all([grade("busy"), grade("busy"), grade("busy"), grade("calm")]);
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200, 200],
    );
    // busy's three ran one at a time, calm's beside them: never more than two calls at the model
    assert.equal(fake.maxInFlight, 2);
    assert.equal(fake.requests.length, 4);
  });
});

// A judge template's render budget (issue 22): every string a render appends, `{{x}}` by the
// length of its escaped form, is charged before it is made, so a hostile template cannot make the
// API build gigabytes of escaped text; over budget, the item fails with GRADER_ERROR naming the
// budget, the rest of its batch is not rendered, and the grader gets one fault per request.
// The module on its own first, then every route end to end: the real server and SQLite file,
// a scripted OpenAI-compatible server standing in for the model.

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import Handlebars from "handlebars";
import {
  compileTemplate,
  escapedLength,
  MAX_PROMPT_CHARS,
  type RenderCost,
  TemplateError,
  type TemplateVariables,
} from "../server/judges/template.ts";
import { FakeOpenAI } from "./support/fake-openai.ts";
import { call, startServer, type TestServer } from "./support/helpers.ts";

/** The attack: `{{completion}}` as often as a template's 16,384 characters allow. */
const ATTACK = "{{completion}}".repeat(1170);
const BUDGET = /renders more than 1,000,000 characters .*for this thread/;

function variables(completion: string, metadata: Record<string, unknown> = {}): TemplateVariables {
  const turns = [
    { role: "user" as const, content: "q" },
    { role: "assistant" as const, content: completion },
  ];
  return {
    completion,
    last_user_turn_content: "q",
    context_str: "user: q",
    context_str_without_last_user: "",
    turns,
    context_turns: turns.slice(0, 1),
    context_turns_without_last_user: [],
    metadata,
    output_schema: "{}",
    template_variables: {},
    criteria: "c",
  };
}

/** Renders, expecting the budget to stop it; returns what it was charged. */
function overBudget(template: string, vars: TemplateVariables): RenderCost {
  const cost: RenderCost = { units: -1 };
  assert.throws(
    () => compileTemplate(template).render(vars, cost),
    (error) => error instanceof TemplateError && error.overBudget && BUDGET.test(error.message),
  );
  assert.ok(cost.units >= 0 && cost.units <= MAX_PROMPT_CHARS, `charged ${cost.units}`);
  return cost;
}

describe("the template module", () => {
  test("the escaped length is counted exactly, without escaping", () => {
    const all = `${Array.from({ length: 128 }, (_, i) => String.fromCharCode(i)).join("")}é😀&`;
    for (const s of ["", "plain", "&", '<a href="x">\'`=</a>', all, "&".repeat(1000)]) {
      assert.equal(escapedLength(s), Handlebars.Utils.escapeExpression(s).length, JSON.stringify(s.slice(0, 20)));
    }
  });

  test("the attack stops before escaping anything: escaping is charged by its output, before it is done", (t) => {
    let escaped = 0;
    const real = Handlebars.Utils.escapeExpression;
    t.mock.method(Handlebars.Utils, "escapeExpression", (s: string) => {
      const out = real(s);
      escaped += out.length;
      return out;
    });
    const cost = overBudget(ATTACK, variables("&".repeat(1_000_000)));
    assert.equal(escaped, 0, "1,000,000 `&` escape to 5,000,000 characters: never built");
    assert.equal(cost.units, 0);
    // on a completion a fifth of the budget, the first `{{completion}}` fits exactly and the second does not
    escaped = 0;
    const fifth = overBudget(ATTACK, variables("&".repeat(200_000)));
    assert.equal(escaped, 1_000_000);
    assert.equal(fifth.units, 1_000_000);
  });

  test("raw output, static text and blocks' results are charged as they are appended, up to the budget and no further", () => {
    // each `{{{completion}}}` appends 100,000 characters: the eleventh does not fit
    assert.equal(overBudget("{{{completion}}}".repeat(1000), variables("x".repeat(100_000))).units, 1_000_000);
    // a loop's passes and what it emits: stopped inside the loop
    const turns = Array.from({ length: 1000 }, () => ({ role: "user" as const, content: "y".repeat(10_000) }));
    const looped = overBudget("{{#each turns}}{{{content}}}{{/each}}", { ...variables("z"), turns });
    assert.ok(looped.units > MAX_PROMPT_CHARS - 10_000, `${looped.units}`);
    // static text inside a loop: 16,000 characters a pass
    const wide = `{{#each turns}}${"s".repeat(16_000)}{{/each}}`;
    overBudget(wide, { ...variables("z"), turns });
    // nested blocks: the inner results count again in the outer one, as they are appended there
    overBudget("{{#each turns}}{{#with @root.completion}}{{this}}{{/with}}{{/each}}", {
      ...variables("w".repeat(5_000)),
      turns: turns.slice(0, 150),
    });
  });

  test("a prompt of exactly the budget renders; one character more does not", () => {
    const cost: RenderCost = { units: 0 };
    const template = compileTemplate("{{completion}}");
    assert.equal(template.render(variables("&".repeat(200_000)), cost), "&amp;".repeat(200_000));
    assert.equal(cost.units, 1_000_000);
    overBudget("{{completion}}", variables(`${"&".repeat(200_000)}a`));
    assert.equal(compileTemplate("{{{completion}}}").render(variables("&".repeat(1_000_000))).length, 1_000_000);
  });

  test("a RangeError in a render (past V8's limits) is over budget too", () => {
    let deep: unknown[] = [];
    for (let i = 0; i < 200_000; i++) deep = [deep];
    overBudget("{{{metadata.deep}}}", variables("x", { deep }));
  });

  test("a normal template renders as before", () => {
    const out = compileTemplate(
      "{{completion}}|{{{completion}}}|{{#each turns}}{{@index}}:{{role}}={{content}};{{/each}}|{{#if metadata.n}}y{{else}}n{{/if}}|{{metadata.a}}|{{{metadata.a}}}|{{lookup turns 0}}",
    ).render(variables("It is 20 <degrees> & 'dry'.", { a: [1, "x&y"], n: 0 }));
    assert.equal(
      out,
      "It is 20 &lt;degrees&gt; &amp; &#x27;dry&#x27;.|It is 20 <degrees> & 'dry'.|0:user=q;1:assistant=It is 20 &lt;degrees&gt; &amp; &#x27;dry&#x27;.;|n|1,x&amp;y|1,x&y|[object Object]",
    );
  });
});

describe("every route", () => {
  let fake: FakeOpenAI;
  let s: TestServer;
  let big: { turns: Array<{ role: string; content: string }> };
  const P = "/v1/projects/budget";

  async function evil(key: string) {
    const r = await call(s.app, "POST", `${P}/graders/binary-judge`, { key, criteria: "x", judgeModel: "m", template: ATTACK });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  }
  const faults = async (key: string) => (await call(s.app, "GET", `${P}/graders/${key}`)).body.recentFaults as number;

  before(async () => {
    fake = await new FakeOpenAI().start();
    s = await startServer({ env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32" }, listen: true });
    // the longest completion the server takes
    big = {
      turns: [
        { role: "user", content: "q" },
        { role: "assistant", content: "&".repeat(s.config.maxContent) },
      ],
    };
    const model = await call(s.app, "POST", `${P}/models`, { key: "m", baseURL: fake.url, model: "judge-1", timeoutMs: 2000 });
    assert.equal(model.status, 201, JSON.stringify(model.body));
  });
  after(async () => {
    await s.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  test("/prompt: 422 GRADER_ERROR naming the budget, one fault", async () => {
    await evil("on-prompt");
    const r = await call(s.app, "POST", `${P}/graders/on-prompt/prompt`, { thread: big });
    assert.equal(r.status, 422);
    assert.equal(r.body.code, "GRADER_ERROR");
    assert.match(r.body.detail, BUDGET);
    assert.equal(await faults("on-prompt"), 1);
    assert.equal(fake.requests.length, 0);
  });

  test("grade-batch of 3: the first item over budget, the others not rendered; one fault; no model call", async () => {
    await evil("on-batch");
    const r = await call(s.app, "POST", `${P}/graders/on-batch/grade-batch`, { threads: [big, big, big] });
    assert.equal(r.status, 200);
    const [first, ...rest] = r.body.results;
    assert.equal(first.error.code, "GRADER_ERROR");
    assert.match(first.error.message, BUDGET);
    for (const result of rest) {
      assert.equal(result.error.code, "GRADER_ERROR");
      assert.match(result.error.message, /not rendered for this thread: an earlier thread of this batch went over its budget of 1,000,000/);
    }
    assert.equal(fake.requests.length, 0);
    assert.equal(await faults("on-batch"), 1, "one fault for the batch, not one per item");
  });

  test("samples at create: 422 VALIDATION_FAILED naming the budget, nothing stored", async () => {
    const r = await call(s.app, "POST", `${P}/graders/binary-judge`, {
      key: "on-create",
      criteria: "x",
      judgeModel: "m",
      template: ATTACK,
      samples: [{ thread: big }, { thread: big }],
    });
    assert.equal(r.status, 422);
    assert.equal(r.body.code, "VALIDATION_FAILED");
    assert.equal(r.body.check, "template");
    assert.match(r.body.message, /fails on sample 0: .*renders more than 1,000,000 characters/);
    assert.equal((await call(s.app, "GET", `${P}/graders/on-create`)).status, 404);
    assert.equal(fake.requests.length, 0);
  });

  test("/reward/score and /reward/batch_score: 422 GRADER_ERROR naming the budget, one fault each", async () => {
    await evil("on-reward");
    const request = { turns: big.turns };
    const one = await call(s.app, "POST", `${P}/graders/on-reward/reward/score`, request);
    assert.equal(one.status, 422);
    assert.equal(one.body.code, "GRADER_ERROR");
    assert.match(one.body.detail, BUDGET);
    const batch = await call(s.app, "POST", `${P}/graders/on-reward/reward/batch_score`, { requests: [request, request, request] });
    assert.equal(batch.status, 422);
    assert.equal(batch.body.code, "GRADER_ERROR");
    assert.equal(batch.body.index, 0);
    assert.match(batch.body.detail, BUDGET);
    assert.equal(await faults("on-reward"), 2);
    assert.equal(fake.requests.length, 0);
  });

  test("three requests over budget in 10 minutes quarantine the judge", async () => {
    await evil("quarantined");
    for (let i = 0; i < 3; i++) {
      const r = await call(s.app, "POST", `${P}/graders/quarantined/grade`, { thread: big });
      assert.equal(r.status, 422);
    }
    const got = await call(s.app, "GET", `${P}/graders/quarantined`);
    assert.ok(got.body.quarantinedAt, "quarantined");
    const refused = await call(s.app, "POST", `${P}/graders/quarantined/grade`, { thread: big });
    assert.equal(refused.status, 423);
    assert.equal(refused.body.code, "GRADER_QUARANTINED");
    assert.match(refused.body.detail, /its template went over its budget 3 times within 10 minutes/);
    // the same judge on a thread it can render is fine once released
    assert.equal((await call(s.app, "POST", `${P}/graders/quarantined/release`)).status, 200);
    const small = {
      turns: [
        { role: "user", content: "q" },
        { role: "assistant", content: "a" },
      ],
    };
    const ok = await call(s.app, "POST", `${P}/graders/quarantined/grade`, { thread: small });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(fake.requests.length, 1);
  });
});

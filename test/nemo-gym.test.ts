// NeMo Gym's resources server per grade token, on a real server on a real port: reached as Gym
// reaches one, at the root of a host (`<token>.gym.<host>`, by the Host header) or under
// /gym/<token>; /verify answers the body it received byte for byte (token ids and log-probs as
// sent) with reward, reward_components (summing to the reward) and our note; /aggregate_metrics
// summarises the verify answers as Gym strips them.

import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, test } from "node:test";
import { call, startServer, type TestServer } from "./support/helpers.ts";
import { pythonJsonDumps } from "./support/trainers.ts";

const ANSWER = `export default async function grade(thread) {
  if (thread.metadata.expected_answer === null) return null;
  const turns = thread.getTurns();
  const ok = thread.completion() === thread.metadata.expected_answer ? 1 : 0;
  return { score: ok, reason: turns.map((t) => t[0]).join(",") + " calls=" + (thread.metadata.tool_calls ?? []).length };
}`;
const BRIEF = `export default async function grade(thread) {
  return (thread.completion() ?? "").length <= 10 ? 1 : 0.5;
}`;

let s: TestServer;
let port: number;
const tokens: Record<string, string> = {};

before(async () => {
  s = await startServer({ listen: true });
  port = Number(new URL(s.url).port);
  const admin = await s.keyFor("gym");
  for (const [key, source] of [
    ["answer", ANSWER],
    ["brief", BRIEF],
  ]) {
    assert.equal((await call(s.app, "POST", "/v1/projects/gym/graders", { key, source })).status, 201);
  }
  const both = await call(s.app, "POST", "/v1/projects/gym/graders/combined", {
    key: "both",
    mode: "weighted",
    graders: [
      { graderKey: "answer", weight: 3 },
      { graderKey: "brief", weight: 1 },
    ],
  });
  assert.equal(both.status, 201, JSON.stringify(both.body));
  for (const grader of ["answer", "both"]) {
    const res = await call(s.app, "POST", `/v1/projects/gym/graders/${grader}/tokens`, {}, { authorization: `Bearer ${admin}` });
    tokens[grader] = res.body.token;
  }
});
after(() => s.close());

/** A POST as Gym's aiohttp client sends it: to http://{host}:{port}{path}, where host may be the token's name. */
function post(host: string, path: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, path, method: "POST", headers: { host: `${host}:${port}`, "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => {
          text += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** A verify body as NeMo-RL sends it: the dataset row's fields, nulls included, the input with a developer turn, the Responses object with token ids. */
function verifyBody(completion: string, expected: string | null, task = 0, rollout = 0) {
  return pythonJsonDumps({
    responses_create_params: {
      input: [
        { role: "developer", content: "Answer with a number only." },
        { role: "user", content: [{ type: "input_text", text: "What is 2+2?" }] },
      ],
      tools: null,
      temperature: "TEMPERATURE",
    },
    response: {
      id: "resp_1",
      object: "response",
      model: "policy",
      output: [
        { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "easy" }] },
        {
          id: "msg_1",
          type: "message",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: completion, annotations: [] }],
          prompt_token_ids: [151644, 872, 198, 3838, 374, 220, 17, 10, 17, 30],
          generation_token_ids: [19, 151645],
          generation_log_probs: ["LOGPROB_A", "LOGPROB_B"],
        },
      ],
    },
    expected_answer: expected,
    category: null,
    _ng_task_index: task,
    _ng_rollout_index: rollout,
  })
    .replace('"LOGPROB_A"', "-0.000123456789012345678901")
    .replace('"LOGPROB_B"', "-1.0e-07")
    .replace('"TEMPERATURE"', "1.0");
}

test("/verify, at <token>.gym.<host>: the body echoed byte for byte, then reward, reward_components and our note", async () => {
  const body = verifyBody("4", "4");
  const res = await post(`${tokens.answer}.gym.gradebox.internal`, "/verify", body);
  assert.equal(res.status, 200, res.text);
  assert.ok(res.text.startsWith(body.slice(0, -1)), "every byte the client sent, in order (token ids, 1.0, -1.0e-07, the long log-prob)");
  assert.ok(res.text.includes("-0.000123456789012345678901") && res.text.includes("-1.0e-07") && res.text.includes('"temperature": 1.0'));
  const answer = JSON.parse(res.text);
  assert.deepEqual(answer.response.output[1].generation_token_ids, [19, 151645]);
  assert.equal(answer.reward, 1);
  assert.deepEqual(answer.reward_components, { answer: 1 });
  assert.deepEqual(answer.gradebox, { outcome: "scored", grader: "answer", version: 1, reason: "system,user,assistant calls=0" });
  assert.equal(answer.category, null, "the row's nulls are kept");
});

test("the same server under /gym/<token>, with Gym's /ng-rollout/<id> prefix; /seed_session answered; a bad token 401", async () => {
  const body = verifyBody("5", "4");
  const res = await post("127.0.0.1", `/gym/${tokens.answer}/ng-rollout/r-17/verify`, body);
  assert.equal(res.status, 200, res.text);
  assert.equal(JSON.parse(res.text).reward, 0);
  const seeded = await post(`${tokens.answer}.gym.localhost`, "/seed_session", pythonJsonDumps({ expected_answer: "4" }));
  assert.deepEqual([seeded.status, JSON.parse(seeded.text)], [200, {}]);
  const refused = await post(`gbr-${"0".repeat(40)}.gym.localhost`, "/verify", body);
  assert.deepEqual([refused.status, JSON.parse(refused.text).code], [401, "UNAUTHORIZED"]);
});

test("a weighted combined grader's components are each part's share, summing to the reward; an abstention gets the fallback", async () => {
  const res = await post(`${tokens.both}.gym.localhost`, "/verify", verifyBody("4 is the answer, clearly", "4"));
  const answer = JSON.parse(res.text);
  assert.equal(typeof answer.reward, "number");
  const sum = Object.values(answer.reward_components as Record<string, number>).reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(sum - answer.reward) <= 1e-5, `${sum} vs ${answer.reward}`);
  assert.deepEqual(answer.reward_components, { answer: 0, brief: 0.125 });
  const abstained = JSON.parse((await post(`${tokens.answer}.gym.localhost`, "/verify", verifyBody("4", null))).text);
  assert.deepEqual([abstained.reward, abstained.reward_components, abstained.gradebox.outcome], [0, { answer: 0 }, "abstained"]);
});

test("/aggregate_metrics: Gym's three blocks from the batch summary, per task and overall", async () => {
  const verified = [];
  for (const [completion, expected, task] of [
    ["4", "4", 0],
    ["5", "4", 0],
    ["4", "4", 1],
    ["4", null, 1],
  ] as const) {
    const answer = JSON.parse((await post(`${tokens.answer}.gym.localhost`, "/verify", verifyBody(completion, expected, task))).text);
    // stripped as Gym's rollout collection strips them before aggregating
    delete answer.response;
    delete answer.responses_create_params;
    verified.push(answer);
  }
  const res = await post(`${tokens.answer}.gym.localhost`, "/aggregate_metrics", JSON.stringify({ verify_responses: verified }));
  assert.equal(res.status, 200, res.text);
  const metrics = JSON.parse(res.text);
  assert.deepEqual(
    metrics.group_level_metrics.map((g: Record<string, unknown>) => [g._ng_task_index, g["mean/reward"], g.count, g.abstained]),
    [
      [0, 0.5, 2, 0],
      [1, 1, 2, 1],
    ],
  );
  assert.equal(metrics.agent_metrics["mean/reward"], 2 / 3, "over the scored results: the abstention's fallback is not a score");
  assert.deepEqual([metrics.agent_metrics.scored, metrics.agent_metrics.abstained, metrics.agent_metrics.errored], [3, 1, 0]);
  assert.equal(metrics.agent_metrics["mean_of_best/reward"], 1);
  assert.ok(Object.keys(metrics.key_metrics).length > 0 && Object.keys(metrics.key_metrics).every((k) => k.startsWith("mean/")));
  const empty = JSON.parse((await post(`${tokens.answer}.gym.localhost`, "/aggregate_metrics", '{"verify_responses": []}')).text);
  assert.deepEqual(empty.group_level_metrics, []);
});

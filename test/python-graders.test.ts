// Python graders end to end, against the real server on a real port: the exact-match grader of
// the function-grader contract registered through HTTP, the SDK (`file: grade.py`), the CLI
// (`gradebox push grade.py`) and the Python client (`create.function(fn=…)`), then graded in
// batches; an update's samples report and a dry run, a version changing language, a pinned and a
// restored version; a lock; a combined grader of Python, TypeScript, judge and endpoint parts;
// the reward routes; errors on their line. Checking and running Python needs the sandbox's Python
// runtime: while a validate of a Python grader is refused, every test here is skipped, saying so.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { promisify } from "node:util";
import { Gradebox, type GradeResult } from "../sdk/index.ts";
import { FakeOpenAI } from "./support/fake-openai.ts";
import { call, repoRoot, startServer, thread } from "./support/helpers.ts";
import { installPythonClient } from "./support/python.ts";
import { RecordingRewards } from "./support/recording-rewards.ts";

const run = promisify(execFile);
const PROJECT = "py";
const P = `/v1/projects/${PROJECT}/graders`;

/** The contract's exact-match grader (without its StringThread import: the annotation is optional). */
const EXACT = `async def grade(thread):
    completion = thread.completion() or ""
    expected = thread.metadata.get("expected", "")
    return 1.0 if completion.strip() == expected.strip() else 0.0
`;
const LENIENT = `async def grade(thread):
    completion = (thread.completion() or "").strip().lower()
    return 1.0 if completion == str(thread.metadata.get("expected", "")).strip().lower() else 0.0
`;
const LENIENT_TS = `async function grade(thread) {
  return (thread.completion() ?? "").trim().toLowerCase() === String(thread.metadata.expected ?? "").trim().toLowerCase() ? 1 : 0;
}
`;
const EXACT_TS = `async function grade(thread) {
  return (thread.completion() ?? "").trim() === String(thread.metadata.expected ?? "").trim() ? 1 : 0;
}
`;
/** a syntax error on line 2 */
const BROKEN = "async def grade(thread):\n    return (1.0\n";
/** raises on line 3 when metadata.boom is set */
const THROWS = 'async def grade(thread):\n    if thread.metadata.get("boom"):\n        raise ValueError("boom")\n    return 1.0\n';

const batch = [
  thread("Paris", { expected: "Paris" }),
  thread("Lyon", { expected: "Paris" }),
  thread(" 4 ", { expected: "4" }),
  thread("x"),
];
const BATCH_SCORES = [1, 0, 1, 0];

const s = await startServer({ listen: true, env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32" } });
const dir = mkdtempSync(join(tmpdir(), "gradebox-python-graders-"));
after(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});
const probe = await call(s.app, "POST", `${P}/validate`, { source: EXACT, language: "python", threads: [batch[0]] });
const skip =
  probe.status === 200 && probe.body.results?.[0]?.score === 1
    ? false
    : `the Python runtime is not on this branch (validating a Python grader answered ${probe.status} ${probe.body?.code ?? ""}: ${probe.body?.detail ?? JSON.stringify(probe.body)})`;

const client = new Gradebox({ baseURL: s.url, project: PROJECT, apiKey: await s.keyFor(PROJECT) });
const scores = (results: GradeResult[]) =>
  results.map((r) => (r.outcome === "scored" ? r.score : r.outcome === "error" ? r.error : r.abstained));

describe("Python graders", { skip }, () => {
  test("registered through HTTP: language python, the source as given; graded in a batch, one by one and through the reward routes", async () => {
    const created = await call(s.app, "POST", P, {
      key: "exact-http",
      source: EXACT,
      language: "python",
      description: "Strict equality between completion and expected answer",
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(
      [created.body.kind, created.body.language, created.body.version, created.body.source],
      ["function", "python", 1, EXACT],
    );
    const graded = await call(s.app, "POST", `${P}/exact-http/grade-batch`, { threads: batch });
    assert.deepEqual([graded.status, scores(graded.body.results)], [200, BATCH_SCORES]);
    const one = await call(s.app, "POST", `${P}/exact-http/grade`, { thread: batch[0] });
    assert.deepEqual([one.status, one.body.score, one.body.version], [200, 1, 1]);

    const info = await call(s.app, "GET", `${P}/exact-http/reward/info`);
    assert.deepEqual([info.body.name, info.body.version], ["exact-http", "1"]);
    const rewards = await call(s.app, "POST", `${P}/exact-http/reward/batch_score`, {
      requests: batch.slice(0, 2).map((t, i) => ({ turns: t.turns, metadata: t.metadata, id: `r${i}` })),
    });
    assert.equal(rewards.status, 200, JSON.stringify(rewards.body));
    assert.deepEqual(
      rewards.body.responses.map((r: { reward: number; id: string }) => [r.id, r.reward]),
      [
        ["r0", 1],
        ["r1", 0],
      ],
    );
  });

  test("registered through the SDK from grade.py: the file's name says python", async () => {
    const file = join(dir, "grade.py");
    writeFileSync(file, EXACT);
    const created = await client.graders.create.function({ key: "exact-sdk", file, description: "from a file" });
    assert.deepEqual([created.language, created.source], ["python", EXACT]);
    assert.deepEqual(scores((await client.graders.gradeBatch({ graderKey: "exact-sdk", threads: batch })).results), BATCH_SCORES);
    const validated = await client.graders.validate({ file, threads: batch });
    assert.deepEqual(scores(validated.results ?? []), BATCH_SCORES);
  });

  test("registered through the CLI: gradebox push grade.py; test and grade; ls and get show python", async () => {
    const file = join(dir, "grade.py");
    writeFileSync(file, EXACT);
    const env = { ...process.env, GRADEBOX_URL: s.url, GRADEBOX_API_KEY: await s.keyFor(PROJECT), GRADEBOX_PROJECT: PROJECT };
    const gradebox = (...args: string[]) => run(process.execPath, [join(repoRoot, "bin/gradebox.js"), ...args], { cwd: repoRoot, env });
    assert.match((await gradebox("push", file, "--key", "exact-cli")).stdout, /✓ created exact-cli \(version 1\) in python/);
    const threads = join(dir, "threads.jsonl");
    writeFileSync(threads, `${batch.map((t) => JSON.stringify(t)).join("\n")}\n`);
    assert.match((await gradebox("test", file, "--threads", threads)).stdout, /all five checks passed[\s\S]*line 1: 1\n[\s\S]*line 2: 0\n/);
    assert.equal((await gradebox("grade", "exact-cli", "--thread", JSON.stringify(batch[0]))).stdout.trim(), "1");
    assert.match((await gradebox("get", "exact-cli")).stdout, /^exact-cli \(function, python, version 1\)[\s\S]*async def grade/);
    assert.match((await gradebox("ls")).stdout, /^exact-cli\s+function\s+python\s/m);
  });

  test("registered through the Python client: create.function(key=…, fn=grade, description=…) from its file", {
    timeout: 120_000,
  }, async () => {
    const venvPython = await installPythonClient(join(dir, "venv-work"));
    const script = join(dir, "register.py");
    writeFileSync(
      script,
      `import json

from gradebox import Gradebox


async def exact_match(thread):
    completion = thread.completion() or ""
    expected = thread.metadata.get("expected", "")
    return 1.0 if completion.strip() == expected.strip() else 0.0


if __name__ == "__main__":
    with Gradebox() as client:
        created = client.graders.create.function(
            key="exact-py", fn=exact_match, description="Strict equality between completion and expected answer"
        )
        graded = client.graders.grade_batch("exact-py", json.loads(${JSON.stringify(JSON.stringify(batch))}))
        print(json.dumps({"created": created, "scores": [r.get("score") for r in graded["results"]]}))
`,
    );
    const { PYTHONPATH: _, ...env } = process.env;
    const out = await run(venvPython, [script], {
      cwd: dir,
      env: { ...env, GRADEBOX_URL: s.url, GRADEBOX_API_KEY: await s.keyFor(PROJECT), GRADEBOX_PROJECT: PROJECT },
    });
    const { created, scores: got } = JSON.parse(out.stdout) as { created: Record<string, string>; scores: number[] };
    assert.equal(created.language, "python");
    assert.match(created.source, /^async def grade\(thread\):\n {4}completion = thread\.completion\(\) or ""\n/);
    assert.doesNotMatch(created.source, /exact_match|import/);
    assert.deepEqual(got, BATCH_SCORES);
  });

  test("versions: a dry run and an update report the samples; a version may change language; pinned and restored versions run in their own", async () => {
    const sample = { thread: thread(" Paris ", { expected: "paris" }) };
    await client.graders.create.function({ key: "evolve", source: EXACT, language: "python", samples: [sample] });
    const dry = await client.graders.update({ graderKey: "evolve", source: LENIENT, dryRun: true });
    assert.deepEqual(
      [dry.dryRun, dry.version, dry.report],
      [true, 1, { samples: 1, changed: [{ index: 0, before: 0, after: 1 }], scores: [{ index: 0, before: 0, after: 1 }] }],
    );
    const second = await client.graders.update({ graderKey: "evolve", source: LENIENT });
    assert.deepEqual([second.version, second.language, second.report.changed.length], [2, "python", 1]);
    const third = await client.graders.update({ graderKey: "evolve", source: LENIENT_TS, language: "typescript" });
    assert.deepEqual(
      [third.version, third.language, third.report],
      [3, "typescript", { samples: 1, changed: [], scores: [{ index: 0, before: 1, after: 1 }] }],
    );
    assert.deepEqual(
      (await client.graders.versions.list({ graderKey: "evolve" })).map((v) => v.language),
      ["python", "python", "typescript"],
    );
    const at = async (version?: number) => (await client.graders.grade({ graderKey: "evolve", thread: sample.thread, version })).score;
    assert.deepEqual([await at(1), await at(2), await at(3)], [0, 1, 1]);
    const restored = await client.graders.versions.restore({ graderKey: "evolve", version: 1 });
    assert.deepEqual([restored.version, restored.language, restored.source], [4, "python", EXACT]);
    assert.equal(await at(), 0);

    // locked: no new version, still grades
    await client.graders.lock({ graderKey: "evolve", locked: true });
    const refused = await call(s.app, "PUT", `${P}/evolve`, { source: LENIENT });
    assert.deepEqual([refused.status, refused.body.code], [409, "GRADER_LOCKED"]);
    assert.equal(await at(), 0);
    await client.graders.lock({ graderKey: "evolve", locked: false });
  });

  test("a combined grader of a Python, a TypeScript, a judge and an endpoint part", async () => {
    const fake = await new FakeOpenAI().start();
    const rewards = await new RecordingRewards().start();
    try {
      fake.fallback = { json: { reasoning: "ok", verdict: "PASS" } };
      await client.graders.create.function({ key: "part-py", source: EXACT, language: "python" });
      await client.graders.create.function({ key: "part-ts", source: EXACT_TS });
      assert.equal((await call(s.app, "POST", `/v1/projects/${PROJECT}/models`, { key: "m", baseURL: fake.url, model: "x" })).status, 201);
      assert.equal(
        (await call(s.app, "POST", `${P}/binary-judge`, { key: "part-judge", criteria: "answers", judgeModel: "m" })).status,
        201,
      );
      assert.equal((await call(s.app, "POST", `${P}/external-endpoint`, { key: "part-ep", url: rewards.url })).status, 201);
      const combined = await client.graders.create.combined({
        key: "mixed",
        mode: "weighted",
        graders: ["part-py", "part-ts", "part-judge", "part-ep"].map((graderKey) => ({ graderKey, weight: 1 })),
      });
      assert.equal(combined.language, undefined);
      const { results } = await client.graders.gradeBatch({ graderKey: "mixed", threads: batch.slice(0, 2) });
      assert.deepEqual(scores(results), [1, 0.5]);
      const wrong = results[1] as { subscores?: Array<{ name: string; value: number }> };
      assert.deepEqual(
        wrong.subscores?.map((p) => [p.name, p.value]),
        [
          ["part-py", 0],
          ["part-ts", 0],
          ["part-judge", 1],
          ["part-ep", 1],
        ],
      );
    } finally {
      await fake.close();
      await rewards.close();
    }
  });

  test("errors on their line: a syntax error refuses the create at line 2; an exception is GRADER_ERROR at line 3", async () => {
    const broken = await call(s.app, "POST", P, { key: "broken", source: BROKEN, language: "python" });
    assert.deepEqual([broken.status, broken.body.code, broken.body.check, broken.body.line], [422, "VALIDATION_FAILED", "syntax", 2]);
    assert.equal(await s.store.get(PROJECT, "broken"), undefined);
    const validated = await call(s.app, "POST", `${P}/validate`, {
      source: THROWS,
      language: "python",
      threads: [thread("x", { boom: true }), thread("y")],
    });
    assert.equal(validated.status, 200, JSON.stringify(validated.body));
    const [error, fine] = validated.body.results;
    assert.deepEqual([error.error.code, error.error.line, fine.score], ["GRADER_ERROR", 3, 1]);
    const sync = await call(s.app, "POST", `${P}/validate`, { source: "def grade(thread):\n    return 1.0\n", language: "python" });
    assert.deepEqual([sync.status, sync.body.code], [422, "VALIDATION_FAILED"], "a sync def grade is refused");
  });
});

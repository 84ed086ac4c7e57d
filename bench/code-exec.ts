// The (code) rows, issue 29: a program of a completion run against tests, fresh state per run.
//
// - a trivial stdin/stdout Python program per run in the worker's Python runner (the interpreter's
//   memory restored before each run: fresh state included), median and p99 ms;
// - the same program run by the machine's CPython as one process per run (`python3` spawned per
//   run): the floor every process-per-run sandbox pays at least;
// - the same in the JavaScript runner (a fresh context per run);
// - an assert-style Python test (MBPP's shape): the program in one interpreter, the tests in a
//   second that calls it by copy, both restored;
// - runs per second on 2 cores through the pool (2 workers): a code grader grading a batch of
//   problems × completions × tests, end to end (program extraction, verdicts, score), the
//   problems a mix of the three test kinds (stdin, assert, call) as datasets publish them.
//
// Standalone: node --no-node-snapshot --import tsx bench/code-exec.ts

import { spawnSync } from "node:child_process";
import { JsRunner } from "../sandbox/code/js-runner.ts";
import { PythonRunner } from "../sandbox/code/python-runner.ts";
import type { RunRequest } from "../sandbox/code/run.ts";
import { SandboxPool } from "../sandbox/host/pool.ts";
import { makeTemplate, releaseTemplate } from "../sandbox/python/template.ts";
import type { WireThread } from "../sdk/thread.ts";
import { pct } from "./latency.ts";
import type { Row } from "./workerd.ts";

const PROGRAM = "a, b = map(int, input().split())\nprint(a + b)\n";
const limits = { cpuMs: 2000, memoryMb: 64, outputBytes: 64 * 1024 };

function timed(n: number, run: (i: number) => void): number[] {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    run(i);
    ms.push(performance.now() - t);
  }
  return ms.sort((a, b) => a - b);
}

export async function codeExecRows({ log, runs = 400, problems = 200 }: { log: (m: string) => void; runs?: number; problems?: number }) {
  const rows: Row[] = [];
  const extra: Record<string, number | string> = {};

  // the Python runner, in this process
  const template = makeTemplate(limits.memoryMb);
  const py = new PythonRunner(template);
  const req = (i: number): RunRequest => ({ language: "python", program: PROGRAM, stdin: `${i} ${i + 1}\n`, limits });
  py.warm();
  timed(20, (i) => py.run(req(i)));
  const pyMs = timed(runs, (i) => {
    const r = py.run(req(i));
    if (r.stdout !== `${2 * i + 1}\n`) throw new Error(`the Python runner answered ${JSON.stringify(r)}`);
  });
  rows.push({ row: "(code) Python run, fresh state (runner)", grader: "a+b stdin/stdout", p50Ms: pct(pyMs, 0.5), p99Ms: pct(pyMs, 0.99) });
  const assertReq = (i: number): RunRequest => ({
    language: "python",
    program: "def add(a, b):\n    return a + b\n",
    after: `assert add(${i}, 1) == ${i + 1}\n`,
    limits,
  });
  py.warm(true);
  timed(20, (i) => py.run(assertReq(i)));
  const assertMs = timed(runs, (i) => {
    const r = py.run(assertReq(i));
    if (!r.completed) throw new Error(`the Python runner's assert test answered ${JSON.stringify(r)}`);
  });
  rows.push({
    row: "(code) Python assert test, two interpreters (runner)",
    grader: "MBPP-style assert line",
    p50Ms: pct(assertMs, 0.5),
    p99Ms: pct(assertMs, 0.99),
  });
  py.dispose();
  releaseTemplate(template);
  log("code: python runner done");

  // python3, one process per run
  const cpython = timed(Math.min(100, runs), (i) => {
    const r = spawnSync("python3", ["-c", PROGRAM], { input: `${i} ${i + 1}\n`, encoding: "utf8" });
    if (r.stdout !== `${2 * i + 1}\n`) throw new Error(`python3 answered ${r.stdout}`);
  });
  rows.push({ row: "(code) python3 spawned per run", grader: "a+b stdin/stdout", p50Ms: pct(cpython, 0.5), p99Ms: pct(cpython, 0.99) });
  log("code: python3 done");

  // the JavaScript runner
  const js = new JsRunner();
  const jsProgram = "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);\nconsole.log(a + b);";
  timed(20, (i) => js.run({ language: "javascript", program: jsProgram, stdin: `${i} ${i + 1}`, limits }));
  const jsMs = timed(runs, (i) => {
    const r = js.run({ language: "javascript", program: jsProgram, stdin: `${i} ${i + 1}`, limits });
    if (r.stdout !== `${2 * i + 1}\n`) throw new Error(`the JavaScript runner answered ${JSON.stringify(r)}`);
  });
  rows.push({
    row: "(code) JavaScript run, fresh context (runner)",
    grader: "a+b stdin/stdout",
    p50Ms: pct(jsMs, 0.5),
    p99Ms: pct(jsMs, 0.99),
  });
  js.dispose();
  log("code: js runner done");

  // runs per second on 2 cores: problems × 8 completions × 10 tests through the pool
  const pool = new SandboxPool({ size: 2, limits: { timeoutMs: 5000, memoryMb: 64, maxWarm: 64, maxWarmHeapMb: 384 } });
  await pool.start();
  const threads: WireThread[] = [];
  const kinds: Record<string, number> = { stdin: 0, assert: 0, call: 0 };
  for (let p = 0; p < problems; p++) {
    // half the problems stdin → stdout (APPS), a quarter MBPP's assert lines, a quarter function calls (fn_name)
    const kind = p % 4 < 2 ? "stdin" : p % 4 === 2 ? "assert" : "call";
    kinds[kind] += 8;
    let metadata: Record<string, unknown>;
    if (kind === "stdin") {
      const inputs = Array.from({ length: 10 }, (_, k) => `${p} ${k}\n`);
      const outputs = Array.from({ length: 10 }, (_, k) => `${p + k}\n`);
      metadata = { input_output: JSON.stringify({ inputs, outputs }) };
    } else if (kind === "assert") {
      metadata = { test_list: Array.from({ length: 10 }, (_, k) => `assert add(${p}, ${k}) == ${p + k}`) };
    } else {
      const inputs = Array.from({ length: 10 }, (_, k) => [p, k]);
      const outputs = Array.from({ length: 10 }, (_, k) => p + k);
      metadata = { input_output: JSON.stringify({ inputs, outputs, fn_name: "add" }) };
    }
    for (let c = 0; c < 8; c++) {
      // one completion in four is wrong on some tests
      const wrong = c % 4 === 3;
      const body =
        kind === "stdin"
          ? wrong
            ? "a, b = map(int, input().split())\nprint(a * b)"
            : PROGRAM
          : `def add(a, b):\n    return ${wrong ? "a * b" : "a + b"}`;
      threads.push({
        turns: [
          { role: "user", content: `Problem ${p}: add two numbers.` },
          { role: "assistant", content: `Here you go.\n\n\`\`\`python\n${body}\n\`\`\`\n` },
        ],
        metadata,
      });
    }
  }
  const grader = { id: "bench-code", project: "bench", language: "code" as const, compiled: JSON.stringify({}) };
  // warm both workers' runners (both interpreters of the assert tests too)
  await pool.gradeBatch(grader, threads.slice(0, 32)); // problems 0–3: stdin, stdin, assert, call
  const started = performance.now();
  const outcomes = await pool.gradeBatch(grader, threads);
  const seconds = (performance.now() - started) / 1000;
  const failed = outcomes.filter((o) => !("score" in o)).length;
  if (failed > 0) throw new Error(`${failed} items did not score: ${JSON.stringify(outcomes.find((o) => !("score" in o)))}`);
  // every right completion scores 1, every wrong one less (the verdicts were really computed)
  const wrongScored = outcomes.filter((o, i) => "score" in o && (i % 4 === 3 ? o.score === 1 : o.score !== 1)).length;
  if (wrongScored > 0) throw new Error(`${wrongScored} items scored against their program`);
  const totalRuns = threads.length * 10;
  rows.push({
    row: `(code) pool, 2 workers: ${problems} problems × 8 completions × 10 tests`,
    grader: `stdin ${kinds.stdin / 8}, assert ${kinds.assert / 8}, call ${kinds.call / 8} problems`,
    itemsPerSec: totalRuns / seconds,
    note: "runs/s",
  });
  await pool.close();
  log("code: pool done");

  extra.codePythonRunP50Ms = +pct(pyMs, 0.5).toFixed(2);
  extra.codePythonRunP99Ms = +pct(pyMs, 0.99).toFixed(2);
  extra.codePython3SpawnP50Ms = +pct(cpython, 0.5).toFixed(2);
  extra.codeJsRunP50Ms = +pct(jsMs, 0.5).toFixed(2);
  extra.codeRunsPerSec2Cores = Math.round(totalRuns / seconds);
  extra.codePythonAssertP50Ms = +pct(assertMs, 0.5).toFixed(2);
  const targets = [
    {
      target: "code: python3 per run ÷ Python runner per run (p50, fresh state)",
      measured: +(pct(cpython, 0.5) / pct(pyMs, 0.5)).toFixed(1),
      limit: 5,
      atLeast: true,
    },
    { target: "code: JavaScript run p50 (ms)", measured: +pct(jsMs, 0.5).toFixed(2), limit: 2, atLeast: false },
  ];
  return { rows, extra, targets };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { rows, extra, targets } = await codeExecRows({ log: (m) => process.stderr.write(`${m}\n`) });
  console.log(JSON.stringify({ rows, extra, targets }, null, 2));
  process.exit(0);
}

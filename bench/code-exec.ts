// The (code) rows, issue 29: a program of a completion run against tests, fresh state per run.
//
// - a trivial stdin/stdout Python program per run in the worker's Python runner (the interpreter's
//   memory restored before each run: fresh state included), median and p99 ms;
// - the same program run by the machine's CPython as one process per run (`python3` spawned per
//   run): the floor every process-per-run sandbox pays at least;
// - the same in the JavaScript runner (a fresh context per run);
// - runs per second on 2 cores through the pool (2 workers): a code grader grading a batch of
//   problems × completions × tests, end to end (program extraction, verdicts, score).
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

export async function codeExecRows({ log, runs = 400, problems = 25 }: { log: (m: string) => void; runs?: number; problems?: number }) {
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
  for (let p = 0; p < problems; p++) {
    const inputs = Array.from({ length: 10 }, (_, k) => `${p} ${k}\n`);
    const outputs = Array.from({ length: 10 }, (_, k) => `${p + k}\n`);
    for (let c = 0; c < 8; c++) {
      // one completion in four is wrong on some tests
      const body = c % 4 === 3 ? "a, b = map(int, input().split())\nprint(a * b)" : PROGRAM;
      threads.push({
        turns: [
          { role: "user", content: `Problem ${p}: print a + b.` },
          { role: "assistant", content: `Here you go.\n\n\`\`\`python\n${body}\n\`\`\`\n` },
        ],
        metadata: { input_output: JSON.stringify({ inputs, outputs }) },
      });
    }
  }
  const grader = { id: "bench-code", project: "bench", language: "code" as const, compiled: JSON.stringify({ tests: "stdin" }) };
  await pool.gradeBatch(grader, threads.slice(0, 16)); // warm both workers' runners
  const started = performance.now();
  const outcomes = await pool.gradeBatch(grader, threads);
  const seconds = (performance.now() - started) / 1000;
  const failed = outcomes.filter((o) => !("score" in o)).length;
  if (failed > 0) throw new Error(`${failed} items did not score: ${JSON.stringify(outcomes.find((o) => !("score" in o)))}`);
  const totalRuns = threads.length * 10;
  rows.push({
    row: `(code) pool, 2 workers: ${problems} problems × 8 completions × 10 tests`,
    grader: "a+b stdin/stdout",
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

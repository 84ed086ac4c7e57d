// The (py) rows, issue 24: Python graders (CPython in WebAssembly inside the same isolates) against
// the same graders in TypeScript through the same engine, and against the machine's own CPython.
//
// - registration p50 of a Python grader (the five checks, over HTTP, on a warm server);
// - the first grade of a cold Python grader (its isolate restored from the worker's snapshot);
// - warm CPU per item inside the isolate, exact-match in Python ÷ the same grader in TypeScript;
// - a ~100 µs Python grader in the isolate ÷ the same function in the machine's CPython, run
//   natively through the same in-sandbox library (sandbox/python/lib), so only the runtime differs;
// - RSS per warm Python grader (distinct graders warmed in the pool's workers).
//
// Standalone: node --no-node-snapshot --import tsx bench/python.ts

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SandboxPool } from "../sandbox/host/pool.ts";
import type { WireThread } from "../sdk/thread.ts";
import { spawnServer } from "../test/support/helpers.ts";
import { GRADERS, makeThreads } from "./corpus.ts";
import { pct } from "./latency.ts";
import type { Row } from "./workerd.ts";

export const PY_GRADERS: Record<string, string> = {
  "exact-match": `from adaptive_harmony import StringThread

async def grade(thread: StringThread) -> float:
    completion = thread.completion() or ""
    expected = thread.metadata.get("expected", "")
    return 1.0 if completion.strip() == str(expected).strip() else 0.0
`,
  // the TypeScript heavy grader's work in Python: six regex scans, token F1 twice, keyword credit
  heavy: `import re
from collections import Counter

CHECKS = [re.compile(p) for p in (r"\\b42\\b", r"(?i)\\b(?:paris|france)\\b", r"(?i)\\b(?:because|therefore|however)\\b", r'"[a-z]+"\\s*:', r"[.!?]\\s+[A-Z]\\w*", r"\\b\\w{8,}\\b")]
PUNCT = re.compile(r"[^\\w\\s]")

def tokens(text):
    return PUNCT.sub(" ", text.lower()).split()

def f1(a, b):
    ta, tb = tokens(a), tokens(b)
    if not ta or not tb:
        return 0.0
    common = sum((Counter(ta) & Counter(tb)).values())
    if common == 0:
        return 0.0
    p, r = common / len(ta), common / len(tb)
    return 2 * p * r / (p + r)

async def grade(thread) -> float:
    completion = thread.completion() or ""
    hits = sum(len(c.findall(completion)) for c in CHECKS)
    expected = str(thread.metadata.get("expected", ""))
    score = f1(completion, expected)
    words = set(tokens(completion))
    keywords = thread.metadata.get("keywords", [])
    kw = sum(1 for k in keywords if k in words) / max(1, len(keywords))
    prompt = "\\n".join(content for _, content in thread.messages())
    relevance = f1(prompt, completion)
    return {"score": (score + kw) / 2, "metadata": {"hits": hits, "words": len(words), "relevance": relevance}}
`,
};

const LIMITS = { timeoutMs: 2000, memoryMb: 128, maxWarm: 64, maxWarmHeapMb: 2048 };

/** CPU µs per item of `source` in the machine's CPython, through the in-sandbox library's own grade(). */
export function nativeCpythonUs(source: string, threads: readonly WireThread[]): number | undefined {
  const dir = mkdtempSync(join(tmpdir(), "gradebox-pybench-"));
  try {
    writeFileSync(join(dir, "threads.json"), JSON.stringify(threads.map((t) => [t.turns.map((x) => [x.role, x.content]), t.metadata])));
    writeFileSync(join(dir, "grader.py"), source);
    const script = `
import json, sys, time
from gradebox import _sandbox
failure = _sandbox.load(open(sys.argv[1] + "/grader.py").read())
assert failure == "", failure
items = [(json.dumps(t), json.dumps(m)) for t, m in json.load(open(sys.argv[1] + "/threads.json"))]
for t, m in items:
    _sandbox.grade(t, m)
n = 0
start = time.process_time()
while time.process_time() - start < 2:
    for t, m in items:
        _sandbox.grade(t, m)
    n += len(items)
print((time.process_time() - start) * 1e6 / n)
`;
    const run = spawnSync("python3", ["-c", script, dir], {
      encoding: "utf8",
      env: { ...process.env, PYTHONPATH: new URL("../sandbox/python/lib", import.meta.url).pathname },
    });
    const us = Number.parseFloat(run.stdout);
    return Number.isFinite(us) ? us : undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function pythonRows({ log, threads }: { log: (m: string) => void; threads: WireThread[] }) {
  const rows: Row[] = [];
  const extra: Record<string, number | string> = {};
  const pool = new SandboxPool({ size: 2, limits: LIMITS });
  await pool.start();
  const isolateCpu = async () => (await pool.stats()).reduce((a, s) => a + s.isolateCpuUs, 0);
  const batch = threads.slice(0, 250);
  /** in-isolate CPU µs per item over `rounds` batches of a warm grader */
  const perItem = async (id: string, compiled: string, language: "typescript" | "python", rounds: number) => {
    const code = { id, project: "bench", compiled, language };
    const warm = await pool.gradeBatch(code, batch);
    const failed = warm.find((r) => "error" in r);
    if (failed) throw new Error(`${id}: ${JSON.stringify(failed)}`);
    const before = await isolateCpu();
    for (let i = 0; i < rounds; i++) await pool.gradeBatch(code, batch);
    return ((await isolateCpu()) - before) / (rounds * batch.length);
  };
  try {
    const compiled: Record<string, string> = {};
    for (const [name, source] of Object.entries(PY_GRADERS)) {
      const v = await pool.validate("bench", source, undefined, { language: "python" });
      if (!v.ok) throw new Error(`${name}: ${v.failure.message}`);
      compiled[name] = v.compiled;
    }
    const ts = await pool.validate("bench", GRADERS["exact-match"]);
    if (!ts.ok) throw new Error(ts.failure.message);
    const tsUs = await perItem("ts-exact", ts.compiled, "typescript", 8);
    const pyUs = await perItem("py-exact", compiled["exact-match"], "python", 8);
    rows.push({ row: "(py) engine, in-isolate CPU", grader: "exact-match (TypeScript)", cpuUsPerItem: { "in isolate": +tsUs.toFixed(2) } });
    rows.push({ row: "(py) engine, in-isolate CPU", grader: "exact-match (Python)", cpuUsPerItem: { "in isolate": +pyUs.toFixed(2) } });
    extra["python.exactMatchOverTypeScript"] = +(pyUs / tsUs).toFixed(2);

    const heavyUs = await perItem("py-heavy", compiled.heavy, "python", 4);
    const nativeUs = nativeCpythonUs(PY_GRADERS.heavy, batch);
    rows.push({ row: "(py) engine, in-isolate CPU", grader: "heavy (Python)", cpuUsPerItem: { "in isolate": +heavyUs.toFixed(1) } });
    if (nativeUs !== undefined) {
      rows.push({ row: "(py) machine's CPython, same library", grader: "heavy (Python)", cpuUsPerItem: { native: +nativeUs.toFixed(1) } });
      extra["python.heavyOverNativeCPython"] = +(heavyUs / nativeUs).toFixed(2);
      extra["python.nativeCPython"] = spawnSync("python3", ["--version"], { encoding: "utf8" }).stdout.trim();
    } else {
      extra["python.heavyOverNativeCPython"] = "python3 not available";
    }

    // RSS per warm Python grader: distinct graders, each warmed by one grade
    const stats = await pool.stats();
    const rssBefore = stats.reduce((a, s) => a + s.rss, 0);
    const warmBefore = stats.reduce((a, s) => a + s.warm, 0);
    for (let i = 0; i < 8; i++) {
      await pool.gradeBatch({ id: `py-mem-${i}`, project: "bench", compiled: `${compiled["exact-match"]}\n# ${i}\n`, language: "python" }, [
        batch[i],
      ]);
    }
    const after = await pool.stats();
    const warm = after.reduce((a, s) => a + s.warm, 0) - warmBefore;
    extra["python.rssPerWarmGraderMB"] = +((after.reduce((a, s) => a + s.rss, 0) - rssBefore) / Math.max(1, warm) / 1024 / 1024).toFixed(1);
    log("python pool rows done");
  } finally {
    await pool.close();
  }

  // registration and the first grade of a cold grader, over HTTP on the real server
  const dir = mkdtempSync(join(tmpdir(), "gradebox-pybench-"));
  const server = await spawnServer({ GRADEBOX_DB: join(dir, "g.db"), GRADEBOX_WORKERS: "2" });
  try {
    const key = readFileSync(join(dir, "default.key"), "utf8").trim();
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${server.url}/v1/projects/default/graders${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    const reg: number[] = [];
    const first: number[] = [];
    for (let i = 0; i < 14; i++) {
      let t0 = performance.now();
      await post("", { key: `py-${i}`, language: "python", source: `${PY_GRADERS["exact-match"]}\n# ${i}\n` });
      reg.push(performance.now() - t0);
      t0 = performance.now();
      await post(`/py-${i}/grade`, { thread: threads[i] });
      first.push(performance.now() - t0);
    }
    // the first registration boots the validation worker's interpreter: a one-off per worker
    extra["python.firstRegistrationMs"] = Math.round(reg[0]);
    extra["python.registrationP50Ms"] = Math.round(pct(reg.slice(2), 0.5));
    extra["python.firstGradeColdP50Ms"] = Math.round(pct(first.slice(2), 0.5));
    log("python HTTP rows done");
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }

  const targets = [
    { target: "Python: registration p50 (ms)", measured: extra["python.registrationP50Ms"] as number, limit: 1000, atLeast: false },
    {
      target: "Python: first grade of a cold grader p50 (ms)",
      measured: extra["python.firstGradeColdP50Ms"] as number,
      limit: 500,
      atLeast: false,
    },
    {
      target: "Python ÷ TypeScript: exact-match, warm in-isolate CPU per item",
      measured: extra["python.exactMatchOverTypeScript"] as number,
      limit: 3,
      atLeast: false,
    },
    {
      target: "Python in the isolate ÷ the machine's CPython: ~100 µs grader",
      measured: extra["python.heavyOverNativeCPython"] as number,
      limit: 2,
      atLeast: false,
    },
    { target: "Python: RSS per warm grader (MB)", measured: extra["python.rssPerWarmGraderMB"] as number, limit: 100, atLeast: false },
  ];
  return { rows, extra, targets };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const log = (m: string) => process.stderr.write(`${m}\n`);
  const { rows, extra, targets } = await pythonRows({ log, threads: makeThreads(500) });
  console.log(JSON.stringify({ rows, extra, targets }, null, 2));
  process.exit(0);
}

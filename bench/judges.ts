// The judge row: judge graders against a model that answers in a fixed 50 ms (bench/judge-model.ts,
// its own process). Throughput of 1,000-thread batches against maxConcurrency / 50 ms, and the
// time Gradebox adds to a judge call: a single grade through the SDK against the same call made
// directly with the openai package from this process, both sequential, in the same run.

import { spawn } from "node:child_process";
import { once } from "node:events";
import OpenAI from "openai";
import type { Gradebox } from "../sdk/index.ts";
import { repoRoot } from "../test/support/helpers.ts";
import { latencies } from "./latency.ts";

const DELAY_MS = 50;
const CONCURRENCY = 32;

export async function judgeRows(client: Gradebox, thread: { turns: Array<{ role: "user" | "assistant"; content: string }> }) {
  const child = spawn(process.execPath, ["--import", "tsx", "bench/judge-model.ts", String(DELAY_MS)], {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const [line] = (await once(child.stdout, "data")) as [Buffer];
    const baseURL = line.toString().trim();
    await client.models.create({ key: "bench-judge", baseURL, model: "fixed", maxConcurrency: CONCURRENCY, timeoutMs: 10_000 });
    await client.graders.create.binaryJudge({ key: "bench-binary", criteria: "answers the question", judgeModel: "bench-judge" });
    const threads = Array.from({ length: 1000 }, () => thread);
    await client.graders.gradeBatch({ graderKey: "bench-binary", threads: threads.slice(0, 64) });
    let items = 0;
    const started = performance.now();
    for (let run = 0; run < 3; run++) {
      const { results } = await client.graders.gradeBatch({ graderKey: "bench-binary", threads });
      items += results.filter((r) => "score" in r).length;
    }
    const itemsPerSec = items / ((performance.now() - started) / 1000);
    const ideal = CONCURRENCY / (DELAY_MS / 1000);

    const direct = new OpenAI({ baseURL, apiKey: "bench", maxRetries: 0 });
    const directCall = () =>
      direct.chat.completions.create({ model: "fixed", messages: [{ role: "user", content: "judge this" }], temperature: 0 });
    const viaGradebox = () => client.graders.grade({ graderKey: "bench-binary", thread });
    const d = await latencies(directCall, 100, 10);
    const g = await latencies(viaGradebox, 100, 10);
    return {
      row: {
        row: `(j) judge gradeBatch, 1,000 threads, model at ${DELAY_MS} ms, maxConcurrency ${CONCURRENCY}`,
        grader: "binary judge",
        itemsPerSec,
        note: `ideal ${ideal} items/s`,
      },
      single: { row: "(j) judge single grade (SDK)", grader: "binary judge", p50Ms: g.p50Ms, p99Ms: g.p99Ms, p999Ms: g.p999Ms },
      directRow: {
        row: "(j₀) the same model called directly (openai package)",
        grader: "",
        p50Ms: d.p50Ms,
        p99Ms: d.p99Ms,
        p999Ms: d.p999Ms,
      },
      extra: {
        judgeBatchRatioToIdeal: +(itemsPerSec / ideal).toFixed(3),
        judgeOverheadP50Ms: +(g.p50Ms - d.p50Ms).toFixed(2),
      },
    };
  } finally {
    child.kill("SIGTERM");
  }
}

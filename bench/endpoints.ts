// The external endpoint row: an endpoint grader against the example reward server
// (examples/reward-server, its own process), 1,000-thread batches through Gradebox, against the
// same server called directly from this process with the same client (undici's fetch), the same
// chunks (/batch_score of 64) and the same concurrency (8), in the same run.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { fetch } from "undici";
import type { Gradebox } from "../sdk/index.ts";
import { repoRoot } from "../test/support/helpers.ts";

const CHUNK = 64;
const CONCURRENCY = 8;
const RUNS = 30;

export async function endpointRows(client: Gradebox) {
  const child = spawn(process.execPath, ["--import", "tsx", "examples/reward-server/server.ts"], {
    cwd: repoRoot,
    env: { ...process.env, PORT: "0" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const [line] = (await once(child.stdout, "data")) as [Buffer];
    const url = /http:\/\/\S+/.exec(line.toString())?.[0] as string;
    await client.graders.create.externalEndpoint({ key: "bench-endpoint", url, batchSize: CHUNK, maxConcurrency: CONCURRENCY });
    const threads = Array.from({ length: 1000 }, (_, i) => ({
      turns: [
        { role: "user" as const, content: `What is ${i} + ${i}?` },
        { role: "assistant" as const, content: String(i * 2) },
      ],
      metadata: { expected: String(i * 2) },
    }));

    const via = async () => (await client.graders.gradeBatch({ graderKey: "bench-endpoint", threads })).results.length;
    const direct = async () => {
      const chunks: (typeof threads)[] = [];
      for (let k = 0; k < threads.length; k += CHUNK) chunks.push(threads.slice(k, k + CHUNK));
      let next = 0;
      let done = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < chunks.length) {
            const chunk = chunks[next++];
            const res = await fetch(`${url}/batch_score`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ requests: chunk.map((t, i) => ({ ...t, id: String(i) })) }),
            });
            done += ((await res.json()) as { responses: unknown[] }).responses.length;
          }
        }),
      );
      return done;
    };
    // alternated run by run, so that drift on a shared machine falls on both alike
    await direct();
    await via();
    const ms = { direct: 0, via: 0 };
    const items = { direct: 0, via: 0 };
    for (let r = 0; r < RUNS; r++) {
      for (const [name, fn] of [
        ["direct", direct],
        ["via", via],
      ] as const) {
        const started = performance.now();
        items[name] += await fn();
        ms[name] += performance.now() - started;
      }
    }
    const directRate = items.direct / (ms.direct / 1000);
    const viaRate = items.via / (ms.via / 1000);
    return {
      rows: [
        { row: "(x) endpoint gradeBatch, 1,000 threads, example reward server", grader: "external endpoint", itemsPerSec: viaRate },
        { row: "(x₀) the same server called directly (undici fetch, same chunks and concurrency)", grader: "", itemsPerSec: directRate },
      ],
      extra: { endpointRatioToDirect: +(viaRate / directRate).toFixed(3) },
    };
  } finally {
    child.kill("SIGTERM");
  }
}

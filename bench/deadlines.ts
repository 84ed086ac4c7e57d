// Batch deadlines (issue 25, point 2): a batch of 1,000 threads with 5 that hang (their grader's
// own limit is 20 s, so only a call's cap or the deadline stops them), graded through the real
// pool under a 1.5 s deadline. Reported: how long after the deadline the answer came (ms;
// negative: before it) and how late this process's own timer at the deadline fired (the
// machine's share of that), how many of the 1,000 were scored (the goal: 995), and how long
// another grader's batch then took (the workers freed). For a new grader (one worker, in order)
// and a trusted one (its batch split across the workers), over a few random placements of the 5
// hanging threads.
//
// Standalone: node --no-node-snapshot --import tsx bench/deadlines.ts

import { SandboxPool } from "../sandbox/host/pool.ts";
import { TRUST_AFTER_JOBS } from "../sandbox/host/trust.ts";
import type { WireThread } from "../sdk/thread.ts";

const LIMITS = { timeoutMs: 20_000, memoryMb: 64, maxWarm: 64, maxWarmHeapMb: 512 };
const HANG = "async function grade(t) { if (t.metadata.hang) for (;;) {} return t.completion().length > 3 ? 1 : 0 }";
const N = 1000;
const HANGS = 5;
const DEADLINE_MS = 1500;
const TRIALS = 5;

/** a small deterministic generator, so every run places the hanging threads alike */
function placements(seed: number): number[] {
  let x = seed;
  const next = () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
  const at = new Set<number>();
  while (at.size < HANGS) at.add(Math.floor(next() * N));
  return [...at].sort((a, b) => a - b);
}

const threadsWith = (hangs: number[]): WireThread[] =>
  Array.from({ length: N }, (_, i) => ({
    turns: [
      { role: "user", content: "q" },
      { role: "assistant", content: "x".repeat(i % 7) },
    ],
    metadata: hangs.includes(i) ? { hang: true } : {},
  }));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function deadlineExtra({ log }: { log: (m: string) => void }): Promise<Record<string, number | string>> {
  const pool = new SandboxPool({ size: 2, limits: LIMITS });
  await pool.start();
  const extra: Record<string, number | string> = {};
  try {
    const v = await pool.validate("bench-deadline", HANG);
    const w = await pool.validate("bench-deadline", "async function grade(t) { return t.completion().length }");
    if (!v.ok || !w.ok) throw new Error("the deadline bench's graders did not validate");
    const other = { id: "deadline-other", project: "bench-deadline", compiled: w.compiled };
    for (const kind of ["new", "trusted"] as const) {
      const late: number[] = [];
      const scored: number[] = [];
      const freed: number[] = [];
      const timerLate: number[] = [];
      for (let t = 0; t < TRIALS; t++) {
        // a new grader each trial, or one made trusted by clean jobs first
        const grader = { id: `deadline-${kind}-${t}`, project: "bench-deadline", compiled: v.compiled };
        if (kind === "trusted") for (let j = 0; j < TRUST_AFTER_JOBS; j++) await pool.gradeBatch(grader, threadsWith([]).slice(0, 2));
        const deadlineAt = Date.now() + DEADLINE_MS;
        // how late this process's own timers fire at the deadline: the machine's share of `late`
        let fired = 0;
        const probe = setTimeout(() => {
          fired = Date.now() - deadlineAt;
        }, DEADLINE_MS);
        const outcomes = await pool.gradeBatch(grader, threadsWith(placements(t + 1)), { deadlineAt });
        late.push(Date.now() - deadlineAt);
        clearTimeout(probe);
        timerLate.push(fired);
        scored.push(outcomes.filter((o) => "score" in o).length);
        const t0 = performance.now();
        const next = await pool.gradeBatch(other, threadsWith([]).slice(0, 200));
        freed.push(performance.now() - t0);
        if (next.some((o) => !("score" in o))) throw new Error("the batch after a deadline did not grade fully");
      }
      log(
        `deadline (${kind} grader): late ${late.join(", ")} ms (timer ${timerLate.join(", ")} ms); scored ${scored.join(", ")} of ${N}; next batch ${freed.map(Math.round).join(", ")} ms`,
      );
      extra[`deadline.${kind}.lateP50Ms`] = median(late);
      extra[`deadline.${kind}.lateMaxMs`] = Math.max(...late);
      extra[`deadline.${kind}.scoredP50`] = median(scored);
      extra[`deadline.${kind}.scoredMin`] = Math.min(...scored);
      extra[`deadline.${kind}.nextBatchP50Ms`] = Math.round(median(freed));
    }
    extra["deadline.restarts"] = pool.restarts;
  } finally {
    await pool.close();
  }
  return extra;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const extra = await deadlineExtra({ log: (m) => process.stderr.write(`${m}\n`) });
  console.log(JSON.stringify(extra, null, 2));
  process.exit(0);
}

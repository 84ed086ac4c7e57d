// One process of the native-scaling floor (floors.ts): grades the corpus natively in a loop for
// the time it is asked to, and answers with how many threads it graded.

import vm from "node:vm";
import { StringThread } from "../sdk/thread.ts";
import { makeThreads } from "./corpus.ts";

const threads = makeThreads(2000);

process.on("message", async ({ compiled, ms }: { compiled: string; ms: number }) => {
  // as row (a) runs it: the compiled grader in this process's own context
  const g = globalThis as Record<string, unknown>;
  g.StringThread = StringThread;
  g.__name = (f: unknown) => f;
  vm.runInThisContext(compiled);
  const grade = g.__gradebox_grade as (t: StringThread) => Promise<unknown>;
  let graded = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    for (const t of threads) await grade(new StringThread(t.turns, t.metadata));
    graded += threads.length;
  }
  process.send?.(graded);
});

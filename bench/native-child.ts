// One process of the native-scaling floor (floors.ts): grades the corpus natively in a loop for
// the time it is asked to, and answers with how many threads it graded.

import { makeThreads } from "./corpus.ts";
import { gradeAll, nativeGrader } from "./native.ts";

const threads = makeThreads(2000);

process.on("message", async ({ compiled, ms }: { compiled: string; ms: number }) => {
  const grade = nativeGrader(compiled);
  let graded = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) graded += await gradeAll(grade, threads);
  process.send?.(graded);
});

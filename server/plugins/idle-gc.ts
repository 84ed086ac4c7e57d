// After a burst of work (large bodies, long prompts) the API's V8 heap keeps the garbage it
// made until more allocation asks for room: in the soak, 20 s after the template class the heap
// was 94 MB used of 249 MB and the process 280 MB over its baseline, and one full collection
// brought the heap to 44 MB. So when the event loop has been mostly idle for a while and the
// heap has grown well past what the last collection left, collect it once: a full collection
// costs time in proportion to what is live (tens of milliseconds here), never during a burst.

import { performance } from "node:perf_hooks";
import v8 from "node:v8";
import vm from "node:vm";
import fp from "fastify-plugin";

const MB = 1024 * 1024;

/** V8's gc(), taken from a context made while --expose-gc was set, then unset again for everything else. */
function exposeGc(): () => void {
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as () => void;
  v8.setFlagsFromString("--no-expose-gc");
  return gc;
}

export interface IdleGcOptions {
  /** how often the loop's use is looked at */
  everyMs?: number;
  /** a collection only while the loop was busy less than this share of the last period */
  idleBelow?: number;
  /** and the heap in use is this much over what the last collection left */
  growthBytes?: number;
}

export const idleGcPlugin = fp<IdleGcOptions>(
  async (app, { everyMs = 2000, idleBelow = 0.1, growthBytes = 64 * MB }) => {
    const gc = exposeGc();
    let floor = process.memoryUsage().heapUsed;
    let last = performance.eventLoopUtilization();
    const timer = setInterval(() => {
      const now = performance.eventLoopUtilization();
      const busy = performance.eventLoopUtilization(now, last).utilization;
      last = now;
      const used = process.memoryUsage().heapUsed;
      if (busy >= idleBelow || used < floor + growthBytes) return;
      const started = performance.now();
      gc();
      floor = process.memoryUsage().heapUsed;
      app.log.debug(
        { beforeMb: Math.round(used / MB), afterMb: Math.round(floor / MB), ms: Math.round(performance.now() - started) },
        "idle heap collected",
      );
    }, everyMs);
    timer.unref();
    app.addHook("onClose", async () => clearInterval(timer));
  },
  { name: "idle-gc" },
);

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

/** The heap as the last collection left it: what is live, and what V8 kept of the heap for it. */
export interface HeapFloor {
  used: number;
  total: number;
}

/**
 * Whether an idle loop's heap is worth a full collection: what is in use grew `growthBytes` past
 * what the last collection left, or V8 holds `growthBytes` more heap than is in use and more than
 * it held after the last collection. The second is a burst V8 collected itself without giving its
 * pages back: after the template class of the soak the heap was 51 MB used of 245 MB, the process
 * 346 MB over its baseline, and nothing in use had grown.
 */
export function worthCollecting(
  now: { busy: number; used: number; total: number },
  floor: HeapFloor,
  { idleBelow, growthBytes }: { idleBelow: number; growthBytes: number },
): boolean {
  if (now.busy >= idleBelow) return false;
  return now.used >= floor.used + growthBytes || (now.total >= now.used + growthBytes && now.total > floor.total + growthBytes);
}

export const idleGcPlugin = fp<IdleGcOptions>(
  async (app, { everyMs = 2000, idleBelow = 0.1, growthBytes = 64 * MB }) => {
    const gc = exposeGc();
    const heap = () => {
      const { heapUsed, heapTotal } = process.memoryUsage();
      return { used: heapUsed, total: heapTotal };
    };
    let floor = heap();
    let last = performance.eventLoopUtilization();
    const timer = setInterval(() => {
      const now = performance.eventLoopUtilization();
      const busy = performance.eventLoopUtilization(now, last).utilization;
      last = now;
      const { used, total } = heap();
      if (!worthCollecting({ busy, used, total }, floor, { idleBelow, growthBytes })) return;
      const started = performance.now();
      gc();
      floor = heap();
      app.log.debug(
        {
          beforeMb: Math.round(used / MB),
          afterMb: Math.round(floor.used / MB),
          heapBeforeMb: Math.round(total / MB),
          heapAfterMb: Math.round(floor.total / MB),
          ms: Math.round(performance.now() - started),
        },
        "idle heap collected",
      );
    }, everyMs);
    timer.unref();
    app.addHook("onClose", async () => clearInterval(timer));
  },
  { name: "idle-gc" },
);

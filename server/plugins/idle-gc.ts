// After a burst of work (large bodies, long prompts) the API's V8 heap keeps the garbage it
// made until more allocation asks for room: in the soak, 20 s after the template class the heap
// was 94 MB used of 249 MB and the process 280 MB over its baseline, and one full collection
// brought the heap to 44 MB. So when the event loop has been mostly idle for a while and the
// heap (or the process) has grown well past what the last collection left, collect it once: a
// full collection costs time in proportion to what is live (tens of milliseconds here), never
// during a burst.
//
// The collection is V8's last-resort one (what V8 does before it gives up on memory), not a plain
// full collection: after the soak's template class the heap was 105 MB but the process held 1,823
// of V8's 256 KB pages (456 MB) that a plain collection leaves pooled, and a young generation
// grown to 128 MB that only a memory-reducing collection shrinks. In a scratch burst of strings
// the process went 434 → 282 MB with gc() and 282 → 60 MB with the last-resort one.

import { performance } from "node:perf_hooks";
import v8 from "node:v8";
import vm from "node:vm";
import fp from "fastify-plugin";

const MB = 1024 * 1024;

/** V8's gc(), taken from a context made while --expose-gc was set, then unset again for everything else. */
function exposeGc(): () => void {
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void;
  v8.setFlagsFromString("--no-expose-gc");
  // several memory-reducing collections, the pooled pages given back, the young generation shrunk
  return () => gc({ type: "major", execution: "sync", flavor: "last-resort" });
}

export interface IdleGcOptions {
  /** how often the loop's use is looked at */
  everyMs?: number;
  /** a collection only while the loop was busy less than this share of the last period */
  idleBelow?: number;
  /** and the heap in use is this much over what the last collection left */
  growthBytes?: number;
}

/** The memory as the last collection left it: what is live, what V8 kept of the heap for it, and the process's resident set. */
export interface HeapFloor {
  used: number;
  total: number;
  rss: number;
}

/**
 * Whether an idle loop's memory is worth a collection: what is in use grew `growthBytes` past what
 * the last collection left; or V8 holds `growthBytes` more heap than is in use and more than it
 * held after the last collection; or the process's resident set grew `growthBytes` past what the
 * last collection left. The second and third are a burst V8 collected itself without giving its
 * pages back: after the template class of the soak the heap was 51 MB used of 105 MB held and the
 * process 388 MB over its baseline, and nothing in use had grown. Each is measured from the last
 * collection's result, so memory a collection cannot give back is not collected for again and again.
 */
export function worthCollecting(
  now: { busy: number } & HeapFloor,
  floor: HeapFloor,
  { idleBelow, growthBytes }: { idleBelow: number; growthBytes: number },
): boolean {
  if (now.busy >= idleBelow) return false;
  return (
    now.used >= floor.used + growthBytes ||
    (now.total >= now.used + growthBytes && now.total > floor.total + growthBytes) ||
    now.rss >= floor.rss + growthBytes
  );
}

export const idleGcPlugin = fp<IdleGcOptions>(
  async (app, { everyMs = 2000, idleBelow = 0.1, growthBytes = 64 * MB }) => {
    const gc = exposeGc();
    const heap = (): HeapFloor => {
      const { heapUsed, heapTotal, rss } = process.memoryUsage();
      return { used: heapUsed, total: heapTotal, rss };
    };
    let floor = heap();
    let last = performance.eventLoopUtilization();
    const timer = setInterval(() => {
      const now = performance.eventLoopUtilization();
      const busy = performance.eventLoopUtilization(now, last).utilization;
      last = now;
      const before = heap();
      if (!worthCollecting({ busy, ...before }, floor, { idleBelow, growthBytes })) return;
      const started = performance.now();
      gc();
      floor = heap();
      app.log.debug(
        {
          beforeMb: Math.round(before.used / MB),
          afterMb: Math.round(floor.used / MB),
          heapBeforeMb: Math.round(before.total / MB),
          heapAfterMb: Math.round(floor.total / MB),
          rssBeforeMb: Math.round(before.rss / MB),
          rssAfterMb: Math.round(floor.rss / MB),
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

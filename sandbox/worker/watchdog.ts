// The watchdog: a thread inside each sandbox worker process that watches the call running on
// the worker's main thread. V8 does not interrupt every built-in (a sort of a huge sparse array
// runs on past any timeout; on Node 24 a heap bomb grows the process far past its isolate's
// limit before V8 gives up), so the only bound that always holds is killing the process. The
// watchdog decides from inside the worker, with the worker's own clock and memory, whose call
// that was: it writes one verdict line to the verdict pipe (fd 4) and then kills the process.
// The pool blames a grader only on such a verdict, never on a timer of its own.
//
// The main thread publishes each call in a shared slot (isolate/slot.ts) before it starts it, with the
// process's RSS at that moment, and the prelude writes the item it is grading there, so a
// verdict names the item. Memory is bounded three ways (memory.ts): a call's growth of the
// process, the process's whole size during a call (its ceiling), and, when idle, what the warm
// isolates explain.

import { readFileSync, writeSync } from "node:fs";
import { isMainThread, workerData } from "node:worker_threads";
import { SLOT } from "../isolate/slot.ts";
import { VERDICT_FD, type Verdict } from "../protocol/replies.ts";
import { hardDeadline } from "../protocol/requests.ts";
import { explainedRss, type MemoryBounds } from "./memory.ts";

export interface WatchdogOptions {
  slot: SharedArrayBuffer;
  /** the isolate memory limit (for the verdict on a call that ran long while filling memory) */
  memoryMb: number;
  /** per call, for the whole process, and when idle (memory.ts) */
  bounds: MemoryBounds;
}

const MB = 1024 * 1024;
const TICK_MS = 10;
const IDLE_CHECK_MS = 1000;
/** extra wall time granted to a call that could not get the CPU (a starved worker is not a guilty one): the total stays within 2× the limit + 1 s */
const STALL_GRACE_MS = 500;

/** CPU time (ms) the worker's main thread has used: the isolate runs on it (applySync). */
function mainThreadCpuMs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in USER_HZ (100)
  } catch {
    return Number.POSITIVE_INFINITY; // no /proc: count all wall time as used
  }
}

function watch({ slot, memoryMb, bounds }: WatchdogOptions): void {
  const s = new Float64Array(slot);
  let seen = -1;
  let rssAtStart = 0;
  let cpuAtStart = 0;
  let lastIdleCheck = 0;
  let recycleSent = false;

  const fire = (v: Verdict, kill: boolean) => {
    try {
      writeSync(VERDICT_FD, `${JSON.stringify(v)}\n`);
    } catch {}
    if (kill) process.kill(process.pid, "SIGKILL");
  };

  setInterval(() => {
    const seq = s[SLOT.seq];
    const running = s[SLOT.running] === 1;
    const call = { job: s[SLOT.job], from: s[SLOT.from], count: s[SLOT.count] };
    const item = s[SLOT.item];
    const startedAt = s[SLOT.startedAt];
    const limitMs = s[SLOT.limitMs];
    const warmHeap = s[SLOT.warmHeap];
    const fixed = s[SLOT.fixed];
    const rssBefore = s[SLOT.rssAtStart];
    if (s[SLOT.seq] !== seq) return; // torn read: look again next tick
    // the prelude's own record of the item it is on, when it lies within the call
    if (call.count > 1 && Number.isInteger(item) && item >= call.from && item < call.from + call.count) {
      call.from = item;
      call.count = 1;
    }
    const now = Date.now();
    if (!running) {
      if (now - lastIdleCheck < IDLE_CHECK_MS) return;
      lastIdleCheck = now;
      const rss = process.memoryUsage.rss();
      if (!recycleSent && (rss > explainedRss(bounds, warmHeap, fixed) || rss > bounds.recycleAt + fixed)) {
        recycleSent = true;
        fire({ verdict: "recycle", rss }, false);
      }
      return;
    }
    const rss = process.memoryUsage.rss();
    if (seq !== seen) {
      seen = seq;
      // the worker's own reading as the call began: a call that grew fast before this first look is still measured from its start
      rssAtStart = rssBefore > 0 ? Math.min(rssBefore, rss) : rss;
      cpuAtStart = mainThreadCpuMs();
    }
    // resident memory only: V8 reserves virtual address space in large, harmless chunks
    const growth = rss - rssAtStart;
    if (growth > bounds.callGrowth) {
      fire({ verdict: "memory", ...call, detail: `the process grew by ${Math.round(growth / MB)} MB during the call` }, true);
      return;
    }
    if (rss > bounds.ceiling + fixed) {
      // calls run back to back without a check between them took the worker here; this one carried it over
      const detail = `the worker reached ${Math.round(rss / MB)} MB during the call, past its ${Math.round((bounds.ceiling + fixed) / MB)} MB ceiling`;
      fire({ verdict: "memory", ...call, detail }, true);
      return;
    }
    const elapsed = now - startedAt;
    if (elapsed > hardDeadline(limitMs)) {
      const cpu = mainThreadCpuMs() - cpuAtStart;
      const detail = `still running after ${elapsed} ms (${Math.round(cpu)} ms of CPU), the process ${Math.round(growth / MB)} MB larger`;
      // a call that made half its isolate's limit newly resident was filling memory, whatever
      // CPU it got; one that spun for half its limit of CPU was spinning; one that did neither
      // was starved by the machine, which is nobody's fault
      if (growth > (memoryMb * MB) / 2) fire({ verdict: "memory", ...call, detail }, true);
      else if (cpu >= limitMs / 2) fire({ verdict: "timeout", ...call, detail }, true);
      else if (elapsed > hardDeadline(limitMs) + STALL_GRACE_MS) fire({ verdict: "stalled", ...call, detail }, true);
    }
  }, TICK_MS);
}

if (!isMainThread && workerData?.slot instanceof SharedArrayBuffer) watch(workerData as WatchdogOptions);

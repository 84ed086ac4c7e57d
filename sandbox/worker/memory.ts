// The memory bounds of a sandbox worker process. isolated-vm's limit covers an isolate's heap
// and the ArrayBuffers its allocator hands out, but not everything a grader can make the
// process hold: Intl objects keep their ICU state in malloc'd memory (about 26 KB per
// DateTimeFormat) that neither the limit nor `externally_allocated_size` sees, and resizable
// ArrayBuffers reserve their pages outside isolated-vm's allocator (both measured). So the
// worker also watches its own resident set, against bounds derived from the two settings
// that size it: the isolate limit (GRADEBOX_MEMORY_MB) and the warm-heap bound
// (GRADEBOX_WARM_HEAP_MB), above the RSS the worker had once ready (its baseline).

import { closeSync, openSync, readSync } from "node:fs";
import type { EngineLimits } from "../protocol/requests.ts";

const MB = 1024 * 1024;

export interface MemoryBounds {
  /** the worker's RSS once it was ready to work */
  baseline: number;
  /** one call may grow the process by this much before the watchdog kills it: 2× the isolate limit + 64 MB */
  callGrowth: number;
  /**
   * one isolate's calls (its module load included) may together leave the process this much
   * larger: the same as one call. An isolate's heap and counted ArrayBuffers stay within its
   * limit, so only memory outside isolated-vm's accounting can take a grader past it.
   */
  retained: number;
  /**
   * between calls, a worker past this is replaced: baseline + the warm-heap bound + idleSlack, what
   * an idle worker may hold, so that with a call's growth on top it stays within what the
   * deployment sizes a worker for (docs/DEPLOY.md: baseline + warm heap + idleSlack + callGrowth)
   */
  recycleAt: number;
  /**
   * during a call, a worker past this is killed and the call blamed: recycleAt + callGrowth. A
   * call starts under recycleAt and may grow by callGrowth, so only calls run back to back
   * without a check between them (a module load and the first call) can get here.
   */
  ceiling: number;
  /** what an idle worker may hold beyond its baseline and warm heap before it asks to be replaced */
  idleSlack: number;
}

export function memoryBounds(limits: Pick<EngineLimits, "memoryMb" | "maxWarmHeapMb">, baseline: number): MemoryBounds {
  const callGrowth = (2 * limits.memoryMb + 64) * MB;
  const idleSlack = Math.max(128, 2 * limits.memoryMb) * MB;
  const recycleAt = baseline + limits.maxWarmHeapMb * MB + idleSlack;
  return { baseline, callGrowth, retained: callGrowth, recycleAt, ceiling: recycleAt + callGrowth, idleSlack };
}

/**
 * RSS a worker's warm isolates explain: past it, memory is held by what is gone or was never
 * counted. `fixed`: what the worker holds for good beyond its baseline (the Python template).
 */
export const explainedRss = (bounds: MemoryBounds, warmHeapBytes: number, fixed = 0) =>
  bounds.baseline + fixed + warmHeapBytes + bounds.idleSlack;

let statm: number | undefined;
const buffer = Buffer.alloc(128);
let pageSize = 0;

/**
 * The process's resident set in bytes. Read twice per isolate call, so it rereads one open
 * /proc/self/statm (about 2 µs) rather than opening /proc/self/stat each time as
 * process.memoryUsage.rss() does (about 9 µs).
 */
export function residentBytes(): number {
  if (statm === undefined) {
    try {
      statm = openSync("/proc/self/statm", "r");
      const pages = readPages(statm);
      // statm counts pages; calibrate their size once against Node's own figure (4 KiB on x86-64, up to 64 KiB on arm64)
      pageSize = 2 ** Math.round(Math.log2(process.memoryUsage.rss() / pages));
    } catch {
      if (statm !== undefined) closeSync(statm);
      statm = -1;
    }
  }
  if (statm < 0) return process.memoryUsage.rss();
  return readPages(statm) * pageSize;
}

/** statm's second field: resident pages */
function readPages(fd: number): number {
  const n = readSync(fd, buffer, 0, buffer.length, 0);
  const text = buffer.toString("latin1", 0, n);
  const at = text.indexOf(" ") + 1;
  const pages = Number(text.slice(at, text.indexOf(" ", at)));
  if (!Number.isFinite(pages) || pages <= 0) throw new Error("unreadable /proc/self/statm");
  return pages;
}

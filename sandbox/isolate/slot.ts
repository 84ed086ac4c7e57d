// The call slot: shared memory in which a worker announces the isolate call running now, read
// by its watchdog thread (worker/watchdog.ts). The prelude inside each isolate writes one field of it,
// the item it is grading, so a verdict names the very item that ran away.

/** Field indexes of the slot's Float64Array. */
export const SLOT = {
  /** bumped before and after every write of a call's fields (a seqlock: a read is good if it saw the same value twice) */
  seq: 0,
  running: 1,
  job: 2,
  /** the call's first item, as an index into the job's batch */
  from: 3,
  count: 4,
  startedAt: 5,
  limitMs: 6,
  /** bytes of heap held by this worker's warm isolates (for the idle recycle check) */
  warmHeap: 7,
  /** written by the prelude: the item it started grading last */
  item: 8,
  /** the process RSS just before the call started (the watchdog's first look may come up to a tick later) */
  rssAtStart: 9,
  /**
   * bytes the worker holds for good beyond its baseline that are no warm isolate's (the Python
   * template): its memory bounds move up by them
   */
  fixed: 10,
  size: 11,
} as const;

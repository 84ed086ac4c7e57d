// A sandbox worker process: owns an Engine (and so every isolate) and answers the pool's
// requests one at a time. Its watchdog thread (watchdog.ts) bounds every isolate call in time
// and memory by killing this process, after naming the call it killed for. If V8 aborts this
// process on an out-of-memory path, only this process dies; the pool replaces it. A reply with
// `retire` asks the pool to replace this worker: it holds more memory than it should.

import { Worker } from "node:worker_threads";
import { SLOT } from "../isolate/slot.ts";
import type { PackedBatch } from "../protocol/batch.ts";
import type { WorkerHello, WorkerReply } from "../protocol/replies.ts";
import { type EngineLimits, LIMITS_ENV, ROLE_ENV, type WorkerNotice, type WorkerRequest } from "../protocol/requests.ts";
import { Engine } from "./engine.ts";
import { memoryBounds, residentBytes } from "./memory.ts";
import type { WatchdogOptions } from "./watchdog.ts";

if (!process.send) {
  console.error("sandbox/worker/worker.ts is started by the server's sandbox pool, not by hand");
  process.exit(2);
}
const channel = process.send.bind(process);
// The pool may close the channel while a reply is on its way (shutdown): drop it quietly.
const send = (message: WorkerReply | WorkerHello) => {
  if (process.connected) channel(message, undefined, {}, () => {});
};
const limits = JSON.parse(process.env[LIMITS_ENV] ?? "") as EngineLimits;

const slotBuffer = new SharedArrayBuffer(SLOT.size * Float64Array.BYTES_PER_ELEMENT);
const slot = new Float64Array(slotBuffer);
/** the request whose calls are running now: the watchdog's verdict names it */
let currentJob = 0;
const watch = {
  begin(from: number, count: number, limitMs: number, rss: number) {
    slot[SLOT.seq]++;
    slot[SLOT.job] = currentJob;
    slot[SLOT.from] = from;
    slot[SLOT.count] = count;
    slot[SLOT.startedAt] = Date.now();
    slot[SLOT.limitMs] = limitMs;
    slot[SLOT.item] = -1;
    slot[SLOT.rssAtStart] = rss;
    slot[SLOT.running] = 1;
    slot[SLOT.seq]++;
  },
  end() {
    slot[SLOT.seq]++;
    slot[SLOT.running] = 0;
    slot[SLOT.seq]++;
  },
};

// the validation worker needs the TypeScript compiler for every request: load it before the
// baseline the memory bounds are measured from, so it counts as this worker's own
if (process.env[ROLE_ENV] === "validate") await import("../validate/analyze.ts");
const bounds = memoryBounds(limits, residentBytes());
const engine = new Engine(limits, {
  watch,
  progress: slotBuffer,
  onWarmHeap: (bytes) => (slot[SLOT.warmHeap] = bytes),
  onFixed: (bytes) => (slot[SLOT.fixed] = bytes),
  bounds,
});

/** the last batch the pool sent: it sends a later slice of the same batch without it */
let held: { id: number; batch: PackedBatch } | undefined;

async function handle(req: WorkerRequest): Promise<WorkerReply> {
  currentJob = req.id;
  switch (req.op) {
    case "grade": {
      if (req.batch) held = { id: req.batchId, batch: req.batch };
      else if (held?.id !== req.batchId) throw new Error(`the worker was sent a slice of batch ${req.batchId} without it, and holds none`);
      return { id: req.id, op: "grade", ...engine.gradeSlice(req.grader, held.batch, req.from, req.options) };
    }
    case "validate":
      return {
        id: req.id,
        op: "validate",
        result: await engine.validate(req.source, { mock: req.mock, language: req.language }),
        // a parse ran past its deadline and esbuild is still at it, or the worker holds too much memory: it is to be replaced
        ...(engine.spent || engine.overgrown ? { retire: true } : {}),
      };
    case "stats":
      return {
        id: req.id,
        op: "stats",
        warm: engine.warmCount,
        warmHeapBytes: engine.warmHeapBytes,
        evictions: engine.evictions,
        isolateCpuUs: engine.isolateCpuUs,
        rss: process.memoryUsage.rss(),
      };
  }
}

process.on("message", (msg: WorkerRequest | WorkerNotice) => {
  if (msg.op === "forget") {
    engine.forget(msg.ids);
    return;
  }
  handle(msg).then(
    (reply) => send(reply),
    (error: unknown) => send({ id: msg.id, op: "failed", message: error instanceof Error ? error.message : String(error) }),
  );
});
// The server died or closed the channel: nothing is left to answer.
process.on("disconnect", () => {
  engine.dispose();
  // an exit straight after disposing isolates that ran wasm crashed about one run in two (measured
  // in the Python runtime's spike); a moment's pause lets isolated-vm's threads finish with them
  setTimeout(() => process.exit(0), 50);
});

// compiled by `make build`, this file and its watchdog are JavaScript (see host/supervisor.ts)
const watchdogEntry = import.meta.url.endsWith(".js")
  ? new URL("./watchdog.js", import.meta.url)
  : new URL("./watchdog.ts", import.meta.url);
const watchdog = new Worker(watchdogEntry, {
  workerData: { slot: slotBuffer, memoryMb: limits.memoryMb, bounds } satisfies WatchdogOptions,
});
watchdog.unref();
watchdog.on("error", (error) => {
  // without its watchdog a worker must not grade: the pool replaces it
  console.error(`sandbox watchdog failed: ${error.message}`);
  process.exit(70);
});
watchdog.once("online", () => send({ op: "ready", pid: process.pid } satisfies WorkerHello));

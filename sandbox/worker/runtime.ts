// One isolate with one grader loaded into it (Runtime): the prelude first, then the grader's
// module inside a wrapper whose catch the prelude formats. A call crosses in with strings and
// numbers and out with one string, read strictly (reply-reader.ts); isolated-vm's failures
// become grader error codes; an error's position in grader.js is mapped back to the user's
// source. With the worker's memory bounds (memory.ts) every call's growth of the process is
// charged to the isolate. The engine (engine.ts) keeps these warm and runs batches on them.

import v8 from "node:v8";
import { originalPositionFor, TraceMap } from "@jridgewell/trace-mapping";
import ivm from "isolated-vm";
import type { PackedBatch } from "../protocol/batch.ts";
import { type EngineLimits, timeLeft } from "../protocol/requests.ts";
import type { GradeErrorCode, GraderShape } from "../validate/checks.ts";
import { loadPrelude, splitCompiled } from "../validate/compile.ts";
import { type MemoryBounds, residentBytes } from "./memory.ts";
import { type DecodedReply, decodeReply, ReplyViolation } from "./reply-reader.ts";

/** Where the engine announces each isolate call, so the worker's watchdog can bound it. */
export interface CallWatch {
  /** `rss`: the process's resident bytes as the call starts (0 when not measured) */
  begin(from: number, count: number, limitMs: number, rss: number): void;
  end(): void;
}
export const UNWATCHED: CallWatch = { begin() {}, end() {} };

export interface EngineHooks {
  watch?: CallWatch;
  /** shared memory (isolate/slot.ts) each isolate's prelude writes the item it is grading into */
  progress?: SharedArrayBuffer;
  /** told the heap bytes of warm isolates whenever they change */
  onWarmHeap?: (bytes: number) => void;
  /** told the bytes the worker holds for good beyond its baseline that are no isolate's (the Python template) */
  onFixed?: (bytes: number) => void;
  /**
   * the worker's memory bounds (memory.ts): with them, every call's growth of the process is
   * charged to its isolate, and the engine says when the worker should be replaced
   */
  bounds?: MemoryBounds;
}

export class GraderError extends Error {
  constructor(
    readonly code: GradeErrorCode,
    message: string,
    /** the grader is blamed for it as for taking its worker down (a fault), not only for the item */
    readonly fault = false,
  ) {
    super(message);
  }
}

/**
 * A call (or a module's load) stopped by the batch's deadline, not by the grader's own limit:
 * its item abstains, and nobody is blamed (no fault, no trust lost, no culprit hunt).
 */
export class DeadlineStop extends Error {
  constructor() {
    super("the batch's deadline came while this call ran");
  }
}

/**
 * A call stopped by its cap under a deadline (SliceOptions.setAside), before the grader's own
 * limit and the deadline: its unit is set aside to be retried alone, and nobody is blamed.
 */
export class CapStop extends Error {
  constructor() {
    super("the call ran past its share of the time left before the batch's deadline");
  }
}

/** How long a look at what a call cut short by its deadline finished may take: it reads a string the prelude built. */
const SALVAGE_MS = 20;

const MB = 1024 * 1024;
/** Why a grader's isolate was disposed for what it kept: the bound and what counts towards it. */
export function retainedMessage(retained: number, bounds: MemoryBounds, memoryMb: number): string {
  return (
    `its calls left the sandbox worker ${Math.round(retained / MB)} MB larger than its heap explains, past the ${Math.round(bounds.retained / MB)} MB ` +
    `a grader may keep outside its heap (2× the ${memoryMb} MB memory limit + 64 MB), so its isolate was disposed. ` +
    "Intl objects and resizable ArrayBuffers live outside the heap: make formatters once, at module level, rather than keeping new ones"
  );
}

const preludeSource = loadPrelude();

/** Heap bytes of a warm isolate are re-measured after its first call and every this many. */
const MEASURE_EVERY = 32;

/**
 * The grader's module runs inside this wrapper: whatever it throws is formatted by the prelude
 * under the time limit, and no error object of grader code ever crosses to the host.
 */
const wrapModule = (compiled: string) =>
  `(function () {\n"use strict";\ntry {\n${compiled}\n} catch (error) {\nglobalThis.__gradebox_load_failed(error);\n}\n})();\n`;
/** where wrapModule puts the compiled script: lines before it (0-based line), columns before it on its first line */
const WRAPPED_AT = ((wrapped: string[]) => {
  const line = wrapped.findIndex((l) => l.includes("\0"));
  return { line, column: wrapped[line].indexOf("\0") };
})(wrapModule("\0").split("\n"));

/**
 * How a grader's code becomes the prelude's `__gradebox_grade`, around the prelude's one batch
 * runner and reply encoder: a compiled script (TypeScript, SCRIPT_LOADER) or a language runtime
 * that starts before the prelude and loads the source itself (python/loader.ts).
 */
export interface ModuleLoader {
  /** the isolate's memory limit (MB) */
  isolateMb(limits: EngineLimits): number;
  /** error positions are in grader.js and map to the source through its source map; else they are the source's own */
  mapsPositions: boolean;
  /** runs in the fresh context before the prelude */
  prepare?(isolate: ivm.Isolate, context: ivm.Context, limits: EngineLimits): void;
  /**
   * runs after the prelude and before any grader code, outside the grader's time limit and the
   * watchdog: trusted start-up work of the language's own (the Python interpreter's first call)
   */
  start?(isolate: ivm.Isolate, context: ivm.Context): void;
  /** runs the module, under the time limit; its failure is what the prelude's install then reports */
  load(isolate: ivm.Isolate, context: ivm.Context, script: string, limits: EngineLimits): void;
  /** bytes the isolate holds that isolated-vm's heap statistics leave out */
  extraBytes?(): number;
  /** true when, after this reply, the isolate is not to be used again (a Python interpreter that ran out of memory) */
  spent?(reply: DecodedReply): boolean;
}

/** A bundled TypeScript grader: its script runs inside the wrapper, whose catch the prelude formats. */
export const SCRIPT_LOADER: ModuleLoader = {
  isolateMb: (limits) => limits.memoryMb,
  mapsPositions: true,
  load(isolate, context, script, limits) {
    isolate.compileScriptSync(wrapModule(script), { filename: "grader.js" }).runSync(context, { timeout: limits.timeoutMs });
  },
};

/** An isolate's heap and the external bytes isolated-vm counts against its limit. */
function heapOf(isolate: ivm.Isolate): number {
  const heap = isolate.getHeapStatisticsSync();
  return heap.total_heap_size + heap.externally_allocated_size;
}

/** A live isolate with a grader loaded into it. */
export class Runtime {
  readonly isolate: ivm.Isolate;
  private readonly context: ivm.Context;
  private readonly fns: { install: ivm.Reference; run: ivm.Reference; collect: ivm.Reference };
  heapBytes = 0;
  calls = 0;
  /** its loader says it is not to be used again (a Python interpreter that ran out of memory): the engine disposes it */
  spent = false;
  /** which of grade and gradeGroup the module exports, as the prelude found them */
  readonly shape: GraderShape;
  /**
   * Bytes the process grew by over this isolate's calls (its module load included) that its
   * heap does not explain: memory it holds outside isolated-vm's accounting. See account().
   */
  retained = 0;
  /** the isolate's heap (and counted external) bytes when `retained` was last corrected by them */
  private heapAtCharge = 0;
  /** V8's gc() in a second context of this isolate, made at the first sweep; null where it cannot be had */
  private collector: ivm.Reference | null | undefined;
  /** the grader's source map (base64 JSON), parsed at its first error with a position */
  private readonly mapText: string | undefined;
  private sourceMap: TraceMap | null | undefined;

  /**
   * Throws GraderError(GRADER_*) when the module body fails, times out or runs out of memory;
   * DeadlineStop when `deadlineAt` (a Date.now()) came first: the module's load is cut to it.
   */
  constructor(
    code: string,
    private readonly limits: EngineLimits,
    { watch = UNWATCHED, progress, bounds }: EngineHooks,
    private readonly loader: ModuleLoader = SCRIPT_LOADER,
    deadlineAt?: number,
  ) {
    this.isolate = new ivm.Isolate({ memoryLimit: loader.isolateMb(limits) });
    const { script, map } = loader.mapsPositions ? splitCompiled(code) : { script: code, map: undefined };
    this.mapText = map;
    try {
      this.context = this.isolate.createContextSync();
      loader.prepare?.(this.isolate, this.context, limits);
      this.isolate.compileScriptSync(preludeSource, { filename: "gradebox:prelude" }).runSync(this.context);
      const host = this.context.global.getSync("__gradebox_host", { reference: true });
      this.fns = {
        install: host.getSync("install", { reference: true }),
        run: host.getSync("run", { reference: true }),
        collect: host.getSync("collect", { reference: true }),
      };
      if (progress) {
        host.getSync("progress", { reference: true }).applySync(undefined, [new ivm.ExternalCopy(progress).copyInto({ release: true })]);
      }
      this.context.global.deleteSync("__gradebox_host");
      loader.start?.(this.isolate, this.context);
      let failure: unknown;
      if (bounds) this.heapAtCharge = this.heapNow();
      const before = bounds ? residentBytes() : 0;
      // the watchdog keeps the grader's own limit: a load past it is the grader's, deadline or not
      watch.begin(0, 0, limits.timeoutMs, before);
      try {
        let left = timeLeft(limits.timeoutMs, deadlineAt);
        failure = this.guard(
          () => {
            loader.load(this.isolate, this.context, script, left.cut ? { ...limits, timeoutMs: left.ms } : limits);
            left = timeLeft(limits.timeoutMs, deadlineAt);
            return this.fns.install.applySync(undefined, [], { timeout: left.ms });
          },
          () => left.cut,
        );
      } finally {
        watch.end();
      }
      if (bounds && this.account(residentBytes() - before, bounds)) {
        throw new GraderError("GRADER_MEMORY_LIMIT", retainedMessage(this.retained, bounds, limits.memoryMb), true);
      }
      if (typeof failure !== "string") throw new GraderError("GRADER_ERROR", "the module's loader answered in an unknown form");
      if (failure !== "thread" && failure !== "group" && failure !== "both") throw new GraderError("GRADER_ERROR", failure);
      this.shape = failure;
      this.measure();
    } catch (error) {
      this.dispose();
      throw error;
    }
  }

  /**
   * Maps isolated-vm's failures to grader error codes; `cut`: its time limit was the deadline's,
   * so a timeout is a DeadlineStop; `capped`: it was the call's cap, so a timeout is a CapStop.
   */
  guard<T>(fn: () => T, cut: () => boolean = () => false, capped: () => boolean = () => false): T {
    try {
      return fn();
    } catch (error) {
      if (error instanceof GraderError || error instanceof ReplyViolation || error instanceof DeadlineStop || error instanceof CapStop)
        throw error;
      if (this.isolate.isDisposed) {
        throw new GraderError("GRADER_MEMORY_LIMIT", `exceeded the ${this.limits.memoryMb} MB memory limit`);
      }
      // isolated-vm's own message; errors of grader code never reach here as objects
      if (error instanceof Error && error.message === "Script execution timed out.") {
        if (cut()) throw new DeadlineStop();
        if (capped()) throw new CapStop();
        // near its heap limit V8 collects garbage again and again: time runs out on a memory hog
        if (this.heapNearlyFull()) throw new GraderError("GRADER_MEMORY_LIMIT", `exceeded the ${this.limits.memoryMb} MB memory limit`);
        throw new GraderError("GRADER_TIMEOUT", `exceeded the ${this.limits.timeoutMs} ms time limit`);
      }
      const message = error instanceof Error ? `${error.name}: ${error.message}` : "the sandbox call failed";
      throw new GraderError("GRADER_ERROR", message.slice(0, 2000));
    }
  }

  /**
   * One crossing in, one out: grades from `from` on, until the prelude's time slice ends.
   * Without a batch, the isolate grades the one it loaded last. Before `deadlineAt` (a
   * Date.now()), each crossing's time limit is cut to what is left of it; a crossing stopped by
   * that cut throws DeadlineStop (see salvage). With `capAt` (a Date.now() before the deadline)
   * it is cut to that, and a crossing stopped there throws CapStop; the prelude's own time slice
   * is then half of the cap, so the call usually returns on its own first and the unit a cap
   * stops has run for at least half of it.
   */
  call(batch: PackedBatch | undefined, from: number, maxItems: number, deadlineAt?: number, capAt?: number): DecodedReply {
    let left = timeLeft(this.limits.timeoutMs, deadlineAt, capAt);
    return this.guard(
      () => {
        const sliceMs = maxItems === 1 ? 0 : left.capped ? Math.min(this.limits.timeoutMs, left.ms) / 2 : this.limits.timeoutMs / 2;
        const args = [batch?.head ?? "", batch?.text ?? "", from, maxItems, sliceMs];
        this.fns.run.applySync(undefined, args, { timeout: left.ms });
        left = timeLeft(this.limits.timeoutMs, deadlineAt, capAt);
        const reply = this.fns.collect.applySync(undefined, [], { timeout: left.ms });
        if (++this.calls % MEASURE_EVERY === 1) this.measure();
        return this.locate(decodeReply(reply, maxItems));
      },
      () => left.cut,
      () => left.capped,
    );
  }

  /**
   * After a call the deadline or its cap cut short: the items it finished before that (the prelude keeps
   * their records as it goes), read as strictly as any reply; undefined when there is nothing
   * to read. The isolate is to be disposed after this: grader code was stopped mid-item.
   */
  salvage(maxItems: number): DecodedReply | undefined {
    if (this.isolate.isDisposed) return undefined;
    try {
      return this.placed(decodeReply(this.fns.collect.applySync(undefined, [], { timeout: SALVAGE_MS }), maxItems));
    } catch {
      return undefined;
    }
  }

  /** Errors carry positions in grader.js out of the isolate: map them to the user's source, or drop them. */
  private locate(reply: DecodedReply): DecodedReply {
    if (this.loader.spent?.(reply)) this.spent = true;
    return this.placed(reply);
  }

  private placed(reply: DecodedReply): DecodedReply {
    if (!this.loader.mapsPositions) return reply;
    const outcomes = reply.outcomes;
    for (let k = 0; k < outcomes.length; k++) {
      const outcome = outcomes[k];
      if (!("error" in outcome) || outcome.error.line === undefined) continue;
      const { code, message, line, column = 0 } = outcome.error;
      const at = this.sourcePosition(line, column);
      outcomes[k] = { error: at ? { code, message, line: at.line, column: at.column } : { code, message } };
    }
    return reply;
  }

  /** A 1-based line and column in grader.js as a 1-based line and column in the user's source. */
  private sourcePosition(line: number, column: number): { line: number; column: number } | undefined {
    if (this.sourceMap === undefined) this.sourceMap = parseSourceMap(this.mapText);
    if (this.sourceMap === null) return undefined;
    const generatedLine = line - WRAPPED_AT.line;
    const generatedColumn = (generatedLine === 1 ? column - WRAPPED_AT.column : column) - 1;
    if (generatedLine < 1 || generatedColumn < 0) return undefined;
    const at = originalPositionFor(this.sourceMap, { line: generatedLine, column: generatedColumn });
    if (at.line === null || at.column === null) return undefined;
    return { line: at.line, column: at.column + 1 };
  }

  private heapNearlyFull(): boolean {
    try {
      const heap = this.isolate.getHeapStatisticsSync();
      return heap.used_heap_size + heap.externally_allocated_size >= 0.8 * this.loader.isolateMb(this.limits) * MB;
    } catch {
      return false;
    }
  }

  /**
   * Charges a call's growth of the process to this isolate; true when what it holds outside its
   * heap is past the bound. The heap (and the ArrayBuffers isolated-vm counts) is within the
   * isolate's limit already, so once the charge is worth a look (a quarter of the bound) the
   * heap's own growth is taken off it; for most isolates that look never happens.
   *
   * V8 does not see the memory behind Intl objects or resizable ArrayBuffers either: an isolate
   * that makes them per item and drops them piles up garbage far past its heap's size before
   * anything collects it (800 MB for 34,000 DateTimeFormats, measured). So an isolate charged
   * that much has its garbage collected after each call, and what the collection gives back
   * to the process is taken off the charge; what it frees into malloc is reused by the next
   * calls rather than added to. Only an isolate that keeps what it makes reaches the bound.
   */
  account(growth: number, bounds: MemoryBounds): boolean {
    this.retained += growth;
    if (this.retained <= bounds.retained / 4 || this.isolate.isDisposed) return false;
    this.offHeap();
    if (this.retained <= bounds.retained / 4) return false;
    const before = residentBytes();
    this.sweep();
    this.retained += residentBytes() - before;
    this.offHeap();
    return this.retained > bounds.retained;
  }

  /** Takes the heap's growth since the last look off the charge. */
  private offHeap(): void {
    const now = this.heapNow();
    this.retained -= now - this.heapAtCharge;
    this.heapAtCharge = now;
  }

  private sweep(): void {
    if (this.collector === undefined) this.collector = this.makeCollector();
    try {
      this.collector?.applySync(undefined, [], { timeout: this.limits.timeoutMs });
    } catch {
      // a collection that fails changes nothing the next call's accounting does not see
    }
  }

  /**
   * V8 installs gc() only in contexts made while --expose-gc is set. Set just for this context,
   * which the host alone holds: the grader's context, made before, never has it, and one
   * collection covers the whole isolate's heap.
   */
  private makeCollector(): ivm.Reference | null {
    let context: ivm.Context;
    try {
      v8.setFlagsFromString("--expose-gc");
      try {
        context = this.isolate.createContextSync();
      } finally {
        v8.setFlagsFromString("--no-expose-gc");
      }
      const gc = context.global.getSync("gc", { reference: true });
      return gc.typeof === "function" ? gc : null;
    } catch {
      return null;
    }
  }

  measure(): void {
    if (this.isolate.isDisposed) return;
    this.heapBytes = this.heapNow();
  }

  /** The isolate's heap and counted external bytes, and what its loader holds beside them (a Python interpreter's wasm memory). */
  private heapNow(): number {
    return heapOf(this.isolate) + (this.loader.extraBytes?.() ?? 0);
  }

  dispose(): void {
    if (!this.isolate.isDisposed) this.isolate.dispose();
  }
}

/** A compiled grader's source map, or null when it has none or it cannot be read. */
function parseSourceMap(base64: string | undefined): TraceMap | null {
  if (base64 === undefined) return null;
  try {
    return new TraceMap(Buffer.from(base64, "base64").toString("utf8"));
  } catch {
    return null;
  }
}

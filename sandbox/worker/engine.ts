// The engine: owns isolates inside one sandbox worker process. One isolate per grader, kept
// warm in an LRU map bounded by count and by heap bytes, rebuilt after any disposal. Only
// strings and numbers cross into an isolate (a batch crosses packed, see protocol/batch.ts) and
// one string crosses out (isolate/reply.ts), read strictly (reply-reader.ts); the References the host keeps point at
// trusted prelude functions. With the worker's memory bounds (memory.ts) every call's growth of
// the process is charged to its isolate: one that keeps too much outside its heap is disposed
// and blamed, and a worker past its recycle bound says it is to be replaced.

import v8 from "node:v8";
import { originalPositionFor, TraceMap } from "@jridgewell/trace-mapping";
import ivm from "isolated-vm";
import { type PackedBatch, packBatch } from "../protocol/batch.ts";
import type { SliceResult, ValidationResult } from "../protocol/replies.ts";
import type { EngineLimits, GraderCode, SliceOptions } from "../protocol/requests.ts";
import type { CheckFailure, GradeErrorCode, GradeOutcome } from "../validate/checks.ts";
import { MOCK_THREAD } from "../validate/checks.ts";
import { bundle, bundlePrelude, checkSyntax, splitCompiled } from "../validate/compile.ts";
import { checkNesting } from "../validate/source-bounds.ts";
import { explainedRss, type MemoryBounds, residentBytes } from "./memory.ts";
import { type DecodedReply, decodeReply, ReplyViolation } from "./reply-reader.ts";

/** Where the engine announces each isolate call, so the worker's watchdog can bound it. */
export interface CallWatch {
  /** `rss`: the process's resident bytes as the call starts (0 when not measured) */
  begin(from: number, count: number, limitMs: number, rss: number): void;
  end(): void;
}
const UNWATCHED: CallWatch = { begin() {}, end() {} };

export interface EngineHooks {
  watch?: CallWatch;
  /** shared memory (isolate/slot.ts) each isolate's prelude writes the item it is grading into */
  progress?: SharedArrayBuffer;
  /** told the heap bytes of warm isolates whenever they change */
  onWarmHeap?: (bytes: number) => void;
  /**
   * the worker's memory bounds (memory.ts): with them, every call's growth of the process is
   * charged to its isolate, and the engine says when the worker should be replaced
   */
  bounds?: MemoryBounds;
}

/** After this many items in a row stopped by a limit (time or memory), the rest of a batch fails fast instead of costing a limit each. */
export const MAX_TIMEOUTS_IN_A_ROW = 3;

class GraderError extends Error {
  constructor(
    readonly code: GradeErrorCode,
    message: string,
    /** the grader is blamed for it as for taking its worker down (a fault), not only for the item */
    readonly fault = false,
  ) {
    super(message);
  }
}

const MB = 1024 * 1024;
/** Why a grader's isolate was disposed for what it kept: the bound and what counts towards it. */
function retainedMessage(retained: number, bounds: MemoryBounds, memoryMb: number): string {
  return (
    `its calls left the sandbox worker ${Math.round(retained / MB)} MB larger than its heap explains, past the ${Math.round(bounds.retained / MB)} MB ` +
    `a grader may keep outside its heap (2× the ${memoryMb} MB memory limit + 64 MB), so its isolate was disposed. ` +
    "Intl objects and resizable ArrayBuffers live outside the heap: make formatters once, at module level, rather than keeping new ones"
  );
}

const preludeSource = bundlePrelude();
const MOCK_BATCH = packBatch([MOCK_THREAD]);
/** How long esbuild may take over one check (syntax, or the bundle). */
export const PARSE_DEADLINE_MS = 2000;
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

/** An isolate's heap and the external bytes isolated-vm counts against its limit. */
function heapOf(isolate: ivm.Isolate): number {
  const heap = isolate.getHeapStatisticsSync();
  return heap.total_heap_size + heap.externally_allocated_size;
}

/** A live isolate with a grader loaded into it. */
class Runtime {
  readonly isolate: ivm.Isolate;
  private readonly context: ivm.Context;
  private readonly fns: { install: ivm.Reference; run: ivm.Reference; collect: ivm.Reference };
  heapBytes = 0;
  calls = 0;
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

  /** Throws GraderError(GRADER_*) when the module body fails, times out or runs out of memory. */
  constructor(
    code: string,
    private readonly limits: EngineLimits,
    { watch = UNWATCHED, progress, bounds }: EngineHooks,
  ) {
    this.isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb });
    const { script, map } = splitCompiled(code);
    this.mapText = map;
    try {
      this.context = this.isolate.createContextSync();
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
      let failure: unknown;
      if (bounds) this.heapAtCharge = heapOf(this.isolate);
      const before = bounds ? residentBytes() : 0;
      watch.begin(0, 0, limits.timeoutMs, before);
      try {
        failure = this.guard(() => {
          this.isolate
            .compileScriptSync(wrapModule(script), { filename: "grader.js" })
            .runSync(this.context, { timeout: limits.timeoutMs });
          return this.fns.install.applySync(undefined, [], { timeout: limits.timeoutMs });
        });
      } finally {
        watch.end();
      }
      if (bounds && this.account(residentBytes() - before, bounds)) {
        throw new GraderError("GRADER_MEMORY_LIMIT", retainedMessage(this.retained, bounds, limits.memoryMb), true);
      }
      if (typeof failure !== "string") throw new GraderError("GRADER_ERROR", "the module's loader answered in an unknown form");
      if (failure !== "") throw new GraderError("GRADER_ERROR", failure);
      this.measure();
    } catch (error) {
      this.dispose();
      throw error;
    }
  }

  /** Maps isolated-vm's failures to grader error codes. */
  guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (error instanceof GraderError || error instanceof ReplyViolation) throw error;
      if (this.isolate.isDisposed) {
        throw new GraderError("GRADER_MEMORY_LIMIT", `exceeded the ${this.limits.memoryMb} MB memory limit`);
      }
      // isolated-vm's own message; errors of grader code never reach here as objects
      if (error instanceof Error && error.message === "Script execution timed out.") {
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
   * Without a batch, the isolate grades the one it loaded last.
   */
  call(batch: PackedBatch | undefined, from: number, maxItems: number): DecodedReply {
    return this.guard(() => {
      const sliceMs = maxItems === 1 ? 0 : this.limits.timeoutMs / 2;
      const args = [batch?.head ?? "", batch?.text ?? "", from, maxItems, sliceMs];
      this.fns.run.applySync(undefined, args, { timeout: this.limits.timeoutMs });
      const reply = this.fns.collect.applySync(undefined, [], { timeout: this.limits.timeoutMs });
      if (++this.calls % MEASURE_EVERY === 1) this.measure();
      return this.locate(decodeReply(reply, maxItems));
    });
  }

  /** Errors carry positions in grader.js out of the isolate: map them to the user's source, or drop them. */
  private locate(reply: DecodedReply): DecodedReply {
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
      return heap.used_heap_size + heap.externally_allocated_size >= 0.8 * this.limits.memoryMb * 1024 * 1024;
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
    const now = heapOf(this.isolate);
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
    this.heapBytes = heapOf(this.isolate);
  }

  dispose(): void {
    if (!this.isolate.isDisposed) this.isolate.dispose();
  }
}

/** an item stopped by its time or memory limit: each such item costs a whole limit */
const overLimit = (o: GradeOutcome | undefined) =>
  o !== undefined && "error" in o && (o.error.code === "GRADER_TIMEOUT" || o.error.code === "GRADER_MEMORY_LIMIT");

export class Engine {
  private readonly warm = new Map<string, Runtime>();
  /** warm isolates dropped to keep the cache within its count and heap bounds */
  evictions = 0;
  /** CPU time spent inside isolates grading (isolated-vm's cpuTime), summed: what grader code costs here */
  isolateCpuUs = 0;
  private readonly watch: CallWatch;
  private readonly onWarmHeap: (bytes: number) => void;
  /**
   * Set when the worker's RSS passed its recycle bound after a call, or did not come back after
   * an isolate was disposed for what it kept: the worker is to be replaced. Slices end after
   * the call that found it; the worker says so in every reply from then on.
   */
  overgrown = false;
  constructor(
    readonly limits: EngineLimits,
    private readonly hooks: EngineHooks = {},
  ) {
    this.watch = hooks.watch ?? UNWATCHED;
    this.onWarmHeap = hooks.onWarmHeap ?? (() => {});
  }

  get warmCount(): number {
    return this.warm.size;
  }

  get warmHeapBytes(): number {
    let total = 0;
    for (const rt of this.warm.values()) total += rt.heapBytes;
    return total;
  }

  private runtime(grader: GraderCode): Runtime {
    const hit = this.warm.get(grader.id);
    if (hit && !hit.isolate.isDisposed) {
      this.warm.delete(grader.id); // re-insert: Map order is the LRU order
      this.warm.set(grader.id, hit);
      return hit;
    }
    this.warm.delete(grader.id);
    const runtime = new Runtime(grader.compiled, this.limits, this.hooks);
    this.warm.set(grader.id, runtime);
    this.trim(runtime);
    return runtime;
  }

  /** Evicts least recently used isolates (never `keep`) until count and heap bytes are within bounds. */
  private trim(keep?: Runtime): void {
    const maxHeap = this.limits.maxWarmHeapMb * 1024 * 1024;
    let heap = this.warmHeapBytes;
    for (const [id, rt] of this.warm) {
      if (this.warm.size <= this.limits.maxWarm && heap <= maxHeap) break;
      if (rt === keep) continue;
      heap -= rt.heapBytes;
      rt.dispose();
      this.warm.delete(id);
      this.evictions++;
    }
    this.onWarmHeap(heap);
  }

  /** Disposes every warm isolate of these graders (deleted or replaced). */
  forget(ids: readonly string[]): void {
    for (const id of ids) this.evict(id);
    this.onWarmHeap(this.warmHeapBytes);
  }

  /**
   * Grades a packed batch with one grader, from item `from` on, for one slice (see
   * SliceOptions). Fast path: the rest of the batch in one crossing. When a call dies (timeout,
   * out of memory) the items since the last good result are re-run one per call, so the error
   * lands on the item that caused it and every other item still gets its own score.
   */
  gradeSlice(grader: GraderCode, batch: PackedBatch, from: number, options: SliceOptions): SliceResult {
    const before = this.warm.get(grader.id);
    const bytesBefore = before?.heapBytes;
    const result = this.gradeWith(
      () => this.runtime(grader),
      () => this.evict(grader.id),
      batch,
      from,
      options,
    );
    // the warm set's bytes change only when an isolate was measured, rebuilt or dropped: most
    // slices (31 calls in 32) skip the walk over every warm isolate
    const after = this.warm.get(grader.id);
    if (after !== before || after?.heapBytes !== bytesBefore) this.trim(after);
    return this.overgrown ? { ...result, retire: true } : result;
  }

  /** The whole batch in one go (no slices): for tests and in-process measurement. */
  gradeBatch(grader: GraderCode, batch: PackedBatch): GradeOutcome[] {
    return this.gradeSlice(grader, batch, 0, { single: false, sliceMs: Number.POSITIVE_INFINITY, limitsInARow: 0, end: batch.count })
      .outcomes;
  }

  private evict(id: string): void {
    this.warm.get(id)?.dispose();
    this.warm.delete(id);
  }

  private gradeWith(acquire: () => Runtime, discard: () => void, batch: PackedBatch, from: number, options: SliceOptions): SliceResult {
    const count = Math.min(batch.count, options.end);
    const outcomes: GradeOutcome[] = [];
    const started = Date.now();
    let i = from;
    let single = options.single;
    let inARow = options.limitsInARow;
    let loaded: Runtime | undefined;
    let violation: string | undefined;
    let fault: string | undefined;
    const bounds = this.hooks.bounds;
    /** an isolate was disposed for what it kept: does the process give the memory back? */
    const checkGiveBack = () => {
      if (bounds && residentBytes() > explainedRss(bounds, this.warmHeapBytes)) this.overgrown = true;
    };
    const push = (outcome: GradeOutcome) => {
      outcomes.push(outcome);
      inARow = overLimit(outcome) ? inARow + 1 : 0;
      i++;
    };
    while (i < count) {
      if (outcomes.length > 0 && (options.single || Date.now() - started >= options.sliceMs || this.overgrown)) break;
      if (inARow >= MAX_TIMEOUTS_IN_A_ROW) {
        const last = outcomes.at(-1);
        const code = last && "error" in last ? last.error.code : "GRADER_TIMEOUT";
        const message = `not run: ${MAX_TIMEOUTS_IN_A_ROW} items in a row exceeded their time or memory limit, so the rest of the batch fails fast`;
        while (i < count) push({ error: { code, message } });
        break;
      }
      let rt: Runtime;
      try {
        rt = acquire();
      } catch (error) {
        // the module body itself fails: every remaining item gets that error
        const outcome = toOutcome(error);
        if (error instanceof GraderError && error.fault) {
          fault = error.message;
          checkGiveBack();
        }
        while (i < count) push(outcome);
        break;
      }
      const alone = single || count - i === 1;
      const asked = alone ? 1 : count - i;
      const rssBefore = bounds ? residentBytes() : 0;
      this.watch.begin(i, asked, this.limits.timeoutMs, rssBefore);
      try {
        const cpuBefore = rt.isolate.cpuTime;
        const reply = rt.call(loaded === rt ? undefined : batch, i, asked);
        this.isolateCpuUs += Number(rt.isolate.cpuTime - cpuBefore) / 1000;
        loaded = rt;
        const rssAfter = bounds ? residentBytes() : 0;
        if (bounds && rt.account(rssAfter - rssBefore, bounds)) {
          // the grader keeps what its calls make: this call's items fail, and its isolate goes
          fault = retainedMessage(rt.retained, bounds, this.limits.memoryMb);
          discard();
          loaded = undefined;
          const covered = reply.outcomes.length + (reply.pending ? 1 : 0);
          for (let k = 0; k < covered; k++) push({ error: { code: "GRADER_MEMORY_LIMIT", message: fault } });
          checkGiveBack();
        } else {
          for (const outcome of reply.outcomes) push(outcome);
          if (reply.pending) {
            // microtasks drained with the item's promise still pending: it can never settle
            push({ error: { code: "GRADER_TIMEOUT", message: "grade returned a promise that never settles" } });
          }
        }
        if (bounds && rssAfter > bounds.recycleAt) this.overgrown = true;
        single = options.single;
      } catch (error) {
        discard();
        loaded = undefined;
        checkGiveBack();
        if (error instanceof ReplyViolation) {
          violation = error.message;
          const message = `the sandbox could not read the grader's results (${error.message})`;
          for (let k = 0; k < asked; k++) push({ error: { code: "GRADER_ERROR", message } });
        } else if (alone) {
          push(toOutcome(error));
        } else {
          single = true; // find the culprit: retry from i one item per call
        }
      } finally {
        this.watch.end();
      }
    }
    return { outcomes, ...(violation === undefined ? {} : { violation }), ...(fault === undefined ? {} : { fault }) };
  }

  /**
   * Some sources within every size and nesting bound still make esbuild work for minutes and
   * gigabytes (`a<a<a<…`, thousands of duplicate labels). Past the deadline the check fails, and
   * the worker is to be replaced: its esbuild service is still busy, and exits with it.
   */
  private async withinParseDeadline<T>(work: Promise<T>): Promise<T | CheckFailure> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<CheckFailure>((resolve) => {
      timer = setTimeout(() => {
        this.spent = true;
        resolve({
          check: "syntax",
          message: `the source took longer than ${PARSE_DEADLINE_MS / 1000} s to parse; simplify it (long chains of \`<\`, or thousands of labels or declarations, are the usual cause)`,
          costly: true,
        });
      }, PARSE_DEADLINE_MS);
    });
    try {
      return await Promise.race([work, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Set when a parse ran past its deadline: this worker should be replaced once it has answered. */
  spent = false;

  /** The five checks (size is the server's); the pool grades any threads given with them. */
  async validate(source: string, { mock: runMock = true }: { mock?: boolean } = {}): Promise<ValidationResult> {
    // the server checks this too; here it guards every other caller of the engine
    const nesting = checkNesting(source);
    if (nesting) return { ok: false, failure: nesting };
    const syntax = await this.withinParseDeadline(checkSyntax(source));
    if (syntax) return { ok: false, failure: syntax };
    // the TypeScript compiler is loaded only where validations run: it would double a grading worker's memory
    const { analyze } = await import("../validate/analyze.ts");
    const analysis = analyze(source);
    if ("check" in analysis) return { ok: false, failure: analysis };
    const built = await this.withinParseDeadline(bundle(analysis.code, analysis.edit));
    if ("check" in built) return { ok: false, failure: built };

    let rt: Runtime;
    try {
      rt = new Runtime(built.compiled, this.limits, this.hooks);
    } catch (error) {
      return { ok: false, failure: { check: "execution", message: `the module failed to load: ${describeError(error)}` } };
    }
    let current = rt;
    const acquire = () => {
      if (current.isolate.isDisposed) current = new Runtime(built.compiled, this.limits, this.hooks);
      return current;
    };
    const discard = () => current.dispose();
    const whole: SliceOptions = { single: false, sliceMs: Number.POSITIVE_INFINITY, limitsInARow: 0, end: MOCK_BATCH.count };
    try {
      // with samples of its own, a grader's test_run is those samples (the pool grades them)
      const [mock] = runMock ? this.gradeWith(acquire, discard, MOCK_BATCH, 0, whole).outcomes : [{ score: 0 }];
      if ("error" in mock) {
        return {
          ok: false,
          failure: {
            check: "test_run",
            // where in the user's source it threw, for push's caret and the console's marked line
            ...(mock.error.line === undefined ? {} : { line: mock.error.line, column: mock.error.column }),
            message:
              `grade failed on the built-in sample thread (user "What is 2+2?", assistant "4", metadata {}) with ${mock.error.code}: ${mock.error.message}. ` +
              'The sample thread\'s metadata is {}: guard reads of it (`thread.metadata.expected ?? ""`); to see how it grades real samples, ' +
              "give the grader samples of its own (`samples: [{thread, expected?}]`; `gradebox push --samples samples.jsonl`), which test_run then uses instead",
          },
        };
      }
      return { ok: true, compiled: built.compiled, warnings: analysis.warnings };
    } finally {
      current.dispose();
    }
  }

  dispose(): void {
    for (const rt of this.warm.values()) rt.dispose();
    this.warm.clear();
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

function toOutcome(error: unknown): GradeOutcome {
  if (error instanceof GraderError) return { error: { code: error.code, message: error.message } };
  return { error: { code: "GRADER_ERROR", message: describeError(error) } };
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error instanceof GraderError ? error.message : `${error.name}: ${error.message}`;
}

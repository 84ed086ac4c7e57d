// The engine: owns isolates inside one sandbox worker process. One isolate per grader
// (runtime.ts), kept warm in an LRU map bounded by count and by heap bytes, rebuilt after any
// disposal. Only strings and numbers cross into an isolate (a batch crosses packed, see
// protocol/batch.ts) and one string crosses out (isolate/reply.ts), read strictly
// (reply-reader.ts); the References the host keeps point at trusted prelude functions. With the
// worker's memory bounds (memory.ts) every call's growth of the process is charged to its
// isolate: one that keeps too much outside its heap is disposed and blamed, and a worker past
// its recycle bound says it is to be replaced. Validation's checks run here too, on the
// validation worker.

import type { CodeLanguage } from "../code/run.ts";
import { type PackedBatch, packBatch, unitsOf } from "../protocol/batch.ts";
import type { SliceResult, ValidationResult } from "../protocol/replies.ts";
import type { EngineLimits, GraderCode, GraderLanguage, SliceOptions } from "../protocol/requests.ts";
import { PythonLoader } from "../python/loader.ts";
import { makeTemplate, type PythonTemplate, releaseTemplate } from "../python/template.ts";
import type { CheckFailure, GradeOutcome, Language } from "../validate/checks.ts";
import { MOCK_THREAD } from "../validate/checks.ts";
import { bundle, checkSyntax } from "../validate/compile.ts";
import { checkNesting } from "../validate/source-bounds.ts";
import { CodeRunners, gradeCodeSlice } from "./code-slice.ts";
import { explainedRss, residentBytes } from "./memory.ts";
import { ReplyViolation } from "./reply-reader.ts";
import {
  type CallWatch,
  CapStop,
  DeadlineStop,
  type EngineHooks,
  GraderError,
  type ModuleLoader,
  Runtime,
  retainedMessage,
  UNWATCHED,
} from "./runtime.ts";

/** how far booting the Python template takes a worker's RSS above where it ends (measured: about 320 MB at the peak, 200–260 MB kept) */
const TEMPLATE_BOOT_PEAK = 512 * 1024 * 1024;

/** After this many items in a row stopped by a limit (time or memory), the rest of a batch fails fast instead of costing a limit each. */
export const MAX_TIMEOUTS_IN_A_ROW = 3;

/**
 * Under a deadline, on a batch's first pass (SliceOptions.setAside), a call may run for this
 * share of the time left, and at least CAP_FLOOR_MS: a unit still running then is set aside, so
 * one that hangs costs its worker this much instead of the rest of the deadline. Each hanging
 * unit takes this share of what is left (five take about 1 − 0.95⁵ ≈ 23% of a deadline, on one
 * worker); a slow but sound unit set aside is graded after the others, alone, with the whole
 * time left. bench/deadlines.ts measured 1/10 and 1/20 (docs/benchmarks.md).
 */
export const CAP_SHARE = 1 / 20;
/** isolated-vm's timer wakes 10–90 ms late on a loaded machine: a cap much below that is noise */
export const CAP_FLOOR_MS = 25;

const MOCK_BATCH = packBatch([MOCK_THREAD]);
/** the sample thread as a group of one, for a grader that grades groups only */
const MOCK_GROUP = packBatch([MOCK_THREAD], [1]);
/** How long esbuild may take over one check (syntax, or the bundle). */
export const PARSE_DEADLINE_MS = 2000;

/** an item stopped by its time or memory limit: each such item costs a whole limit */
const overLimit = (o: GradeOutcome | undefined) =>
  o !== undefined && "error" in o && (o.error.code === "GRADER_TIMEOUT" || o.error.code === "GRADER_MEMORY_LIMIT");

/**
 * An error a read of absent metadata gives (Python's KeyError or a None; JavaScript's undefined
 * or null): the built-in sample thread's empty metadata is then the likely cause, worth a hint.
 */
const readsMissing = (message: string) => /KeyError|NoneType|undefined|null/.test(message);

export class Engine {
  private readonly warm = new Map<string, Runtime>();
  /** the batch each warm isolate last loaded (the prelude keeps it): a call on the same batch sends none */
  private readonly loadedIn = new WeakMap<Runtime, PackedBatch>();
  /** warm isolates dropped to keep the cache within its count and heap bounds */
  evictions = 0;
  /** CPU time spent inside isolates grading (isolated-vm's cpuTime), summed: what grader code costs here */
  isolateCpuUs = 0;
  private readonly watch: CallWatch;
  private readonly onWarmHeap: (bytes: number) => void;
  private readonly onFixed: (bytes: number) => void;
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
    this.onFixed = hooks.onFixed ?? (() => {});
    this.codeRunners = new CodeRunners(() => this.python(), limits.memoryMb);
  }

  private pythonTemplate: PythonTemplate | undefined;
  /**
   * What the Python template left resident (its compiled binary, snapshot and standard library,
   * and what booting it left in the allocator): a fixed cost of the worker, not of any isolate.
   * The warm-heap bound counts isolates only (with the template in it, a default worker kept
   * one Python isolate warm, and two Python graders used in turn restored on every batch); the
   * worker's memory bounds move up by it instead (DEPLOY.md's Python term).
   */
  templateBytes = 0;
  /** the worker's Python template, booted at its first Python grader or validation */
  python(): PythonTemplate {
    if (!this.pythonTemplate) {
      // the boot runs outside any call: the watchdog's idle look would find the worker past what
      // its warm isolates explain and have it replaced, template and all
      this.onFixed(TEMPLATE_BOOT_PEAK);
      const before = residentBytes();
      const template = makeTemplate(this.limits.memoryMb);
      this.templateBytes = Math.max(residentBytes() - before, template.snapshotBytes);
      this.pythonTemplate = template;
      this.onFixed(this.fixedBytes);
    }
    return this.pythonTemplate;
  }

  /** the code graders' runners (sandbox/code), warm for the worker's life */
  private readonly codeRunners: CodeRunners;
  /** what the runners keep resident (a Python runner's isolate and its baseline copy): fixed, like the template */
  codeBytes = 0;
  /** what the worker holds beyond its warm isolates: the Python template and the code runners */
  get fixedBytes(): number {
    return this.templateBytes + this.codeBytes;
  }

  private prepareCode(languages: readonly CodeLanguage[], memoryMb: number, tests = false): void {
    if (languages.includes("python")) this.python();
    const before = residentBytes();
    if (!this.codeRunners.prepare(languages, memoryMb, tests)) return;
    // each project's Python runner holds its own isolate (CodeRunners keeps at most a few)
    this.codeBytes = Math.max(this.codeBytes, (residentBytes() - before) * Math.max(1, this.codeRunners.pythonCount));
    this.onFixed(this.fixedBytes);
  }

  private loaderFor(language: GraderLanguage | undefined, deadlineAt?: number): ModuleLoader | undefined {
    return language === "python" ? new PythonLoader(this.python(), false, deadlineAt) : undefined;
  }

  get warmCount(): number {
    return this.warm.size;
  }

  get warmHeapBytes(): number {
    let total = 0;
    for (const rt of this.warm.values()) total += rt.heapBytes;
    return total;
  }

  private runtime(grader: GraderCode, deadlineAt?: number): Runtime {
    const hit = this.warm.get(grader.id);
    if (hit && !hit.isolate.isDisposed) {
      this.warm.delete(grader.id); // re-insert: Map order is the LRU order
      this.warm.set(grader.id, hit);
      return hit;
    }
    this.warm.delete(grader.id);
    const runtime = new Runtime(grader.compiled, this.limits, this.hooks, this.loaderFor(grader.language, deadlineAt), deadlineAt);
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
   * out of memory) the units since the last good result are re-run one per call, so the error
   * lands on the unit that caused it and every other unit still gets its own scores. A unit is a
   * group when the batch has groups (a group is graded, and fails, as one), else a thread. At the
   * slice's deadline it ends with what it finished (`deadline`): no culprit is looked for then.
   * With `setAside`, a call its cap stops (CAP_SHARE of the time left) sets the unit it was on
   * aside (`deferred`) and the slice goes on from the next unit: see CAP_SHARE.
   */
  gradeSlice(grader: GraderCode, batch: PackedBatch, from: number, options: SliceOptions): SliceResult {
    if (grader.language === "code")
      return gradeCodeSlice(this.codeRunners, this.watch, this.hooks.progress, grader, batch, from, options, (languages, memoryMb, tests) =>
        this.prepareCode(languages, memoryMb, tests),
      );
    const before = this.warm.get(grader.id);
    const bytesBefore = before?.heapBytes;
    const result = this.gradeWith(
      () => this.runtime(grader, options.deadlineAt),
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
    const units = unitsOf(batch);
    const outcomes: GradeOutcome[] = [];
    const started = Date.now();
    let i = from;
    let single = options.single;
    let inARow = options.limitsInARow;
    let violation: string | undefined;
    let fault: string | undefined;
    /** the deadline came: the items from i on are not finished, and that is nobody's fault */
    let stopped = false;
    const deadlineAt = options.deadlineAt;
    /** items set aside by a call's cap (whole units): the pool retries them alone, after the rest */
    const deferred: number[] = [];
    const capping = options.setAside === true && deadlineAt !== undefined;
    /** the unit a cap stopped while the call hardly had the CPU: run again once before it is set aside */
    let stalledAt = -1;
    const bounds = this.hooks.bounds;
    /** an isolate was disposed for what it kept: does the process give the memory back? */
    const checkGiveBack = () => {
      if (bounds && residentBytes() > explainedRss(bounds, this.warmHeapBytes, this.fixedBytes)) this.overgrown = true;
    };
    // counted in units: a group that times out is one limit, not one per thread
    let unitOverLimit = true;
    const push = (outcome: GradeOutcome) => {
      outcomes.push(outcome);
      if (!overLimit(outcome)) unitOverLimit = false;
      i++;
      if (units.isStart(i)) {
        inARow = unitOverLimit ? inARow + 1 : 0;
        unitOverLimit = true;
      }
    };
    while (i < count) {
      if (deadlineAt !== undefined && Date.now() >= deadlineAt) {
        stopped = true;
        break;
      }
      if (i > from && (options.single || Date.now() - started >= options.sliceMs || this.overgrown)) break;
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
        if (error instanceof DeadlineStop) {
          stopped = true;
          break;
        }
        // the module body itself fails: every remaining item gets that error
        const outcome = toOutcome(error);
        if (error instanceof GraderError && error.fault) {
          fault = error.message;
          checkGiveBack();
        }
        while (i < count) push(outcome);
        break;
      }
      const unitEnd = Math.min(units.endOf(i), count);
      const alone = single || unitEnd === count;
      const asked = alone ? unitEnd - i : count - i;
      const rssBefore = bounds ? residentBytes() : 0;
      const capMs = Math.max(CAP_FLOOR_MS, CAP_SHARE * ((deadlineAt ?? 0) - Date.now()));
      const callStart = Date.now();
      const capAt = capping ? callStart + capMs : undefined;
      const cpuBefore = rt.isolate.cpuTime;
      this.watch.begin(i, asked, this.limits.timeoutMs, rssBefore);
      try {
        // an isolate that holds this batch already (a call before, in this slice or the last) is not sent it again
        const reply = rt.call(this.loadedIn.get(rt) === batch ? undefined : batch, i, asked, deadlineAt, capAt);
        this.isolateCpuUs += Number(rt.isolate.cpuTime - cpuBefore) / 1000;
        this.loadedIn.set(rt, batch);
        // a call ends where a unit does; only a thread whose promise never settles is left inside a group
        const reached = i + reply.outcomes.length;
        if (!reply.pending && !units.isStart(reached)) throw new ReplyViolation("a group's results were cut short");
        const rssAfter = bounds ? residentBytes() : 0;
        if (bounds && rt.account(rssAfter - rssBefore, bounds)) {
          // the grader keeps what its calls make: this call's items fail, and its isolate goes
          fault = retainedMessage(rt.retained, bounds, this.limits.memoryMb);
          discard();
          this.loadedIn.delete(rt);
          const covered = (reply.pending ? units.endOf(reached) : reached) - i;
          for (let k = 0; k < covered; k++) push({ error: { code: "GRADER_MEMORY_LIMIT", message: fault } });
          checkGiveBack();
        } else {
          for (const outcome of reply.outcomes) push(outcome);
          if (rt.spent) {
            discard();
            this.loadedIn.delete(rt);
          }
          if (reply.pending) {
            // microtasks drained with the item's promise still pending: it can never settle, and
            // neither can the rest of its unit (a group is graded as one)
            const message = units.grouped
              ? "the grader returned a promise that never settles (for this group)"
              : "grade returned a promise that never settles";
            const stop = units.endOf(i);
            while (i < stop) push({ error: { code: "GRADER_TIMEOUT", message } });
          }
        }
        if (bounds && rssAfter > bounds.recycleAt + this.fixedBytes) this.overgrown = true;
        single = options.single;
      } catch (error) {
        const capStopped = error instanceof CapStop;
        if (error instanceof DeadlineStop || capStopped) {
          // what the call finished before it was stopped stands, in whole units (the prelude keeps
          // a record per thread, and a thread grader's call may stop inside a group)
          const done = rt.salvage(asked)?.outcomes ?? [];
          let kept = done.length;
          while (kept > 0 && !units.isStart(i + kept)) kept--;
          for (let k = 0; k < kept; k++) push(done[k]);
          if (!capStopped) {
            // the deadline's: the unit it was on, and the rest, abstain (the pool says so)
            stopped = true;
          } else if (done.length < asked && stalledAt !== i && cpuMs(rt, cpuBefore) < (Date.now() - callStart) / 2) {
            // the call had the CPU for less than half its time: the machine was busy, not
            // necessarily the unit slow. It runs again once (a unit set aside waits behind any
            // that hang till the deadline), then is set aside
            stalledAt = i;
          } else if (done.length < asked) {
            // the cap's: the unit it was on waits for a retry of its own; the slice goes on
            const end = units.endOf(i);
            while (i < end) deferred.push(i++);
          }
        }
        discard();
        this.loadedIn.delete(rt);
        checkGiveBack();
        if (stopped) {
          break;
        } else if (capStopped) {
          // set aside, or finished just as the cap came: nobody's fault, and no limit in a row
        } else if (error instanceof ReplyViolation) {
          violation = error.message;
          const message = `the sandbox could not read the grader's results (${error.message})`;
          for (let k = 0; k < asked; k++) push({ error: { code: "GRADER_ERROR", message } });
        } else if (alone) {
          const outcome = toOutcome(error);
          for (let k = 0; k < asked; k++) push(outcome);
        } else {
          single = true; // find the culprit: retry from i one item per call
        }
      } finally {
        this.watch.end();
      }
    }
    return {
      outcomes,
      ...(violation === undefined ? {} : { violation }),
      ...(fault === undefined ? {} : { fault }),
      ...(stopped ? { deadline: true as const } : {}),
      ...(deferred.length > 0 ? { deferred } : {}),
    };
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
  async validate(
    source: string,
    { mock: runMock = true, language }: { mock?: boolean; language?: Language } = {},
  ): Promise<ValidationResult> {
    if (language === "python") return this.validatePython(source, runMock);
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
    return this.testRun(rt, built.compiled, analysis.warnings, runMock);
  }

  /**
   * A Python source's checks are the in-sandbox library's (its `check`, then `load` as the
   * execution check), run in the grader's own isolate; test_run is the same as TypeScript's.
   */
  private validatePython(source: string, runMock: boolean): ValidationResult {
    const loader = new PythonLoader(this.python(), true);
    let rt: Runtime;
    try {
      rt = new Runtime(source, this.limits, this.hooks, loader);
    } catch (error) {
      if (loader.checked && "check" in loader.checked) return { ok: false, failure: loader.checked };
      const at = loader.loadFailure;
      const message = `the module failed to load: ${at ? at.message : describeError(error)}`;
      return {
        ok: false,
        failure: { check: "execution", message, ...(at?.line === undefined ? {} : { line: at.line, column: at.column ?? 1 }) },
      };
    }
    const warnings = loader.checked && "warnings" in loader.checked ? loader.checked.warnings : [];
    return this.testRun(rt, source, warnings, runMock, "python");
  }

  /**
   * Check 5, test_run: the grader graded on the built-in sample thread, in the isolate the checks
   * loaded (a grader of groups only gets it as a group of one).
   */
  private testRun(rt: Runtime, compiled: string, warnings: string[], runMock: boolean, language?: Language): ValidationResult {
    const shape = rt.shape;
    let current = rt;
    const acquire = () => {
      if (current.isolate.isDisposed) current = new Runtime(compiled, this.limits, this.hooks, this.loaderFor(language));
      return current;
    };
    const discard = () => current.dispose();
    const whole: SliceOptions = { single: false, sliceMs: Number.POSITIVE_INFINITY, limitsInARow: 0, end: MOCK_BATCH.count };
    try {
      // with samples of its own, a grader's test_run is those samples (the pool grades them)
      const sample = shape === "group" ? MOCK_GROUP : MOCK_BATCH;
      const [mock] = runMock ? this.gradeWith(acquire, discard, sample, 0, whole).outcomes : [{ score: 0 }];
      if ("error" in mock) {
        return {
          ok: false,
          failure: {
            check: "test_run",
            // where in the user's source it threw, for push's caret and the console's marked line
            ...(mock.error.line === undefined ? {} : { line: mock.error.line, column: mock.error.column }),
            message:
              `${shape === "group" ? "gradeGroup" : "grade"} failed on the built-in sample thread (user "What is 2+2?", assistant "4", metadata {}) with ${mock.error.code}: ${mock.error.message}. ` +
              (readsMissing(mock.error.message)
                ? `The sample thread's metadata is {}: guard reads of it (${language === "python" ? '`thread.metadata.get("expected", "")`' : '`thread.metadata.expected ?? ""`'}); to see how it grades real threads, `
                : "To see how it grades real threads, ") +
              "give the grader samples of its own (`samples: [{thread, expected?}]`; `gradebox push --samples samples.jsonl`) or test it on threads of yours " +
              "(`threads` in …/graders/validate; `gradebox test FILE --threads threads.jsonl`), which test_run then grades instead",
          },
        };
      }
      if ("abstained" in mock) {
        // abstaining is a grader's right, and guarded reads of absent metadata often do: say so, pass
        warnings.push(
          `${shape === "group" ? "gradeGroup" : "grade"} abstained on the built-in sample thread (${mock.abstained.reason}); give the grader samples of its own to see it score`,
        );
      }
      return { ok: true, compiled, warnings, shape };
    } finally {
      current.dispose();
    }
  }

  dispose(): void {
    for (const rt of this.warm.values()) rt.dispose();
    this.warm.clear();
    this.codeRunners.dispose();
    if (this.pythonTemplate) releaseTemplate(this.pythonTemplate);
    this.pythonTemplate = undefined;
    this.templateBytes = 0;
    this.codeBytes = 0;
    this.onFixed(0);
  }
}

/** CPU ms the isolate spent since `before` (its cpuTime); 0 once it is disposed */
function cpuMs(rt: Runtime, before: bigint): number {
  try {
    return Number(rt.isolate.cpuTime - before) / 1e6;
  } catch {
    return 0;
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

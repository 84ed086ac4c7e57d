// A code grader's slices (issue 29): no grader isolate. Each item of the packed batch is decoded
// here into a thread and graded by gradeThread (sandbox/code/grade.ts) with the worker's runners,
// which are kept warm across slices and batches (one per language and project, fresh state per run). The
// slice semantics are the isolate path's: sliceMs, single, end, deadlineAt; the watchdog and the
// progress slot name the item running, so a run isolated-vm cannot interrupt costs its worker
// and the pool blames that item.

import { unpackBatch } from "../../sdk/packed-batch.ts";
import { gradeThread } from "../code/grade.ts";
import { JsRunner } from "../code/js-runner.ts";
import type { CodeOutcome } from "../code/outcomes.ts";
import { PythonRunner } from "../code/python-runner.ts";
import type { CodeLanguage, CodeRunner } from "../code/run.ts";
import { parseCodeSpec, type WorkerCodeSpec } from "../code/spec.ts";
import { ScriptRunner } from "../code/typescript.ts";
import { SLOT } from "../isolate/slot.ts";
import type { PackedBatch } from "../protocol/batch.ts";
import { MAX_MESSAGE, type SliceResult } from "../protocol/replies.ts";
import type { GraderCode, SliceOptions } from "../protocol/requests.ts";
import type { PythonTemplate } from "../python/template.ts";
import type { CallWatch } from "./runtime.ts";

/** how many projects' Python runners a worker keeps warm (each is an isolate of ~100 MB, two with assert-style tests): the least recently used goes */
export const MAX_PYTHON_RUNNERS = 2;
/** and JavaScript runners (one small isolate each) */
export const MAX_JS_RUNNERS = 4;

interface ProjectRunners {
  python?: PythonRunner;
  js?: JsRunner;
  /** over the project's JavaScript runner: TypeScript, and JavaScript with ES module syntax, made scripts first (typescript.ts) */
  scripts?: { js: ScriptRunner; ts: ScriptRunner };
}

/**
 * The worker's runners, made at first use and kept warm, one set per project: a runner's
 * restore is complete for what a program can reach, but a flaw in it would then reach only the
 * same project's later runs, never another tenant's. Bounded: past MAX_PYTHON_RUNNERS projects
 * the least recently used project's Python runner is disposed (a new one starts from the
 * snapshot); likewise MAX_JS_RUNNERS.
 */
export class CodeRunners {
  /** insertion order is use order: the first is the least recently used */
  private readonly byProject = new Map<string, ProjectRunners>();
  private current: ProjectRunners = {};
  constructor(
    private readonly template: () => PythonTemplate,
    /** the worker's memory limit: a Python run's is the template's (its wasm maximum), a JavaScript run's is capped by it */
    private readonly maxMb: number,
  ) {}

  /** The project whose items run next: its runners (made as needed), now the most recently used. */
  select(project: string): void {
    const runners = this.byProject.get(project) ?? {};
    this.byProject.delete(project);
    this.byProject.set(project, runners);
    this.current = runners;
  }

  /** the Python runners alive (each holds an isolate) */
  get pythonCount(): number {
    let n = 0;
    for (const r of this.byProject.values()) n += r.python?.isolateCount ?? 0;
    return n;
  }

  private evict(language: CodeLanguage): void {
    const max = language === "python" ? MAX_PYTHON_RUNNERS : MAX_JS_RUNNERS;
    let alive = 0;
    for (const r of this.byProject.values()) if (language === "python" ? r.python : r.js) alive++;
    for (const [project, r] of this.byProject) {
      if (alive < max) break;
      if (r === this.current) continue;
      const runner = language === "python" ? r.python : r.js;
      if (!runner) continue;
      runner.dispose();
      if (language === "python") r.python = undefined;
      else r.js = undefined;
      alive--;
      if (!r.python && !r.js) this.byProject.delete(project);
    }
  }

  private python(): PythonRunner {
    if (!this.current.python) {
      this.evict("python");
      this.current.python = new PythonRunner(this.template());
    }
    return this.current.python;
  }

  private js(): JsRunner {
    if (!this.current.js) {
      this.evict("javascript");
      this.current.js = new JsRunner(this.maxMb);
    }
    return this.current.js;
  }

  /** (runs happen with their project selected: the JavaScript runner they reach is that project's) */
  private scripts(): { js: ScriptRunner; ts: ScriptRunner } {
    this.current.scripts ??= { js: new ScriptRunner(() => this.js(), "js"), ts: new ScriptRunner(() => this.js(), "ts") };
    return this.current.scripts;
  }
  readonly runnerFor = (language: CodeLanguage): CodeRunner =>
    language === "python" ? this.python() : language === "typescript" ? this.scripts().ts : this.scripts().js;

  /**
   * Starts what runs of these languages need and is not up (the first time, or after a run that
   * left a runner to be replaced): true when it started something. The worker calls it between
   * items, outside the watchdog's calls, since a Python runner's start grows the process by about
   * 100 MB that stay (the worker counts them as fixed, like the template).
   */
  prepare(languages: readonly CodeLanguage[], memoryMb: number, tests = false): boolean {
    let started = false;
    if (languages.includes("python")) {
      const python = this.python();
      if (!python.startedFor(tests)) {
        python.warm(tests);
        started = true;
      }
    }
    if (languages.includes("javascript") || languages.includes("typescript")) {
      const js = this.js();
      if (!js.startedFor(memoryMb)) {
        js.warm(memoryMb);
        started = true;
      }
    }
    return started;
  }

  /** a run in this language now would start an isolate (the first, or a replacement); tests: an assert-style test's (Python runs its tests in a second isolate) */
  cold(language: CodeLanguage, memoryMb: number, tests = false): boolean {
    return language === "python" ? !this.current.python?.startedFor(tests) : !this.current.js?.startedFor(memoryMb);
  }

  dispose(): void {
    for (const r of this.byProject.values()) {
      r.python?.dispose();
      r.js?.dispose();
    }
    this.byProject.clear();
    this.current = {};
  }
}

/**
 * the watchdog's bound for one item: every test at its limit, with the slack of a restore each;
 * twice the limit, since an assert-style Python test's two sides each have a clock that pauses
 * while the other runs (the run is a time_limit past cpuMs of the two together, by the wall)
 */
const itemBudgetMs = (spec: WorkerCodeSpec) => spec.maxTests * (2 * spec.limits.cpuMs + 500);

export function gradeCodeSlice(
  runners: CodeRunners,
  watch: CallWatch,
  progress: SharedArrayBuffer | undefined,
  grader: GraderCode,
  batch: PackedBatch,
  from: number,
  options: SliceOptions,
  /** starts the runners these languages need, outside any watched call (the engine accounts their memory) */
  prepare: (languages: readonly CodeLanguage[], memoryMb: number, tests?: boolean) => void,
): SliceResult {
  const spec = parseCodeSpec(grader.compiled);
  runners.select(grader.project);
  const threads = unpackBatch(batch);
  const count = Math.min(batch.count, options.end);
  const slot = progress ? new Float64Array(progress) : undefined;
  // only a code grader's words: the host refuses any other code from this path (host/replies.ts)
  const outcomes: CodeOutcome[] = [];
  const started = Date.now();
  let stopped = false;
  for (let i = from; i < count; i++) {
    if (options.deadlineAt !== undefined && Date.now() >= options.deadlineAt) {
      stopped = true;
      break;
    }
    if (i > from && (options.single || Date.now() - started >= options.sliceMs)) break;
    try {
      prepare(spec.languages, spec.limits.memoryMb);
    } catch (error) {
      // the runner could not start: this item, and the rest of the slice, abstain (the service's fault, not the program's)
      const message = (error instanceof Error ? error.message : String(error)).slice(0, MAX_MESSAGE);
      while (i < count) {
        outcomes.push({ abstained: { code: "RUNNER_UNAVAILABLE", reason: message } });
        i++;
      }
      break;
    }
    const item = i;
    const begin = () => {
      watch.begin(item, 1, itemBudgetMs(spec), 0);
      if (slot) slot[SLOT.item] = item;
    };
    // a run that left its runner to be replaced (a time limit, a file written) has the next one
    // start it between the item's runs, with the watch paused: a start is no program's growth
    const runnerFor = (language: CodeLanguage): CodeRunner => {
      const runner = runners.runnerFor(language);
      return {
        run(request) {
          const tests = request.after !== undefined;
          if (runners.cold(language, request.limits.memoryMb, tests)) {
            watch.end();
            try {
              prepare([language], request.limits.memoryMb, tests);
            } finally {
              begin();
            }
          }
          return runner.run(request);
        },
        dispose: () => runner.dispose(),
      };
    };
    begin();
    try {
      outcomes.push(gradeThread(spec, threads[i], runnerFor));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      outcomes.push({ error: { code: "GRADER_ERROR", message: message.slice(0, MAX_MESSAGE) } });
    } finally {
      watch.end();
    }
  }
  return { outcomes, ...(stopped ? { deadline: true as const } : {}) };
}

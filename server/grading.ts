// Grading with any stored grader: a function grader in the sandbox pool, a judge against its
// model, a combined grader through its parts (which may be either).

import type { CodeSpec, WorkerCodeSpec } from "../sandbox/code/spec.ts";
import { type Threads, threadCount, threadObjects } from "../sandbox/host/packed-threads.ts";
import type { SandboxPool } from "../sandbox/host/pool.ts";
import type { GraderCode } from "../sandbox/protocol/requests.ts";
import type { GradeOutcome } from "../sandbox/validate/checks.ts";
import type { WireThread } from "../sdk/thread.ts";
import { gradeCombined } from "./combined.ts";
import type { Endpoints } from "./endpoints/endpoints.ts";
import type { EndpointSpec } from "./endpoints/spec.ts";
import { AppError } from "./errors.ts";
import { type Grouping, inGroupOrder, inRequestOrder } from "./groups.ts";
import type { Judges, JudgeTarget } from "./judges/judges.ts";
import type { JudgeSpec } from "./judges/spec.ts";
import { LoopShare } from "./loop-share.ts";
import type { Metrics } from "./metrics.ts";
import { RequestWork } from "./request-work.ts";
import { type Provenance, provenanceOf } from "./results.ts";
import { type GraderRow, type ResolvedPart, sandboxId } from "./store/graders.ts";
import type { Store } from "./store.ts";
import { DeadlineError, deadlineAbstention, type OutboundOptions } from "./upstream.ts";

const QUARANTINE_CAUSE: Partial<Record<GraderRow["kind"], string>> = {
  judge: "its template went over its budget",
  endpoint: "checking metadata against its metadata schema went over budget",
};
export const quarantineDetail = (key: string, at: string, kind: GraderRow["kind"]) =>
  `grader "${key}" is quarantined since ${at}: ${QUARANTINE_CAUSE[kind] ?? "it took its sandbox worker down"} ` +
  "3 times within 10 minutes. Fix and re-create it, or release it (POST …/release) to try again";

export class Grading {
  constructor(
    private readonly store: Store,
    private readonly pool: SandboxPool,
    private readonly metrics: Metrics,
    readonly judges: Judges,
    readonly endpoints: Endpoints,
    private readonly loopShare = new LoopShare(Number.POSITIVE_INFINITY),
  ) {}

  /** fault writes in flight, by grader id */
  private readonly faultWrites = new Map<string, Set<Promise<boolean>>>();

  /** Stores a fault of a grader (the pool saw it take its worker down, or its judge template went over its budget); true when it quarantined the grader. */
  recordFault(graderId: string, reason: string): Promise<boolean> {
    const write = this.store.recordFault(graderId, reason);
    const writes = this.faultWrites.get(graderId) ?? new Set<Promise<boolean>>();
    this.faultWrites.set(graderId, writes.add(write));
    const done = () => {
      writes.delete(write);
      if (writes.size === 0) this.faultWrites.delete(graderId);
    };
    write.then(done, done);
    return write;
  }

  /** Resolves once the faults of this grader (and its parts) in flight are stored; other graders' are not waited for. */
  async faultsStored(row: Pick<GraderRow, "id" | "parts">): Promise<void> {
    if (this.faultWrites.size === 0) return;
    const ids = [row.id, ...(row.parts?.map((p) => p.id) ?? [])];
    const pending = ids.flatMap((id) => [...(this.faultWrites.get(id) ?? [])]);
    if (pending.length > 0) await Promise.allSettled(pending);
  }

  /**
   * Grades with the stored grader `key` (a function grader at `version` when given: its other
   * kinds have one version) and records the request in the metrics; every grading route comes here.
   */
  async gradeByKey(
    project: string,
    key: string,
    threads: Threads,
    { version, route, ...run }: { version?: number; route: "grade" | "grade-batch" } & GradeRun,
  ): Promise<{ outcomes: GradeOutcome[]; version: number; provenance: Provenance }> {
    const started = performance.now();
    // the hot path: a warm grader is read from this node's cache, not the database
    const row = await this.store.cache.grader(project, key);
    let code: GraderCode = { id: sandboxId(row.id, row.version), project, language: row.language, compiled: row.compiled };
    let provenance = provenanceOf(row, row);
    if (version !== undefined && version !== row.version) {
      if (row.kind !== "function") {
        throw new AppError("INVALID_REQUEST", `grader "${key}" is a ${row.kind} grader; only function graders have versions to pin`);
      }
      // a pinned version runs in its own language, which may not be the current version's
      const pinned = await this.store.cache.version(row, version);
      code = { id: sandboxId(row.id, version), project, language: pinned.language, compiled: pinned.compiled };
      provenance = provenanceOf(row, { version, sourceSha256: pinned.sourceSha256, language: pinned.language });
    }
    let outcomes: GradeOutcome[];
    try {
      outcomes = await this.grade(row, code, threads, run);
    } finally {
      // a grade that took a worker down answers after its fault is stored: the quarantine it caused holds from then on, on every node
      await this.faultsStored(row);
    }
    this.metrics.observe(project, key, route, (performance.now() - started) / 1000, outcomes);
    return { outcomes, version: version ?? row.version, provenance };
  }

  /**
   * One program run once (the SandboxFusion route): a one-thread batch of the code grader `row`
   * under `spec` (its own definition narrowed to the run). Its sandbox id is its own, since its
   * definition is not the stored one, but its faults are still the grader's.
   */
  async runProgram(row: GraderRow, spec: WorkerCodeSpec, thread: WireThread, deadlineAt: number): Promise<GradeOutcome> {
    if (row.quarantinedAt) throw new AppError("GRADER_QUARANTINED", quarantineDetail(row.key, row.quarantinedAt, row.kind));
    const code = { ...codeGrader({ ...row, code: spec }), id: `${row.id}@sandbox-fusion` };
    try {
      const [outcome] = await this.pool.gradeBatch(code, [thread], { deadlineAt });
      return outcome as GradeOutcome;
    } finally {
      await this.faultsStored(row);
    }
  }

  private endpointTarget(g: { id: string; project: string; key: string; endpoint?: EndpointSpec }) {
    if (!g.endpoint) throw new Error(`grader ${g.key} is not an endpoint grader`);
    return { id: g.id, project: g.project, key: g.key, spec: g.endpoint };
  }

  /** What a judge grader needs to grade: its definition and its model's id. */
  judgeTarget(g: { id: string; project: string; key: string; judge?: JudgeSpec; modelId?: string }): JudgeTarget {
    if (!g.judge || !g.modelId) throw new Error(`grader ${g.key} is not a judge grader`);
    return { id: g.id, project: g.project, key: g.key, spec: g.judge, modelId: g.modelId };
  }

  /**
   * Grades with a grader row; `code` is the function grader's version to run (its current one, or
   * a pinned one). With a grouping, the threads go to grading group by group (each contiguous and
   * whole) and the outcomes come back in the threads' order.
   */
  async grade(row: GraderRow, code: GraderCode, threads: Threads, run: GradeRun = {}): Promise<GradeOutcome[]> {
    if (row.quarantinedAt) throw new AppError("GRADER_QUARANTINED", quarantineDetail(row.key, row.quarantinedAt, row.kind));
    const { grouping, deadlineAt } = run;
    // a packed batch goes to the sandbox as it came; what reads thread objects gets them unpacked
    const ordered = grouping ? inGroupOrder(threadObjects(threads), grouping) : threads;
    const onLoop = onTheLoop(row);
    const timeout = deadlineAt === undefined ? undefined : AbortSignal.timeout(Math.max(0, Math.ceil(deadlineAt - Date.now())));
    // outbound calls stop at the deadline or when the client goes away, whichever comes first
    const stops = [timeout, run.clientGone].filter((x): x is AbortSignal => x !== undefined);
    const options: PartRun = {
      deadlineAt,
      groups: grouping?.sizes,
      deadline: stops.length > 1 ? AbortSignal.any(stops) : stops[0],
      onUnavailable: run.onUnavailable ?? "error",
      // every part of a combined grader draws on the one request's budgets (function and code
      // graders do their work in the sandbox: none is made for them, on the hot path)
      ...(onLoop ? { work: new RequestWork() } : {}),
    };
    // judges and endpoints do their work on this event loop: a project takes its turn among its own
    let release: (() => void) | undefined;
    if (onLoop) {
      try {
        release = await this.loopShare.enter(row.project, options.deadline);
      } catch (error) {
        if (error instanceof DeadlineError) return Array.from({ length: threadCount(threads) }, () => deadlineAbstention());
        throw error;
      }
    }
    let outcomes: GradeOutcome[];
    try {
      outcomes = await this.gradeOrdered(row, code, ordered, options);
    } finally {
      release?.();
    }
    return grouping ? inRequestOrder(outcomes, grouping) : outcomes;
  }

  private async gradeOrdered(row: GraderRow, code: GraderCode, sent: Threads, run: PartRun): Promise<GradeOutcome[]> {
    if (row.kind === "function") return this.pool.gradeBatch(code, sent, { deadlineAt: run.deadlineAt, groups: run.groups });
    if (row.kind === "code") return this.pool.gradeBatch(codeGrader(row), sent, { deadlineAt: run.deadlineAt, groups: run.groups });
    const threads = threadObjects(sent);
    if (row.kind === "judge") return unavailableAs(run, await this.judges.grade(this.judgeTarget(row), threads, run));
    if (row.kind === "endpoint") return unavailableAs(run, await this.endpoints.grade(this.endpointTarget(row), threads, run));
    const quarantinedPart = row.parts?.find((p) => p.quarantinedAt);
    if (quarantinedPart) {
      return threads.map(() => ({
        error: {
          code: "COMPONENT_FAILED" as const,
          message: `part "${quarantinedPart.name}" (grader ${quarantinedPart.graderKey}) is quarantined`,
        },
      }));
    }
    return gradeCombined((part, items) => this.gradePart(row.project, part, items, run), row.mode ?? "weighted", row.parts ?? [], threads);
  }

  private async gradePart(project: string, part: ResolvedPart, threads: readonly WireThread[], run: PartRun): Promise<GradeOutcome[]> {
    if (part.kind === "judge") {
      return unavailableAs(run, await this.judges.grade(this.judgeTarget({ ...part, project, key: part.graderKey }), threads, run));
    }
    if (part.kind === "endpoint") {
      return unavailableAs(run, await this.endpoints.grade(this.endpointTarget({ ...part, project, key: part.graderKey }), threads, run));
    }
    if (part.kind === "code") {
      return this.pool.gradeBatch(codeGrader({ ...part, project }), threads, { deadlineAt: run.deadlineAt, groups: run.groups });
    }
    return this.pool.gradeBatch(
      { id: sandboxId(part.id, part.version), project, language: part.language, compiled: part.compiled },
      threads,
      { deadlineAt: run.deadlineAt, groups: run.groups },
    );
  }
}

/**
 * What the sandbox grades a code grader with: its definition as JSON, which the worker reads with
 * parseCodeSpec and grades with its runners (sandbox/code), no grader isolate.
 */
export function codeGrader(g: { id: string; version: number; project: string; code?: CodeSpec }): GraderCode {
  if (!g.code) throw new Error(`grader ${g.id} is not a code grader`);
  return { id: sandboxId(g.id, g.version), project: g.project, language: "code", compiled: JSON.stringify(g.code) };
}

/** A judge, an endpoint, or a combined grader with one among its parts: work on the API's event loop (loop-share.ts). */
const onTheLoop = (row: GraderRow) =>
  row.kind === "judge" || row.kind === "endpoint" || (row.parts?.some((p) => p.kind === "judge" || p.kind === "endpoint") ?? false);

/** How a request asks for its threads to be graded (POST …/grade-batch's options). */
export interface GradeRun {
  /** Date.now() by which the answer is due: unfinished threads abstain with DEADLINE_EXCEEDED */
  deadlineAt?: number;
  grouping?: Grouping;
  /** a judge's model or an endpoint that does not answer: the thread's error (default) or an abstention */
  onUnavailable?: "error" | "abstain";
  /**
   * aborted when the client went away (an HTTP request's connection, a reward socket): the model
   * and endpoint calls not yet made are not made, and their threads abstain as at a deadline; the
   * sandbox finishes what it was given, within its time limit
   */
  clientGone?: AbortSignal;
}

/** What every part of one grading gets: the deadline (as a time and as a signal for outbound calls) and the group sizes. */
interface PartRun extends OutboundOptions {
  deadlineAt?: number;
  groups?: readonly number[];
  onUnavailable: "error" | "abstain";
}

const UNAVAILABLE = new Set<string>(["JUDGE_UNAVAILABLE", "ENDPOINT_UNAVAILABLE"]);

/** With onUnavailable "abstain", a model or endpoint that did not answer is an abstention with the same code, not an error. */
function unavailableAs(run: PartRun, outcomes: GradeOutcome[]): GradeOutcome[] {
  if (run.onUnavailable !== "abstain") return outcomes;
  return outcomes.map((o) =>
    "error" in o && UNAVAILABLE.has(o.error.code)
      ? { abstained: { code: o.error.code as "JUDGE_UNAVAILABLE" | "ENDPOINT_UNAVAILABLE", reason: o.error.message } }
      : o,
  );
}

// The work the pool hands its workers, and what becomes of a batch as its slices are graded or
// lost. A grading task keeps every outcome so far and its next item; a slice lost with its
// worker is graded again, except the item that took the worker down when that item is known.
// Under a deadline, units a call's cap set aside wait in `aside` and are retried one per slice,
// alone, once every other item has its outcome.

import { type PackedBatch, type Units, unitsOf } from "../protocol/batch.ts";
import type { ValidationResult, WorkerReply } from "../protocol/replies.ts";
import type { GraderCode } from "../protocol/requests.ts";
import type { GradeErrorCode, GradeOutcome, Language } from "../validate/checks.ts";
import type { Loss } from "./blame.ts";
import type { WorkerHandle } from "./supervisor.ts";

/** Worker deaths one batch may cause before the rest of it fails fast. */
export const MAX_CRASHES_PER_BATCH = 3;
/** the id prefix of a source being validated (no stored grader) */
export const VALIDATION_ID = "validate:";
/** what a thread the batch's deadline left unfinished is told */
export const DEADLINE_REASON = "the batch's deadline came before this thread was graded";
/** what a thread the deadline left unfinished gets; one set aside holds it until its retry */
export const unfinished = (): GradeOutcome => ({ abstained: { code: "DEADLINE_EXCEEDED", reason: DEADLINE_REASON } });

export type ItemError = { code: GradeErrorCode; message: string };

/** One batch (or one part of a split batch) of one grader, graded slice by slice. */
export interface GradeTask {
  kind: "grade";
  project: string;
  grader: GraderCode;
  batch: PackedBatch;
  /** the batch's id, unique in this process: a worker that holds it is not sent it again */
  batchId: number;
  count: number;
  /** the batch's units (its groups, or single threads): slices start and end at their bounds, and a culprit is a whole unit */
  units: Units;
  /** by item; a unit in `aside` holds `unfinished()` until its retry */
  outcomes: GradeOutcome[];
  /** the next item to grade: every item before it has its outcome, or is set aside */
  next: number;
  /**
   * units set aside by a call's cap under the deadline (their first items, ascending): retried
   * one per slice, alone and uncapped, once `next` has reached the end
   */
  aside: number[];
  /** grade one unit per slice: a worker died under this batch and the unit that did it is unknown */
  single: boolean;
  /** items known to have taken a worker down, with the error each gets instead of another try */
  culprits: Map<number, ItemError>;
  crashes: number;
  /** the worker that ran the last slice (it holds the grader warm) */
  lastWorker?: WorkerHandle;
  /** Date.now() by which the task answers, whatever is left unfinished (GradeOptions.deadlineAt) */
  deadlineAt?: number;
  /** the deadline's timer, cleared when the task answers */
  timer?: NodeJS.Timeout;
  /** answered: a slice still running for it is discarded when its reply comes */
  done: boolean;
  /** answers the task once (sets `done`, clears `timer`) */
  resolve: (outcomes: GradeOutcome[]) => void;
}

export interface ValidateTask {
  kind: "validate";
  project: string;
  source: string;
  mock: boolean;
  /** absent: typescript */
  language?: Language;
  resolve: (result: ValidationResult) => void;
  reject: (error: Error) => void;
}

/** Pinned to one worker: its stats. */
export interface StatsTask {
  kind: "stats";
  worker: WorkerHandle;
  resolve: (reply: Extract<WorkerReply, { op: "stats" }>) => void;
  reject: (error: Error) => void;
}

export type Task = GradeTask | ValidateTask | StatsTask;

/** A request a worker is running. */
export interface Running {
  id: number;
  task: Task;
  sentAt: number;
  /** ms after which a worker that has said nothing is presumed stuck and killed (no one is blamed) */
  budgetMs: number;
  /** for a grading slice: its first item, and whether it was a single item */
  from: number;
  single: boolean;
  trusted: boolean;
}

let batchIds = 0;

export function gradeTask(
  grader: GraderCode,
  batch: PackedBatch,
  resolve: (outcomes: GradeOutcome[]) => void,
  deadlineAt?: number,
): GradeTask {
  const task: GradeTask = {
    kind: "grade",
    project: grader.project,
    grader,
    batch,
    batchId: ++batchIds,
    count: batch.count,
    units: unitsOf(batch),
    outcomes: [],
    next: 0,
    aside: [],
    single: false,
    culprits: new Map(),
    crashes: 0,
    ...(deadlineAt === undefined ? {} : { deadlineAt }),
    done: false,
    resolve: (outcomes) => {
      if (task.done) return;
      task.done = true;
      clearTimeout(task.timer);
      resolve(outcomes);
    },
  };
  return task;
}

/** The unit a slice retries alone, once every other item has its outcome; undefined while the first pass goes on. */
export function retrying(task: GradeTask): number | undefined {
  return task.next >= task.count ? task.aside[0] : undefined;
}

/** Where a slice from `from` must stop: no item at or past a known culprit is graded again; a retry, at its unit's end. */
export function sliceEnd(task: GradeTask, from: number): number {
  if (from < task.next) return task.units.endOf(from);
  let end = task.count;
  for (const at of task.culprits.keys()) if (at >= from && at < end) end = at;
  return end;
}

const overLimit = (o: GradeOutcome) => "error" in o && (o.error.code === "GRADER_TIMEOUT" || o.error.code === "GRADER_MEMORY_LIMIT");

/**
 * Units (groups, or threads) stopped by a limit at the end of what was graded so far (the
 * engine stops a batch after a few in a row). A unit set aside neither counts nor breaks the row.
 */
export function limitsAtEnd(task: Pick<GradeTask, "outcomes" | "units"> & { aside?: readonly number[] }): number {
  const { outcomes, units } = task;
  const aside = new Set(task.aside?.slice(-16));
  let n = 0;
  for (let end = outcomes.length, looked = 0; end > 0 && n < 16 && looked < 64; looked++) {
    const start = units.startOf(end - 1);
    if (!aside.has(start)) {
      for (let i = start; i < end; i++) if (!overLimit(outcomes[i])) return n;
      n++;
    }
    end = start;
  }
  return n;
}

/** The deadline came: every item not yet graded abstains, set aside or not (a known culprit keeps its error); the task is done. */
export function expire(task: GradeTask): void {
  if (task.done) return;
  while (task.next < task.count) {
    const error = task.culprits.get(task.next);
    task.outcomes.push(error ? { error } : unfinished());
    task.next++;
  }
  task.resolve(task.outcomes);
}

/** Every item not yet graded gets this error (a known culprit keeps its own; one set aside too); the task is done. */
export function finish(task: GradeTask, error: ItemError): void {
  if (task.done) return;
  for (const start of task.aside) for (let k = start; k < task.units.endOf(start); k++) task.outcomes[k] = { error };
  while (task.next < task.count) {
    task.outcomes.push({ error: task.culprits.get(task.next) ?? error });
    task.next++;
  }
  task.resolve(task.outcomes);
}

/** Known culprits at the next item get their error; true when that leaves nothing to grade, set aside or not (the task is resolved). */
export function skipCulprits(task: GradeTask): boolean {
  for (let error = task.culprits.get(task.next); error; error = task.culprits.get(task.next)) {
    task.outcomes.push({ error });
    task.next++;
  }
  if (task.next < task.count || task.aside.length > 0) return false;
  task.resolve(task.outcomes);
  return true;
}

/**
 * A worker died under a slice of this task (`loss`: whose fault, blame.ts). The item the verdict
 * names, or the single item the slice ran, gets the error and is not tried again; the rest of
 * the slice is graded again. Without a named item the task goes on one item per slice, so a
 * second death names it. True when the task is to be queued again; false when it is finished
 * (its module took the worker down while loading, or too many deaths).
 */
export function contain(task: GradeTask, loss: Loss, running: Running): boolean {
  const { code, message, verdict, blamed } = loss;
  task.crashes++;
  if (running.from < task.next && task.aside[0] === running.from) {
    // a unit set aside took the worker down on its retry, run alone: it is the culprit
    for (let k = running.from; k < task.units.endOf(running.from); k++) task.outcomes[k] = { error: { code, message } };
    task.aside.shift();
  }
  // which item was running: the verdict names the call; a single-item slice names it too
  const from = verdict ? verdict.from : running.from;
  const count = verdict ? verdict.count : running.single ? 1 : -1;
  if (count === 0 && blamed) {
    // the grader's module itself took the worker down while loading: no item can be graded
    finish(task, { code, message });
    return false;
  }
  // the call ran one unit, or the verdict names one: with groups the whole group, graded as one, is the culprit
  const start = task.units.startOf(from);
  const named =
    count >= 1 && from >= task.next && from + count <= task.count && task.units.endOf(from + count - 1) === task.units.endOf(from);
  if (named && start >= task.next) {
    // the culprit is known: it gets the error; the items before it (graded in the lost slice) are graded again
    for (let k = start; k < task.units.endOf(from); k++) task.culprits.set(k, { code, message });
    task.single = false;
  } else {
    task.single = true; // one item per slice from here on, so a further crash names its item
  }
  if (task.crashes >= MAX_CRASHES_PER_BATCH) {
    finish(task, {
      code,
      message: `not run: this batch took ${task.crashes} sandbox workers down, so the rest of it fails fast (last: ${message})`,
    });
    return false;
  }
  return true;
}

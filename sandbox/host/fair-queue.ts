// Fairness between projects, apart from any process: per-project FIFO queues served round-robin,
// and the rule that decides whether a grading task may start now. The scheduler (scheduler.ts)
// asks the queue for the first task the rule accepts whenever a grading worker is idle.

/** Per-project FIFO queues served round-robin. */
export class FairQueue<T extends { project: string }> {
  private readonly queues = new Map<string, T[]>();
  /** projects with queued tasks, in the order they are served */
  private ring: string[] = [];

  push(task: T): void {
    const q = this.queues.get(task.project);
    if (q) q.push(task);
    else {
      this.queues.set(task.project, [task]);
      this.ring.push(task.project);
    }
  }

  get size(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  /**
   * The first task, in round-robin order of projects, that `eligible` accepts (within a project,
   * one `first` also accepts if there is one); the project then goes to the back.
   */
  take(eligible: (task: T, waiting: readonly string[]) => boolean, first?: (task: T) => boolean): T | undefined {
    for (let r = 0; r < this.ring.length; r++) {
      const project = this.ring[r];
      const q = this.queues.get(project) as T[];
      let at = first ? q.findIndex((t) => first(t) && eligible(t, this.ring)) : -1;
      if (at < 0) at = q.findIndex((t) => eligible(t, this.ring));
      if (at < 0) continue;
      const [task] = q.splice(at, 1);
      this.ring.splice(r, 1);
      if (q.length > 0) this.ring.push(project);
      else this.queues.delete(project);
      return task;
    }
    return undefined;
  }

  /** Takes `task` out of its queue, if it is queued (a batch whose deadline came). */
  remove(task: T): boolean {
    const q = this.queues.get(task.project);
    const at = q ? q.indexOf(task) : -1;
    if (!q || at < 0) return false;
    q.splice(at, 1);
    if (q.length === 0) {
      this.queues.delete(task.project);
      this.ring.splice(this.ring.indexOf(task.project), 1);
    }
    return true;
  }

  drain(): T[] {
    const all = [...this.queues.values()].flat();
    this.queues.clear();
    this.ring = [];
    return all;
  }
}

/** The grading workers at the moment a task is considered. */
export interface Occupancy {
  /** grading workers ready now */
  workers: number;
  /** grading workers the pool runs when none is being replaced */
  size: number;
  /** grading slices running, per project */
  busy: ReadonlyMap<string, number>;
  /** grading slices of graders not yet trusted running now */
  untrustedBusy: number;
}

/**
 * Fair share: while another project waits, a project holds at most its share of the grading
 * workers (all of them divided by the projects with work, at least one); alone it may use all.
 * Graders not yet trusted may together hold at most all workers but one, so one stays free for
 * trusted graders; while a worker is being replaced the untrusted get fewer, so a runaway
 * grader cannot take the last one the pool has. `waiting`: the projects with queued tasks.
 */
export function fairShare(project: string, trusted: boolean, waiting: readonly string[], now: Occupancy): boolean {
  const busy = now.busy.get(project) ?? 0;
  const othersWaiting = waiting.some((p) => p !== project);
  if (othersWaiting) {
    const active = new Set([...now.busy.keys(), ...waiting]).size;
    if (busy >= Math.max(1, Math.floor(now.workers / active))) return false;
  }
  if (!trusted) {
    const cap = now.size >= 2 ? now.workers - 1 : 1;
    if (now.untrustedBusy >= cap) return false;
  }
  return true;
}

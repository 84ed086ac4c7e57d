// Which graders the pool trusts: a grader earns trust with clean jobs and loses it for a while
// with any timeout, out-of-memory or crash. Trusted graders' batches are split across idle
// workers; graders not yet trusted may together hold at most all workers but one (fair-queue.ts).

/** A grader is trusted after this many jobs without a timeout, OOM or crash… */
export const TRUST_AFTER_JOBS = 20;
/** …and stops being trusted for this long after one. */
export const SUSPECT_MS = 5 * 60 * 1000;
/** graders remembered; the one heard from longest ago is forgotten first */
export const HEALTH_MAX = 10_000;

interface Health {
  cleanJobs: number;
  lastFaultAt: number;
}

export class Trust {
  private readonly health = new Map<string, Health>();

  constructor(private readonly now: () => number = Date.now) {}

  trusted(graderId: string | undefined): boolean {
    const h = graderId === undefined ? undefined : this.health.get(graderId);
    return !!h && h.cleanJobs >= TRUST_AFTER_JOBS && this.now() - h.lastFaultAt > SUSPECT_MS;
  }

  /** One job (a slice) of this grader ended; `faulted`: with a timeout, OOM or crash of its own. */
  note(graderId: string, faulted: boolean): void {
    const h = this.health.get(graderId) ?? { cleanJobs: 0, lastFaultAt: 0 };
    if (faulted) {
      h.cleanJobs = 0;
      h.lastFaultAt = this.now();
    } else {
      h.cleanJobs++;
    }
    this.health.delete(graderId);
    this.health.set(graderId, h);
    if (this.health.size > HEALTH_MAX) this.health.delete(this.health.keys().next().value as string);
  }

  forget(graderId: string): void {
    this.health.delete(graderId);
  }
}

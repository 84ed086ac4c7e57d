// How many gradings of one project may run tenant-defined work on the API's event loop at once:
// judge prompts (templates rendered, rubric and pre-built prompts built) and endpoint metadata
// schema checks. Each request's work is bounded (request-work.ts), but one project sending 60 of
// them in parallel had 8 s of them interleaved on the loop every other project shares. Past
// `perProject`, a grading waits its turn, in arrival order, before it starts; a wait its deadline
// or its client's going away ends is no work at all. Function and code graders are not counted:
// their work is in the sandbox workers, behind the pool's own fair queue.

import { DeadlineError } from "./upstream.ts";

export class LoopShare {
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(private readonly perProject: number) {}

  /** Resolves with the release once the project has a turn; throws DeadlineError if `stop` aborts first. */
  async enter(project: string, stop?: AbortSignal): Promise<() => void> {
    const running = this.running.get(project) ?? 0;
    if (running < this.perProject) {
      this.running.set(project, running + 1);
      return this.releaser(project);
    }
    if (stop?.aborted) throw new DeadlineError();
    await new Promise<void>((resolve, reject) => {
      const queue = this.waiting.get(project) ?? [];
      this.waiting.set(project, queue);
      const turn = () => {
        stop?.removeEventListener("abort", leave);
        resolve();
      };
      const leave = () => {
        const at = queue.indexOf(turn);
        if (at >= 0) queue.splice(at, 1);
        if (queue.length === 0) this.waiting.delete(project);
        reject(new DeadlineError());
      };
      stop?.addEventListener("abort", leave, { once: true });
      queue.push(turn);
    });
    // the turn was handed over by a release: the running count already includes it
    return this.releaser(project);
  }

  /** what waits now, per project (for tests and metrics) */
  waitingFor(project: string): number {
    return this.waiting.get(project)?.length ?? 0;
  }

  private releaser(project: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.get(project)?.shift();
      if (next) {
        if (this.waiting.get(project)?.length === 0) this.waiting.delete(project);
        next();
        return;
      }
      const left = (this.running.get(project) ?? 1) - 1;
      if (left <= 0) this.running.delete(project);
      else this.running.set(project, left);
    };
  }
}

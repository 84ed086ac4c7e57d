// Reward-protocol WebSockets open at once, per project. Each socket may hold requests in flight
// (bounded by the body budget) and queue answers to a client that does not read (bounded per
// socket): without a cap on sockets, a project could multiply the second by opening more. Both
// addresses of the protocol (an API key's, a grade token's) count against their project's cap.

import { AppError } from "./errors.ts";

export class RewardSockets {
  private readonly byProject = new Map<string, number>();

  constructor(readonly perProject: number) {}

  /** Sockets of the project open now. */
  open(project: string): number {
    return this.byProject.get(project) ?? 0;
  }

  /** Counts one more socket of the project, or throws TOO_MANY_SOCKETS; the returned function (idempotent) gives it back. */
  take(project: string): () => void {
    const open = this.open(project);
    if (open >= this.perProject) {
      throw new AppError(
        "TOO_MANY_SOCKETS",
        `project "${project}" already has ${open} reward sockets open, its limit (GRADEBOX_REWARD_SOCKETS_PER_PROJECT): ` +
          "send more requests over the sockets it has (each carries many at once), or close one first",
        { limit: this.perProject },
      );
    }
    this.byProject.set(project, open + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = this.open(project) - 1;
      if (left > 0) this.byProject.set(project, left);
      else this.byProject.delete(project);
    };
  }
}

// Validations that take their worker down are counted per project; after a few within a
// window, that project's registrations and validations are refused for the rest of the window.
// In memory: a restart forgets, which only ever lets a project try again sooner.

import { AppError } from "./errors.ts";

export const VALIDATION_CRASHES = 3;
export const VALIDATION_WINDOW_MS = 10 * 60 * 1000;
const MAX_PROJECTS = 10_000;

export class ValidationLimiter {
  private readonly crashes = new Map<string, number[]>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A validation of this project took its worker down. */
  record(project: string): void {
    const recent = this.recent(project);
    recent.push(this.now());
    this.crashes.delete(project);
    this.crashes.set(project, recent);
    if (this.crashes.size > MAX_PROJECTS) this.crashes.delete(this.crashes.keys().next().value as string);
  }

  /** Throws VALIDATION_RATE_LIMITED while the project is over its allowance. */
  check(project: string): void {
    const recent = this.recent(project);
    if (recent.length < VALIDATION_CRASHES) return;
    const retryAfter = Math.ceil((recent[0] + VALIDATION_WINDOW_MS - this.now()) / 1000);
    throw new AppError(
      "VALIDATION_RATE_LIMITED",
      `${recent.length} validations of project "${project}" took their sandbox worker down in the last ${VALIDATION_WINDOW_MS / 60_000} minutes; ` +
        `registrations and validations of this project resume in ${retryAfter} s`,
      { retryAfter },
    );
  }

  private recent(project: string): number[] {
    const since = this.now() - VALIDATION_WINDOW_MS;
    return (this.crashes.get(project) ?? []).filter((at) => at > since);
  }
}

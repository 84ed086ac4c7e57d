// Whose fault a worker's death was. A grader is blamed only on the worker's own watchdog verdict
// naming its call (worker/watchdog.ts), or when V8 aborted the process while it ran that
// grader's call; an external kill, a stall or the pool's own last-resort kill never counts
// against anyone.

import type { Verdict } from "../protocol/replies.ts";
import type { EngineLimits } from "../protocol/requests.ts";
import type { GradeErrorCode } from "../validate/checks.ts";

/** a verdict on a call (not a request to be recycled) */
export type CallVerdict = Exclude<Verdict, { verdict: "recycle" }>;

export interface Loss {
  /** the error the lost call's item gets */
  code: GradeErrorCode;
  message: string;
  /** the grader (or the validated source) is at fault */
  blamed: boolean;
  /** the watchdog's verdict on the lost call, when it gave one */
  verdict?: CallVerdict;
}

export interface Death {
  /** the job id of the request the worker was running */
  job: number;
  /** the watchdog's last verdict line from this worker */
  verdict?: Verdict;
  /** the pool's backstop killed it after `budgetMs` of silence */
  hung?: boolean;
  budgetMs: number;
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function blame(death: Death, limits: EngineLimits): Loss {
  const { job, code, signal } = death;
  const verdict = death.verdict && "job" in death.verdict && death.verdict.job === job ? death.verdict : undefined;
  // V8's fatal out-of-memory path aborts the process (SIGABRT, or exit code 134)
  const aborted = !verdict && (signal === "SIGABRT" || code === 134);
  let errorCode: GradeErrorCode = "SANDBOX_CRASHED";
  let message = `the sandbox worker died while running this request (${signal ?? `exit code ${code}`}); it was not this grader's fault`;
  let blamed = false;
  if (verdict?.verdict === "memory") {
    errorCode = "GRADER_MEMORY_LIMIT";
    message = `exceeded the ${limits.memoryMb} MB memory limit (${verdict.detail}); its sandbox worker was replaced`;
    blamed = true;
  } else if (verdict?.verdict === "timeout") {
    errorCode = "GRADER_TIMEOUT";
    message = `exceeded the ${limits.timeoutMs} ms time limit inside a built-in that cannot be interrupted (${verdict.detail}); its sandbox worker was replaced`;
    blamed = true;
  } else if (verdict?.verdict === "stalled") {
    message = `the sandbox worker stalled (${verdict.detail}) and was replaced; it was not this grader's fault`;
  } else if (aborted) {
    errorCode = "GRADER_MEMORY_LIMIT";
    message = "the grader exhausted memory and V8 aborted its sandbox worker";
    blamed = true;
  } else if (death.hung) {
    message = `the sandbox worker stopped answering within ${death.budgetMs} ms and was replaced; it was not this grader's fault`;
  }
  return { code: errorCode, message, blamed, ...(verdict ? { verdict } : {}) };
}

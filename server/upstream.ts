// How the server calls something it does not control (a judge model, an endpoint): at most
// `maxConcurrency` items at once (the rest wait in arrival order), a deadline per attempt,
// retries with backoff on what a repeat can fix (429 honouring retry-after, 5xx, timeouts,
// refused connections), and a circuit breaker that fails fast while the target is down.

import type { GradeErrorCode } from "../sandbox/validate/checks.ts";
import { egressDenial } from "./egress.ts";
import type { RequestWork } from "./request-work.ts";

export type FailureKind = "unavailable" | "invalid" | "denied";

/** One attempt's failure, classified by the caller that understands the protocol. */
export class UpstreamError extends Error {
  override name = "UpstreamError";
  constructor(
    readonly kind: FailureKind,
    message: string,
    readonly options: { retryable?: boolean; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }
}

export interface UpstreamOptions {
  maxConcurrency: number;
  /** per attempt */
  timeoutMs: number;
  /** repeats after the first attempt (default 2) */
  retries?: number;
  /** consecutive failures that open the breaker (default 5) */
  breakerThreshold?: number;
  /** how long an open breaker fails fast before it lets one probe through (default 10 s) */
  breakerCooldownMs?: number;
  /** the longest wait between attempts, retry-after included (default 10 s) */
  maxRetryWaitMs?: number;
  /** a slot of the node's outbound calls, held for each attempt (OutboundGate.for(project)) */
  gate?: () => Promise<() => void>;
}

/** Waits `ms`, or less when `signal` aborts first (never rejects). */
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/** Parses retry-after (seconds or an HTTP date) and retry-after-ms into milliseconds. */
export function retryAfterMs(headers: { get(name: string): string | null } | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = Number(headers.get("retry-after-ms"));
  if (headers.get("retry-after-ms") && Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers.get("retry-after");
  if (!raw) return undefined;
  const seconds = Number(raw);
  const wait = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(raw) - Date.now();
  return Number.isFinite(wait) ? Math.max(0, wait) : undefined;
}

/** A status other than success: 429 waits for retry-after (and does not count against the breaker), 5xx and 408 retry, the rest fail. */
export function statusError(status: number, message: string, headers?: { get(name: string): string | null }): UpstreamError {
  if (status === 429) return new UpstreamError("unavailable", message, { retryable: true, retryAfterMs: retryAfterMs(headers) ?? 1000 });
  return new UpstreamError("unavailable", message, { retryable: status >= 500 || status === 408 });
}

/** A failure below HTTP: the egress policy, the dispatcher's size cap, the deadline, or the network. */
export function transportError(error: unknown, timedOut: boolean, who: string, maxBytes: number): UpstreamError {
  const denied = egressDenial(error);
  if (denied) return new UpstreamError("denied", denied.message);
  for (let e: unknown = error, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { code?: string }).code === "UND_ERR_RES_EXCEEDED_MAX_SIZE") {
      return new UpstreamError("invalid", `the response is over ${maxBytes} bytes; at most that is read`);
    }
  }
  if (timedOut) return new UpstreamError("unavailable", `${who} did not answer in time`, { retryable: true, cause: error });
  return new UpstreamError("unavailable", `cannot reach ${who}: ${rootCause(error)}`, {
    retryable: true,
    cause: error,
  });
}

/**
 * What actually failed: the innermost cause's message (fetch's own is only "fetch failed"; its
 * cause says "connect ECONNREFUSED 127.0.0.1:11434"), with its code when the message lacks it.
 */
function rootCause(error: unknown): string {
  let inner = error as { message?: unknown; code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; depth < 8 && inner?.cause && typeof inner.cause === "object"; depth++) inner = inner.cause as typeof inner;
  const message = typeof inner?.message === "string" && inner.message ? inner.message : String(inner);
  const code = typeof inner?.code === "string" ? inner.code : undefined;
  return code && !message.includes(code) ? `${message} (${code})` : message;
}

/** The outcome label of a failed call in the metrics. */
export function outcomeLabel(error: unknown): string {
  if (!(error instanceof UpstreamError)) return "error";
  return error.kind === "denied" ? "egress_denied" : error.kind === "invalid" ? "invalid_response" : "unavailable";
}

/** A failed call as an item's error, in the caller's codes for an unavailable and an invalid answer. */
export function itemErrorOf(
  error: unknown,
  codes: { unavailable: GradeErrorCode; invalid: GradeErrorCode },
): { code: GradeErrorCode; message: string } {
  if (error instanceof UpstreamError) {
    return { code: error.kind === "denied" ? "EGRESS_DENIED" : codes[error.kind], message: error.message };
  }
  return { code: codes.unavailable, message: `the call failed: ${(error as Error)?.message ?? String(error)}` };
}

export class Upstream {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private failures = 0;
  /** the last failure the breaker counted: what a fast failure while open says happened */
  private lastFailure = "";
  private openUntil = 0;
  private probing = false;
  readonly retries: number;
  private readonly threshold: number;
  private readonly cooldownMs: number;
  private readonly maxWaitMs: number;

  constructor(
    readonly name: string,
    private readonly options: UpstreamOptions,
  ) {
    this.retries = options.retries ?? 2;
    this.threshold = options.breakerThreshold ?? 5;
    this.cooldownMs = options.breakerCooldownMs ?? 10_000;
    this.maxWaitMs = options.maxRetryWaitMs ?? 10_000;
  }

  /** In flight now, and waiting for a slot. */
  get load(): { active: number; waiting: number } {
    return { active: this.active, waiting: this.waiting.length };
  }

  get breakerOpen(): boolean {
    return Date.now() < this.openUntil;
  }

  /**
   * Runs `fn` holding one of the `maxConcurrency` slots (an item may make several calls in it).
   * `deadline`: a call still waiting for a slot when it aborts leaves the queue (DeadlineError).
   */
  async withSlot<T>(fn: () => Promise<T>, deadline?: AbortSignal): Promise<T> {
    if (deadline?.aborted) throw new DeadlineError();
    if (this.active >= this.options.maxConcurrency) {
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          deadline?.removeEventListener("abort", leave);
          resolve();
        };
        const leave = () => {
          const at = this.waiting.indexOf(wake);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(new DeadlineError());
        };
        this.waiting.push(wake);
        deadline?.addEventListener("abort", leave, { once: true });
      });
    } else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }

  /**
   * One call with retries and the breaker; `attempt` throws UpstreamError to be classified.
   * `deadline`: when it aborts, the call in flight is aborted and nothing is retried
   * (DeadlineError: the request's deadline, not the target's fault, so not held against the breaker).
   */
  async call<T>(attempt: (signal: AbortSignal) => Promise<T>, deadline?: AbortSignal): Promise<T> {
    for (let n = 0; ; n++) {
      if (deadline?.aborted) throw new DeadlineError();
      const probe = this.admit();
      // the project's share of the node's sockets: waiting for it does not eat the attempt's deadline
      const release = this.options.gate ? await this.options.gate() : undefined;
      if (release) {
        // the target may have been found down while this call waited: fail fast, not one more call
        if (this.breakerOpen) {
          release();
          if (probe) this.probing = false;
          throw this.openError();
        }
      }
      const timeout = AbortSignal.timeout(this.options.timeoutMs);
      const signal = deadline ? AbortSignal.any([timeout, deadline]) : timeout;
      try {
        let result: T;
        try {
          result = await attempt(signal);
        } finally {
          release?.();
        }
        this.failures = 0;
        this.openUntil = 0;
        this.probing = false;
        return result;
      } catch (raw) {
        if (deadline?.aborted) {
          if (probe) this.probing = false;
          throw new DeadlineError();
        }
        const error =
          raw instanceof UpstreamError
            ? raw
            : timeout.aborted
              ? new UpstreamError("unavailable", `no answer within ${this.options.timeoutMs} ms`, { retryable: true, cause: raw })
              : new UpstreamError("unavailable", (raw as Error)?.message ?? String(raw), { retryable: true, cause: raw });
        this.probing = false;
        // a 429 means the target is up and busy: it is retried, not held against the breaker
        const counts = error.kind === "unavailable" && error.options.retryAfterMs === undefined;
        if (counts) this.lastFailure = error.message;
        if (counts && ++this.failures >= this.threshold) this.openUntil = Date.now() + this.cooldownMs;
        if (!error.options.retryable || n >= this.retries || this.breakerOpen) {
          if (n > 0 && error.kind === "unavailable") error.message = `${error.message} (after ${n + 1} attempts)`;
          throw error;
        }
        const backoff = Math.min(this.maxWaitMs, 100 * 2 ** n) * (0.5 + Math.random() * 0.5);
        await sleep(Math.min(this.maxWaitMs, error.options.retryAfterMs ?? backoff), deadline);
      }
    }
  }

  /** Open: fail fast; past the cool-down one probe goes through, and its outcome decides (true: this call is the probe). */
  private admit(): boolean {
    if (this.openUntil === 0) return false;
    if (Date.now() < this.openUntil || this.probing) throw this.openError();
    this.probing = true;
    return true;
  }

  private openError(): UpstreamError {
    return new UpstreamError(
      "unavailable",
      `${this.name} failed ${this.failures} times in a row${this.lastFailure ? ` (the last: ${this.lastFailure})` : ""}; calls fail fast until ${new Date(Math.max(this.openUntil, Date.now())).toISOString()} (circuit open)`,
    );
  }
}

/** The request's deadline came first: the item abstains (DEADLINE_EXCEEDED); nobody's fault. */
export class DeadlineError extends Error {
  constructor() {
    super("the batch's deadline came before this thread was graded");
  }
}

/** What a batch's outbound grading (judges, endpoints) may be given: the deadline's signal. */
export interface OutboundOptions {
  /** the batch's deadline, or its client going away: calls not yet made are not made */
  deadline?: AbortSignal;
  /** the request's budgets of tenant-defined work on the event loop, shared by every part (request-work.ts) */
  work?: RequestWork;
}

export const deadlineAbstention = () => ({
  abstained: { code: "DEADLINE_EXCEEDED" as const, reason: "the batch's deadline came before this thread was graded" },
});

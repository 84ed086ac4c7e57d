// One grading request's tenant-defined work on the API's event loop, counted across everything
// that grades it. A combined grader's parts draw on the same budgets, so a grader of 64 parts
// costs the loop what one part does (each had its own: 64 metadata schema checks of a batch held
// the loop 11 s, and 64 judge templates built 1,280 prompts of 1 MB for one request).
//
// The budgets per request: the endpoint metadata schema check's batch budget (SCHEMA_UNITS.batch,
// metered-schema.ts), the characters of judge prompts built (MAX_REQUEST_PROMPT_CHARS), and the
// bytes of endpoint replies read (MAX_REQUEST_REPLY_BYTES: 64 parts' replies of 16 KiB metadata
// a thread were 263 MB read for one request). clientGone is the signal of a request's client
// going away, which stops the model and endpoint calls it has not made yet (upstream.ts's
// deadline path). How many of a project's requests do such work at once: loop-share.ts.

import type { ServerResponse } from "node:http";
import { SchemaMeter } from "./endpoints/metered-schema.ts";
import { MAX_PROMPT_CHARS } from "./judges/template.ts";

/** Characters of judge prompts one request may build in all: 16 prompts at the largest one may be, or 1,000 of 16,000. */
export const MAX_REQUEST_PROMPT_CHARS = 16 * MAX_PROMPT_CHARS;

/** Bytes of endpoint replies one request may read in all (each reply is also held to its own cap). */
export const MAX_REQUEST_REPLY_BYTES = 64 * 1024 * 1024;

export class RequestWork {
  /** the endpoint schema checks of every part: one batch budget for the request */
  readonly schema = new SchemaMeter();
  private promptCharsLeft = MAX_REQUEST_PROMPT_CHARS;
  private replyBytesLeft = MAX_REQUEST_REPLY_BYTES;

  /** what is left of the request's reply budget: no reply is read past it */
  get replyBytes(): number {
    return this.replyBytesLeft;
  }

  /** Takes `bytes` of the reply budget; false, taking nothing, when they do not fit. */
  takeReply(bytes: number): boolean {
    if (bytes > this.replyBytesLeft) return false;
    this.replyBytesLeft -= bytes;
    return true;
  }

  /** Takes `chars` of the request's prompt budget; false, taking nothing, when they do not fit. */
  takePrompt(chars: number): boolean {
    if (chars > this.promptCharsLeft) return false;
    this.promptCharsLeft -= chars;
    return true;
  }
}

/** The message of a judge item past the request's prompt budget. */
export const PROMPTS_OVER_BUDGET = `not graded: the judge prompts of this request would pass ${MAX_REQUEST_PROMPT_CHARS.toLocaleString("en-US")} characters in all (every part of a combined grader counts); send fewer or shorter threads per request`;

/** Aborted when the response's connection closes before the response was sent: its client went away. */
export function clientGone(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

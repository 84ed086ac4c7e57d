// What comes back out of an isolate: one string the prelude builds record by record. Its
// strict reader runs in the worker (worker/reply-reader.ts), which trusts none of it.
//
// Records, one per graded item, in order:
//   n<number>;                 a finite score
//   r<length>:<json>           a structured result, its JSON exactly <length> characters
//   e<code index>,<line>,<column>,<length>:<message>
//                              an error; <line>,<column> (1-based) are where in the script the
//                              isolate ran (grader.js) a GRADER_ERROR was thrown, 0,0 when unknown
//                              (the engine maps them back to the user's source)
//   a<length>:<reason>         an abstention (GRADER_ABSTAINED: the grader returned null or
//                              threw Abstain), with its reason
// then one trailer character: "." (the call ended: all asked items done, or its time slice ran
// out) or "p" (the next item's promise was still pending when the microtasks drained, so it can
// never settle).
//
// The encoders run inside the isolate (bundled into the prelude) and use only `+` on primitive
// strings and numbers, which consults nothing grader code can replace. A result's JSON is at
// most MAX_RESULT characters and a message or reason MAX_MESSAGE (+1 for the ellipsis of a cut one) (protocol/replies.ts).

import { SANDBOX_ERROR_CODES, type SandboxErrorCode } from "../validate/checks.ts";

export const encodeNumber = (score: number): string => `n${score};`;
export const encodeResult = (json: string): string => `r${json.length}:${json}`;
// a null-prototype table, filled when the module loads: looking a code up consults no prototype
const CODE_INDEX: Record<string, number> = Object.create(null);
for (let i = 0; i < SANDBOX_ERROR_CODES.length; i++) CODE_INDEX[SANDBOX_ERROR_CODES[i]] = i;
/** the largest line or column an error record carries (six digits); a larger one is sent as unknown */
export const MAX_POSITION = 999_999;
export const encodeAbstain = (reason: string): string => `a${reason.length}:${reason}`;
// every part is a primitive number or string (the prelude passes numbers it parsed itself)
export const encodeError = (code: SandboxErrorCode, message: string, line = 0, column = 0): string =>
  `e${CODE_INDEX[code]},${line},${column},${message.length}:${message}`;

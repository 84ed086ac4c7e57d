// An endpoint's reply, read as it streams and bounded before anything parses it: at most the
// bytes a valid reply to the request could need (counted after any content-encoding is undone,
// so a compressed body cannot grow past it), nested at most so deep, and, for /batch_score, no
// more responses than were asked for. A reply past a bound stops being read there (the
// connection is dropped): 1.2 M responses to 2 requests cost a few kilobytes, not a 16 MB parse.

import type { ReadableStream } from "node:stream/web";
import { UpstreamError } from "../upstream.ts";

export interface ReplyLimits {
  /** bytes of body, decoded */
  maxBytes: number;
  /** levels of objects and arrays */
  maxDepth: number;
  /** elements of an array at the top two levels (the responses of a /batch_score reply) */
  maxItems?: number;
  /** the message when the body passes maxBytes (default: more than a valid reply can need) */
  tooLong?: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * A linear scan of JSON text as bytes (UTF-8 continuation bytes are never ASCII, so structure is
 * found byte by byte): the nesting, and the elements of the arrays at the top two levels. It
 * does not check that the text is JSON; the parser does that afterwards, on text known small.
 */
export class ShapeScan {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** whether the container at each of the top levels is an array, and its commas */
  private readonly isArray = [false, false, false];
  private readonly commas = [0, 0, 0];

  constructor(private readonly limits: Omit<ReplyLimits, "maxBytes">) {}

  /** Scans `bytes[0..end)`; answers what is wrong ("JSON nested more than …"), or undefined. */
  feed(bytes: Uint8Array, end = bytes.length): string | undefined {
    const { maxDepth, maxItems } = this.limits;
    for (let i = 0; i < end; i++) {
      const b = bytes[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (b === BACKSLASH) this.escaped = true;
        else if (b === QUOTE) this.inString = false;
        continue;
      }
      if (b === QUOTE) this.inString = true;
      else if (b === OPEN_ARRAY || b === OPEN_OBJECT) {
        if (++this.depth > maxDepth) return `JSON nested more than ${maxDepth} levels deep`;
        if (this.depth <= 2) {
          this.isArray[this.depth] = b === OPEN_ARRAY;
          this.commas[this.depth] = 0;
        }
      } else if (b === CLOSE_ARRAY || b === CLOSE_OBJECT) {
        if (this.depth > 0) this.depth--;
      } else if (b === COMMA && maxItems !== undefined && this.depth <= 2 && this.isArray[this.depth]) {
        if (++this.commas[this.depth] >= maxItems) return `more than ${maxItems} responses to ${maxItems} requests`;
      }
    }
    return undefined;
  }
}

/**
 * Reads a reply's body within `limits`, or throws UpstreamError "invalid" saying which was passed
 * (`path answered …`); the body is cancelled there. Transport errors are the caller's to map.
 */
export async function readReply(body: ReadableStream | null, path: string, limits: ReplyLimits): Promise<string> {
  if (!body) return "";
  const scan = new ShapeScan(limits);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = (await reader.read()) as ReadableStreamReadResult<Uint8Array>;
      if (done) break;
      // what lies within the cap is scanned first: a reply too deep says so even when also too long
      const within = Math.min(value.length, limits.maxBytes - total);
      const problem = scan.feed(value, within);
      if (problem) throw new UpstreamError("invalid", `${path} answered ${problem}`);
      if (within < value.length) {
        throw new UpstreamError(
          "invalid",
          limits.tooLong ??
            `${path} answered over ${limits.maxBytes} bytes, more than a valid reply to this request can need; no more is read`,
        );
      }
      chunks.push(value);
      total += value.length;
    }
  } catch (error) {
    // drops the connection: the rest of the body is never read
    reader.cancel().catch(() => {});
    throw error;
  }
  return new TextDecoder().decode(Buffer.concat(chunks, total));
}

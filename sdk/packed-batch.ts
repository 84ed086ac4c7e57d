// The packed batch: the form a batch of threads takes from the SDK to the server (the packed
// wire, POST …/grade-batch as PACKED_BATCH_TYPE) and from the server to an isolate. As JSON, every
// object of every thread is re-created from text, which costs more than most graders do. Packed,
// every turn's content travels in one string that the isolate slices (a V8 slice of a long string
// shares its parent, no copy), and only numbers and the metadata are parsed.
//
// The server checks a packed body (server/packed-body.ts) and hands it to the sandbox as it came,
// without building a thread object; the isolate's reader of it is sandbox/isolate/batch-reader.ts.

import { isRole, type Metadata, ROLE_RULE, ROLES, type WireThread, type WireTurn } from "./thread.ts";

export interface PackedBatch {
  count: number;
  /**
   * JSON: [[turn count, then role index and content length per turn, for each thread], [metadata
   * or null per thread]], and with groups a third element, [the group sizes in order]. A role
   * index below ROLES.length names a known role; the others index a fourth element, the batch's
   * other roles in order of first use (then the third is null when there are no groups): a
   * `developer` turn costs its string once per batch, not once per turn.
   */
  head: string;
  /** every turn's content, concatenated in order */
  text: string;
  /**
   * the group sizes in order (contiguous, summing to count), for the host and the engine: with
   * them a group is the unit of a batch, never split across workers, slices or calls
   */
  groups?: number[];
}

const ROLE_INDEX: ReadonlyMap<string, number> = new Map(ROLES.map((role, i) => [role, i]));

/** Throws TypeError for a thread that is not a WireThread, or groups that do not cover the threads (the server validated both already). */
export function packBatch(
  threads: ReadonlyArray<{ readonly turns: readonly WireTurn[]; readonly metadata?: Metadata }>,
  groups?: readonly number[],
): PackedBatch {
  if (groups !== undefined) checkGroups(groups, threads.length);
  const nums: number[] = [];
  const contents: string[] = [];
  const metadata: unknown[] = new Array(threads.length);
  // roles outside ROLES, by their index (ROLES.length + position in `others`)
  let otherIndex: Map<string, number> | undefined;
  const others: string[] = [];
  for (let t = 0; t < threads.length; t++) {
    const turns = threads[t]?.turns;
    if (!Array.isArray(turns)) throw new TypeError(`thread ${t}: turns must be an array`);
    nums.push(turns.length);
    for (let i = 0; i < turns.length; i++) {
      const { role, content } = turns[i];
      let index = ROLE_INDEX.get(role);
      if (index === undefined) {
        if (!isRole(role)) throw new TypeError(`thread ${t}, turn ${i}: ${ROLE_RULE}`);
        otherIndex ??= new Map();
        index = otherIndex.get(role);
        if (index === undefined) {
          index = ROLES.length + others.length;
          otherIndex.set(role, index);
          others.push(role);
        }
      }
      if (typeof content !== "string") throw new TypeError(`thread ${t}, turn ${i}: content must be a string`);
      nums.push(index, content.length);
      contents.push(content);
    }
    metadata[t] = threads[t].metadata ?? null;
  }
  const groupPart = groups === undefined ? (others.length ? ",null" : "") : `,[${groups.join(",")}]`;
  const rolePart = others.length ? `,${JSON.stringify(others)}` : "";
  const head = `[[${nums.join(",")}],${JSON.stringify(metadata)}${groupPart}${rolePart}]`;
  return { count: threads.length, head, text: contents.join(""), ...(groups === undefined ? {} : { groups: [...groups] }) };
}

/** Throws TypeError unless `groups` are positive integer sizes summing to `count`. */
export function checkGroups(groups: readonly number[], count: number): void {
  if (!Array.isArray(groups)) throw new TypeError("groups must be an array of group sizes");
  let sum = 0;
  for (const size of groups) {
    if (!Number.isSafeInteger(size) || size < 1) throw new TypeError(`groups must be positive integer sizes; got ${String(size)}`);
    sum += size;
  }
  if (sum !== count) throw new TypeError(`the group sizes sum to ${sum}, but there are ${count} threads`);
}

/** The media type of a packed grade-batch body: `<options JSON>\n<head>\n<text>`, UTF-8. */
export const PACKED_BATCH_TYPE = "application/vnd.gradebox.batch";

/** The packed body, as the OpenAPI document describes it beside grade-batch's JSON one. */
export const PACKED_BATCH_FORM =
  "The same request with its threads packed (both SDKs send it): the JSON body's fields but `threads` as a JSON " +
  "object, a newline, the head as JSON, a newline, then every turn's content concatenated, all UTF-8. The head is " +
  "[numbers, metadata]: numbers holds, per thread, its turn count then a role index (system, user, assistant, tool, " +
  "document are 0-4) and a content length in UTF-16 code units per turn; metadata holds an object or null per thread. " +
  "Other roles are indexed from 5 into a fourth element, [numbers, metadata, null, [role, …]]. The same limits as " +
  "JSON apply, with the same error codes. Null metadata is no metadata; a lone UTF-16 surrogate cannot travel in UTF-8 (send JSON).";

/**
 * A grade-batch request as the packed wire carries it: the request's options (every field of the
 * JSON body but `threads`) as JSON on the first line, the batch's head on the second (JSON never
 * holds a raw newline), and the contents after it. Throws TypeError for a thread that is not a
 * WireThread, or a content UTF-8 cannot carry as it is: the caller sends that batch as JSON.
 */
export function packedBody(
  threads: ReadonlyArray<{ readonly turns: readonly WireTurn[]; readonly metadata?: Metadata }>,
  options: Record<string, unknown>,
): string {
  const { head, text } = packBatch(threads);
  // UTF-8 has no lone surrogate (it would arrive as U+FFFD): such a batch goes as JSON, which escapes it
  if (!(text as string & { isWellFormed(): boolean }).isWellFormed()) throw new TypeError("a content holds a lone UTF-16 surrogate");
  return `${JSON.stringify(options)}\n${head}\n${text}`;
}

/**
 * The threads of a packed head's numbers, metadata and other roles over its text: packBatch
 * undone. It trusts its input (the server's parser checks a body before it unpacks one).
 */
export function unpackThreads(
  nums: readonly number[],
  metadata: ReadonlyArray<Metadata | null>,
  others: readonly string[],
  text: string,
): WireThread[] {
  const threads: WireThread[] = new Array(metadata.length);
  for (let t = 0, n = 0, pos = 0; t < metadata.length; t++) {
    const turns: WireTurn[] = new Array(nums[n++]);
    for (let i = 0; i < turns.length; i++, n += 2) {
      const index = nums[n];
      const end = pos + nums[n + 1];
      turns[i] = { role: index < ROLES.length ? ROLES[index] : others[index - ROLES.length], content: text.slice(pos, end) };
      pos = end;
    }
    const m = metadata[t];
    threads[t] = m === null || m === undefined ? { turns } : { turns, metadata: m };
  }
  return threads;
}

/** The threads of a packed batch's head (as JSON) and text; trusts its input, as unpackThreads does. */
export function unpackBatch({ head, text }: Pick<PackedBatch, "head" | "text">): WireThread[] {
  const parsed = JSON.parse(head) as [number[], Array<Metadata | null>, unknown?, string[]?];
  return unpackThreads(parsed[0], parsed[1], parsed[3] ?? [], text);
}

/** A packed body read back as the JSON body it stands for (packedBody undone), for a proxy or a test that looks into one. */
export function unpackBody(body: string): Record<string, unknown> & { threads: WireThread[] } {
  const first = body.indexOf("\n");
  const second = body.indexOf("\n", first + 1);
  return {
    ...JSON.parse(body.slice(0, first)),
    threads: unpackBatch({ head: body.slice(first + 1, second), text: body.slice(second + 1) }),
  };
}

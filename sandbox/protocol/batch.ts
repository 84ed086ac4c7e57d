// The form a batch of threads takes from the server to an isolate. As JSON, the isolate would
// re-create every object of every thread from text, which costs more than most graders do.
// Packed, every turn's content travels in one string that the isolate slices (a V8 slice of a
// long string shares its parent, no copy), and only numbers and the metadata are parsed.
//
// packBatch runs in the server's pool (and in the worker, for the sample thread of test_run);
// the isolate's reader of it is isolate/batch-reader.ts.

import { isRole, type Metadata, ROLE_RULE, ROLES, type WireTurn } from "../../sdk/thread.ts";

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

/**
 * The units of a batch: its groups, or each thread alone when it has none. Slices, calls, the
 * culprit of a lost worker and the parts of a split batch all begin and end at unit boundaries.
 */
export class Units {
  /** per item, where its unit ends (exclusive); absent without groups */
  private readonly ends: Int32Array | undefined;

  constructor(
    readonly count: number,
    groups?: readonly number[],
  ) {
    if (groups === undefined) return;
    this.ends = new Int32Array(count);
    let at = 0;
    for (const size of groups) {
      for (let k = 0; k < size && at + k < count; k++) this.ends[at + k] = at + size;
      at += size;
    }
  }

  get grouped(): boolean {
    return this.ends !== undefined;
  }

  /** where the unit holding item `i` ends (exclusive) */
  endOf(i: number): number {
    return this.ends === undefined || i >= this.count ? i + 1 : this.ends[i];
  }

  /** where the unit holding item `i` starts */
  startOf(i: number): number {
    if (this.ends === undefined || i <= 0) return Math.max(i, 0);
    let k = i;
    while (k > 0 && this.ends[k - 1] === this.ends[i]) k--;
    return k;
  }

  /** `i` begins a unit, or is the end of the batch */
  isStart(i: number): boolean {
    return this.ends === undefined || i <= 0 || i >= this.count || this.ends[i - 1] === i;
  }
}

export const unitsOf = (batch: PackedBatch): Units => new Units(batch.count, batch.groups);

// A batch that came packed (the packed wire: sdk/packed-batch.ts, server/packed-body.ts), in the
// server process: checked once, then cut into the parts the pool grades, or unpacked for what
// reads thread objects (judges, endpoints, combined graders, groups).

import { type PackedBatch, unpackThreads } from "../../sdk/packed-batch.ts";
import { type Metadata, ROLES, type WireThread } from "../../sdk/thread.ts";

/**
 * Kept as it came: the pool grades it without a thread object being built. `nums`, `metadata`
 * and `others` are its head as parsed (the check read them); `head` and `text` are what the
 * isolate is sent.
 */
export class PackedThreads {
  private offsets: { numAt: Int32Array; textAt: Float64Array } | undefined;
  private unpacked: WireThread[] | undefined;

  constructor(
    readonly head: string,
    readonly text: string,
    private readonly nums: readonly number[],
    private readonly metadata: ReadonlyArray<Metadata | null>,
    private readonly others: readonly string[],
  ) {}

  get count(): number {
    return this.metadata.length;
  }

  /** the whole batch, as the isolate reads it */
  get batch(): PackedBatch {
    return { count: this.count, head: this.head, text: this.text };
  }

  /**
   * threads from..to-1 as a batch of their own (a part of a split batch): its head made again
   * with only the other roles its turns use, its text a slice
   */
  slice(from: number, to: number): PackedBatch {
    if (from === 0 && to === this.count) return this.batch;
    const { numAt, textAt } = this.at();
    const nums = this.nums.slice(numAt[from], numAt[to]);
    const others: string[] = [];
    if (this.others.length > 0) {
      // re-indexed in order of first use: a part carries its own roles, not the whole batch's
      const index = new Map<number, number>();
      for (let k = 0; k < nums.length; ) {
        const turns = nums[k++];
        for (let i = 0; i < turns; i++, k += 2) {
          const role = nums[k];
          if (role < ROLES.length) continue;
          let mine = index.get(role);
          if (mine === undefined) {
            mine = ROLES.length + others.length;
            index.set(role, mine);
            others.push(this.others[role - ROLES.length]);
          }
          nums[k] = mine;
        }
      }
    }
    return {
      count: to - from,
      head: PackedThreads.head(nums, this.metadata.slice(from, to), others),
      text: this.text.slice(textAt[from], textAt[to]),
    };
  }

  /** a head made from its parts, as packBatch makes one (metadata through JSON.stringify) */
  static head(nums: readonly number[], metadata: ReadonlyArray<Metadata | null>, others: readonly string[]): string {
    const roles = others.length > 0 ? `,null,${JSON.stringify(others)}` : "";
    return `[[${nums.join(",")}],${JSON.stringify(metadata)}${roles}]`;
  }

  /** the batch as WireThreads, for what grades thread objects (judges, endpoints, groups) */
  threads(): WireThread[] {
    this.unpacked ??= unpackThreads(this.nums, this.metadata, this.others, this.text);
    return this.unpacked;
  }

  /** per thread (and one past the last): where its numbers start in `nums`, and its contents in `text` */
  private at(): { numAt: Int32Array; textAt: Float64Array } {
    if (this.offsets) return this.offsets;
    const numAt = new Int32Array(this.count + 1);
    const textAt = new Float64Array(this.count + 1);
    let n = 0;
    let pos = 0;
    for (let t = 0; t < this.count; t++) {
      numAt[t] = n;
      textAt[t] = pos;
      const turns = this.nums[n++];
      for (let i = 0; i < turns; i++, n += 2) pos += this.nums[n + 1];
    }
    numAt[this.count] = n;
    textAt[this.count] = pos;
    this.offsets = { numAt, textAt };
    return this.offsets;
  }
}

/** Threads as the grading path takes them: objects, or a batch that came packed. */
export type Threads = readonly WireThread[] | PackedThreads;

export const threadCount = (threads: Threads): number => (threads instanceof PackedThreads ? threads.count : threads.length);
/** the threads as objects (a packed batch unpacked, once) */
export const threadObjects = (threads: Threads): readonly WireThread[] => (threads instanceof PackedThreads ? threads.threads() : threads);

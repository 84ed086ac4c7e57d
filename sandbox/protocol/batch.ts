// The form a batch of threads takes from the server to an isolate. As JSON, the isolate would
// re-create every object of every thread from text, which costs more than most graders do.
// Packed, every turn's content travels in one string that the isolate slices (a V8 slice of a
// long string shares its parent, no copy), and only numbers and the metadata are parsed.
//
// packBatch runs on the host; BatchReader runs inside the isolate (bundled into the prelude).

import { type Metadata, ROLES, type Turn, type WireTurn } from "../../sdk/thread.ts";

export interface PackedBatch {
  count: number;
  /** JSON: [[turn count, then role index and content length per turn, for each thread], [metadata or null per thread]] */
  head: string;
  /** every turn's content, concatenated in order */
  text: string;
}

const ROLE_INDEX: ReadonlyMap<string, number> = new Map(ROLES.map((role, i) => [role, i]));

/** Throws TypeError for a thread that is not a WireThread (the server validated it already). */
export function packBatch(threads: ReadonlyArray<{ readonly turns: readonly WireTurn[]; readonly metadata?: Metadata }>): PackedBatch {
  const nums: number[] = [];
  const contents: string[] = [];
  const metadata: unknown[] = new Array(threads.length);
  for (let t = 0; t < threads.length; t++) {
    const turns = threads[t]?.turns;
    if (!Array.isArray(turns)) throw new TypeError(`thread ${t}: turns must be an array`);
    nums.push(turns.length);
    for (let i = 0; i < turns.length; i++) {
      const { role, content } = turns[i];
      const index = ROLE_INDEX.get(role);
      if (index === undefined) throw new TypeError(`thread ${t}, turn ${i}: role must be one of ${ROLES.join(", ")}`);
      if (typeof content !== "string") throw new TypeError(`thread ${t}, turn ${i}: content must be a string`);
      nums.push(index, content.length);
      contents.push(content);
    }
    metadata[t] = threads[t].metadata ?? null;
  }
  return { count: threads.length, head: `[[${nums.join(",")}],${JSON.stringify(metadata)}]`, text: contents.join("") };
}

// Captured when the module loads, which in an isolate is before any grader code runs: a grader
// that replaces JSON.parse or String.prototype.slice, or puts index setters on Array.prototype,
// still gets its next thread intact.
const jsonParse = JSON.parse;
const sliceString = Function.prototype.call.bind(String.prototype.slice) as (text: string, start: number, end: number) => string;
const defineProperty = Object.defineProperty;
const Offsets = Float64Array;
const ArrayCtor = Array;

/** Random access to the threads of a packed batch; each thread is decoded when it is asked for. */
export class BatchReader {
  private readonly nums: number[];
  private readonly metadata: Array<Record<string, unknown> | null>;
  /** per thread: where its numbers start in `nums`, and its contents in `text` */
  private readonly numAt: Float64Array;
  private readonly textAt: Float64Array;

  constructor(
    head: string,
    private readonly text: string,
  ) {
    const parsed = jsonParse(head) as [number[], Array<Record<string, unknown> | null>];
    this.nums = parsed[0];
    this.metadata = parsed[1];
    const count = this.metadata.length;
    this.numAt = new Offsets(count);
    this.textAt = new Offsets(count);
    for (let t = 0, n = 0, pos = 0; t < count; t++) {
      this.numAt[t] = n;
      this.textAt[t] = pos;
      const turns = this.nums[n++];
      for (let i = 0; i < turns; i++, n += 2) pos += this.nums[n + 1];
    }
  }

  get count(): number {
    return this.metadata.length;
  }

  turns(t: number): Turn[] {
    const nums = this.nums;
    let n = this.numAt[t];
    let pos = this.textAt[t];
    const count = nums[n++];
    const turns: Turn[] = new ArrayCtor(count);
    for (let i = 0; i < count; i++) {
      const end = pos + nums[n + 1];
      // defineProperty, not turns[i] =: an assignment would run a setter on Array.prototype
      defineProperty(turns, i, {
        value: [ROLES[nums[n]], sliceString(this.text, pos, end)],
        enumerable: true,
        writable: true,
        configurable: true,
      });
      pos = end;
      n += 2;
    }
    return turns;
  }

  metadataOf(t: number): Record<string, unknown> {
    return this.metadata[t] ?? {};
  }
}

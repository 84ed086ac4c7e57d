// Inside the isolate (bundled into the prelude): random access to the threads of a packed batch
// (protocol/batch.ts), each decoded when it is asked for. Only `head` is parsed; a turn's content
// is a slice of `text`, which V8 shares with its parent rather than copying.

import { adoptThread, ROLES, type StringThread, type Turn } from "../../sdk/thread.ts";

// Captured when the module loads, which in an isolate is before any grader code runs: a grader
// that replaces JSON.parse or String.prototype.slice, or puts index setters on Array.prototype,
// still gets its next thread intact.
const jsonParse = JSON.parse;
const sliceString = Function.prototype.call.bind(String.prototype.slice) as (text: string, start: number, end: number) => string;
const defineProperty = Object.defineProperty;
const Offsets = Float64Array;
const ArrayCtor = Array;
const KNOWN = ROLES.length;
const NO_ROLES: readonly string[] = [];

/** Random access to the threads of a packed batch; each thread is decoded when it is asked for. */
export class BatchReader {
  private readonly nums: number[];
  private readonly metadata: Array<Record<string, unknown> | null>;
  /** per thread: where its numbers start in `nums`, and its contents in `text` */
  private readonly numAt: Float64Array;
  private readonly textAt: Float64Array;
  /** per thread, where its group ends (exclusive); absent when the batch has no groups */
  private readonly groupEnd: Float64Array | undefined;
  /** the batch's roles outside ROLES (role index ROLES.length + k is others[k]) */
  private readonly others: readonly string[];

  constructor(
    head: string,
    private readonly text: string,
  ) {
    const parsed = jsonParse(head) as [number[], Array<Record<string, unknown> | null>, (number[] | null)?, string[]?];
    this.nums = parsed[0];
    this.metadata = parsed[1];
    // the optional elements are read only when they are there: past the array's end a read would
    // find a getter grader code put on Array.prototype (an index 2 that answers 7 made every unit
    // end at 0, and each later call of the grader spin to its time limit)
    const length = parsed.length;
    this.others = (length > 3 ? parsed[3] : undefined) ?? NO_ROLES;
    const count = this.metadata.length;
    this.numAt = new Offsets(count);
    this.textAt = new Offsets(count);
    const groups = length > 2 ? parsed[2] : undefined;
    if (groups !== undefined && groups !== null) {
      const ends = new Offsets(count);
      for (let g = 0, at = 0; g < groups.length; g++) {
        const end = at + groups[g];
        for (; at < end && at < count; at++) ends[at] = end;
      }
      this.groupEnd = ends;
    }
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

  get grouped(): boolean {
    return this.groupEnd !== undefined;
  }

  /** where the unit holding thread t ends (exclusive): its group's end, or t + 1 without groups */
  unitEnd(t: number): number {
    return this.groupEnd === undefined ? t + 1 : this.groupEnd[t];
  }

  /** thread t begins a unit (or is the batch's end) */
  unitStart(t: number): boolean {
    return this.groupEnd === undefined || t <= 0 || t >= this.count || this.groupEnd[t - 1] === t;
  }

  thread(t: number): StringThread {
    return adoptThread(this.turns(t), this.metadataOf(t));
  }

  /** threads from..to-1, a fresh array (defined element by element: no setter of grader code runs) */
  threads(from: number, to: number): StringThread[] {
    const out: StringThread[] = new ArrayCtor(to - from);
    for (let t = from; t < to; t++) {
      defineProperty(out, t - from, { value: this.thread(t), enumerable: true, writable: true, configurable: true });
    }
    return out;
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
        value: [this.role(nums[n]), sliceString(this.text, pos, end)],
        enumerable: true,
        writable: true,
        configurable: true,
      });
      pos = end;
      n += 2;
    }
    return turns;
  }

  private role(index: number): string {
    return index < KNOWN ? ROLES[index] : this.others[index - KNOWN];
  }

  metadataOf(t: number): Record<string, unknown> {
    return this.metadata[t] ?? {};
  }
}

// The packed batch between the server and its sandbox (its definition, and the packing, are the
// SDK's: sdk/packed-batch.ts), and the units slices, calls and parts are cut along.

import type { PackedBatch } from "../../sdk/packed-batch.ts";

export { checkGroups, type PackedBatch, packBatch } from "../../sdk/packed-batch.ts";

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

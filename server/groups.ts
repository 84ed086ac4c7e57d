// A batch's groups (GRPO's completions of one prompt): named by a metadata field (`groupBy`) or
// by an explicit group index per thread (`groups`). The sandbox wants each group contiguous and
// whole, so the threads are reordered group by group (in order of each group's first thread,
// each group's threads in their order) and the results put back in the request's order.

import { groupIndexes } from "../sdk/summary.ts";
import type { WireThread } from "../sdk/thread.ts";
import { AppError } from "./errors.ts";

export interface Grouping {
  /** order[k]: the request position of the k-th thread sent to grading */
  order: number[];
  /** group sizes, in the order sent */
  sizes: number[];
  /** the group index of each thread, in the request's order (for the summary) */
  index: number[];
}

/** The batch's groups, or undefined when it names none. */
export function groupsOf(threads: readonly WireThread[], by: { groupBy?: string; groups?: readonly number[] }): Grouping | undefined {
  if (by.groupBy !== undefined && by.groups !== undefined) {
    throw new AppError("INVALID_REQUEST", "give groupBy (a metadata field) or groups (an index per thread), not both");
  }
  let keys: unknown[];
  if (by.groups !== undefined) {
    if (by.groups.length !== threads.length) {
      throw new AppError(
        "INVALID_REQUEST",
        `groups must hold one group index per thread: ${by.groups.length} indexes for ${threads.length} threads`,
      );
    }
    keys = [...by.groups];
  } else if (by.groupBy !== undefined) {
    // the SDK cuts a batch it must split between the same groups (sdk/summary.ts)
    keys = groupIndexes(
      threads.map((t) => t.metadata),
      by.groupBy,
    );
  } else {
    return undefined;
  }
  const members = new Map<unknown, number[]>();
  for (const [i, key] of keys.entries()) {
    const list = members.get(key);
    if (list) list.push(i);
    else members.set(key, [i]);
  }
  const order: number[] = [];
  const sizes: number[] = [];
  const index = new Array<number>(threads.length);
  let g = 0;
  for (const list of members.values()) {
    for (const i of list) {
      order.push(i);
      index[i] = g;
    }
    sizes.push(list.length);
    g++;
  }
  return { order, sizes, index };
}

/** The threads in grading order. */
export const inGroupOrder = <T>(items: readonly T[], grouping: Grouping): T[] => grouping.order.map((i) => items[i]);

/** Results graded in group order, back in the request's order. */
export function inRequestOrder<T>(graded: readonly T[], grouping: Grouping): T[] {
  const out = new Array<T>(graded.length);
  for (const [k, i] of grouping.order.entries()) out[i] = graded[k];
  return out;
}

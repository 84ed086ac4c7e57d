// The form a batch of threads takes from the server to an isolate. As JSON, the isolate would
// re-create every object of every thread from text, which costs more than most graders do.
// Packed, every turn's content travels in one string that the isolate slices (a V8 slice of a
// long string shares its parent, no copy), and only numbers and the metadata are parsed.
//
// packBatch runs in the server's pool (and in the worker, for the sample thread of test_run);
// the isolate's reader of it is isolate/batch-reader.ts.

import { type Metadata, ROLES, type WireTurn } from "../../sdk/thread.ts";

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

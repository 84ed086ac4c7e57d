// Lowers the maximum of the memory a wasm binary defines. isolated-vm's memory limit does not
// count wasm memory, so the interpreter's own maximum is what holds a Python grader to its
// limit: past it, Python raises MemoryError and the isolate survives (measured: under a 128 MB
// isolate limit with the binary's 4 GiB maximum, Python took 1 GB).

/** Reads an unsigned LEB128 at `at`: [value, bytes it takes]. */
function readLeb(bytes: Uint8Array, at: number): [number, number] {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    const b = bytes[at + i];
    value += (b & 0x7f) * 2 ** (7 * i);
    if ((b & 0x80) === 0) return [value, i + 1];
  }
  throw new Error("malformed LEB128 in the wasm binary");
}

/** Writes `value` as an unsigned LEB128 of exactly `width` bytes (padded: valid wasm). */
function writeLeb(bytes: Uint8Array, at: number, width: number, value: number): void {
  if (value >= 2 ** (7 * width)) throw new Error(`${value} does not fit the binary's ${width}-byte field`);
  for (let i = 0; i < width; i++) {
    const part = Math.floor(value / 2 ** (7 * i)) & 0x7f;
    bytes[at + i] = i < width - 1 ? part | 0x80 : part;
  }
}

/**
 * A copy of the binary whose defined memory may grow to at most `maxPages` (64 KiB each), and
 * that memory's minimum. The field keeps its width, so no section moves.
 */
export function capMemory(binary: Uint8Array, maxPages: number): { bytes: Uint8Array<ArrayBuffer>; minPages: number } {
  const bytes = new Uint8Array(binary);
  let at = 8;
  while (at < bytes.length) {
    const id = bytes[at++];
    const [size, sizeWidth] = readLeb(bytes, at);
    at += sizeWidth;
    if (id === 5) {
      let p = at;
      const [count, countWidth] = readLeb(bytes, p);
      p += countWidth;
      if (count !== 1) throw new Error(`the binary defines ${count} memories; one was expected`);
      const flags = bytes[p++];
      if ((flags & 0x04) !== 0) throw new Error("the binary's memory is 64-bit");
      const [minPages, minWidth] = readLeb(bytes, p);
      p += minWidth;
      if ((flags & 0x01) === 0) throw new Error("the binary's memory has no maximum to lower");
      const [, maxWidth] = readLeb(bytes, p);
      if (maxPages < minPages) throw new Error(`a maximum of ${maxPages} pages is below the memory's minimum of ${minPages}`);
      writeLeb(bytes, p, maxWidth, maxPages);
      return { bytes, minPages };
    }
    at += size;
  }
  throw new Error("the binary defines no memory (it imports its memory, whose maximum the loader sets)");
}

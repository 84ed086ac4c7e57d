// Reading a judge's reply: the JSON object it was asked for, whether it came alone, in a code
// fence or inside prose. A model's text is not ours: it is scanned once, left to right, and at
// most a few candidate objects are parsed, however many braces it holds.

const MAX_CANDIDATES = 8;

/** The end (exclusive) of the balanced JSON object starting at `start`, or -1. */
function objectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */) depth++;
    else if (c === 125 /* } */) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** The first JSON object in `text`, or undefined. */
export function firstJsonObject(text: string): Record<string, unknown> | undefined {
  const asObject = (v: unknown) => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
  const trimmed = text.trim();
  if (trimmed.startsWith("{")) {
    try {
      const whole = asObject(JSON.parse(trimmed));
      if (whole) return whole;
    } catch {}
  }
  let from = 0;
  for (let n = 0; n < MAX_CANDIDATES; n++) {
    const start = text.indexOf("{", from);
    if (start < 0) return undefined;
    const end = objectEnd(text, start);
    if (end > 0) {
      try {
        const found = asObject(JSON.parse(text.slice(start, end)));
        if (found) return found;
      } catch {}
    }
    from = start + 1;
  }
  return undefined;
}

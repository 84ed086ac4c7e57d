// Reading what the user pasted or uploaded: threads, samples, rubric criteria.

/** A JSON array, one JSON object, or JSONL (a bad line is named: "threads line 2 is not JSON"). */
export function parseItems<T>(text: string, noun: string, where = ""): T[] {
  const trimmed = text.trim();
  if (!trimmed) throw new Error(`paste or upload at least one ${noun}`);
  if (trimmed.startsWith("[")) return JSON.parse(trimmed) as T[];
  try {
    return [JSON.parse(trimmed) as T];
  } catch {
    // numbered as the text is, blank lines included
    return text.split("\n").flatMap((l, i) => {
      if (!l.trim()) return [];
      try {
        return [JSON.parse(l) as T];
      } catch {
        throw new Error(`${where}line ${i + 1} is not JSON`);
      }
    });
  }
}

import type { StringThread } from "gradebox";

// Partial credit: the share of metadata.keywords found in the completion (case-insensitive).
async function grade(thread: StringThread): Promise<number> {
  const completion = (thread.completion() ?? "").toLowerCase();
  const keywords = (thread.metadata.keywords ?? []) as string[];
  if (keywords.length === 0) return 0.0;
  const hits = keywords.filter((k) => completion.includes(k.toLowerCase())).length;
  return hits / keywords.length;
}

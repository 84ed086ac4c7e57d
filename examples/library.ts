import type { StringThread } from "gradebox";
import { combine, exactMatch, f1Score, numericMatch } from "gradebox/graders";

// A legible reward: exact answer, numeric closeness and word overlap, weighted, with the parts.
async function grade(thread: StringThread) {
  const answer = thread.completion() ?? "";
  const expected = String(thread.metadata.expected ?? "");
  const result = combine([
    { name: "exact", score: exactMatch(answer, expected), weight: 2 },
    { name: "numeric", score: numericMatch(answer, Number(expected), { tolerance: 0.5 }) },
    { name: "overlap", score: f1Score(answer, expected) },
  ]);
  return { ...result, reason: `${result.subscores.filter((s) => s.score === 1).length} of 3 checks passed` };
}

import type { StringThread } from "gradebox";

// 1.0 when the completion matches the pattern in metadata.pattern (a JavaScript RegExp source).
async function grade(thread: StringThread): Promise<number> {
  const completion = thread.completion() ?? "";
  const pattern = String(thread.metadata.pattern ?? "");
  return new RegExp(pattern).test(completion) ? 1.0 : 0.0;
}

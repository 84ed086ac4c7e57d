import type { StringThread } from "gradebox";

const REQUIRED = ["name", "email", "age"];

// 1.0 when the completion is a JSON object with at least the keys name, email and age.
async function grade(thread: StringThread): Promise<number> {
  const completion = thread.completion() ?? "";
  try {
    const parsed = JSON.parse(completion);
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return 0.0;
    return REQUIRED.every((key) => key in parsed) ? 1.0 : 0.0;
  } catch {
    return 0.0;
  }
}

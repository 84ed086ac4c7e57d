// The README quickstart: register a grader, grade with it, manage it. Run with the server up:
//   npx tsx examples/quickstart.ts
import { readFileSync } from "node:fs";
import { Gradebox, NotFoundError, StringThread } from "gradebox";

const client = new Gradebox({
  baseURL: process.env.GRADEBOX_URL ?? "http://127.0.0.1:8787",
  project: "default",
  // `make run` created this key at first start; GRADEBOX_API_KEY wins when it is set
  apiKey: process.env.GRADEBOX_API_KEY ?? readFileSync("data/default.key", "utf8").trim(),
});

// the grader's source as the server stores it (a file works too: `file: "my-grader.ts"`)
const source = `async function grade(thread: StringThread): Promise<number> {
  const completion = thread.completion() ?? "";
  const expected = thread.metadata.expected ?? "";
  return completion.trim() === String(expected).trim() ? 1.0 : 0.0;
}`;

// start clean, so the quickstart can be run again
await client.graders.lock({ graderKey: "exact-match", locked: false }).catch((e) => e instanceof NotFoundError || Promise.reject(e));
await client.graders.delete({ graderKey: "exact-match" }).catch((e) => e instanceof NotFoundError || Promise.reject(e));

const created = await client.graders.create.function({ key: "exact-match", source, description: "Strict equality" });
console.log("created", created.key, "warnings:", created.warnings);

const thread = new StringThread(
  [
    ["user", "What is 2+2?"],
    ["assistant", "4"],
  ],
  { expected: "4" },
);
const { score } = await client.graders.grade({ graderKey: "exact-match", thread });
console.log("score", score);

const { results } = await client.graders.gradeBatch({
  graderKey: "exact-match",
  threads: [thread, new StringThread([["assistant", "five"]], { expected: "5" })],
});
console.log("batch", JSON.stringify(results));

console.log("graders", (await client.graders.list()).map((g) => g.key).join(", "));
console.log("source of", (await client.graders.get({ graderKey: "exact-match" })).key, "is stored");

await client.graders.lock({ graderKey: "exact-match", locked: true });
try {
  await client.graders.delete({ graderKey: "exact-match" });
} catch (error) {
  console.log("delete while locked:", (error as Error).message);
}
await client.graders.lock({ graderKey: "exact-match", locked: false });
await client.graders.delete({ graderKey: "exact-match" });
console.log("deleted");

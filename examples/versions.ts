// Versions and samples: a grader that carries sample threads, an update checked against them
// (a dry run first), a pinned grade and a restore. Run with the server up:
//   npx tsx examples/versions.ts
import { readFileSync } from "node:fs";
import { Gradebox, NotFoundError, StringThread } from "gradebox";

const client = new Gradebox({
  baseURL: process.env.GRADEBOX_URL ?? "http://127.0.0.1:8787",
  project: "default",
  apiKey: process.env.GRADEBOX_API_KEY ?? readFileSync("data/default.key", "utf8").trim(),
});
await client.graders.delete({ graderKey: "answer-match" }).catch((e) => e instanceof NotFoundError || Promise.reject(e));

const sample = (completion: string, expected?: number) => ({
  thread: new StringThread(
    [
      ["user", "What is 2+2?"],
      ["assistant", completion],
    ],
    { answer: "4" },
  ),
  ...(expected === undefined ? {} : { expected }),
});
// test_run grades these instead of the built-in sample thread; the first must score 1
const samples = [sample("4", 1), sample(" 4\n"), sample("four")];

const strict = "async function grade(t: StringThread): Promise<number> {\n  return t.completion() === t.metadata.answer ? 1 : 0;\n}";
const lenient =
  "async function grade(t: StringThread): Promise<number> {\n  return (t.completion() ?? '').trim() === t.metadata.answer ? 1 : 0;\n}";

const v1 = await client.graders.create.function({ key: "answer-match", source: strict, samples });
console.log("created version", v1.version);

const dry = await client.graders.update({ graderKey: "answer-match", source: lenient, dryRun: true });
console.log("dry run changed", JSON.stringify(dry.report.changed), "still version", dry.version);

const v2 = await client.graders.update({ graderKey: "answer-match", source: lenient });
console.log("updated to version", v2.version);

const padded = sample(" 4\n").thread;
console.log("current scores", (await client.graders.grade({ graderKey: "answer-match", thread: padded })).score);
console.log("version 1 scores", (await client.graders.grade({ graderKey: "answer-match", thread: padded, version: 1 })).score);

const versions = await client.graders.versions.list({ graderKey: "answer-match" });
console.log("versions", versions.map((v) => v.version).join(", "));
const restored = await client.graders.versions.restore({ graderKey: "answer-match", version: 1 });
console.log("restored version 1 as version", restored.version);

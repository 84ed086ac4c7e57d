// Judge graders: register a model, create a PASS/FAIL judge, see its prompt, grade with it
// alone and beside a function grader. Run with the server up and allowed to reach this machine
// (GRADEBOX_EGRESS_ALLOW=127.0.0.1/32 make run):
//   npx tsx examples/judges.ts
// With JUDGE_BASE_URL (and JUDGE_MODEL) set it uses that OpenAI-compatible server (Ollama:
// http://127.0.0.1:11434/v1, vLLM: http://127.0.0.1:8000/v1); without, it starts a toy judge.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { Gradebox, NotFoundError, StringThread } from "gradebox";

const client = new Gradebox({
  baseURL: process.env.GRADEBOX_URL ?? "http://127.0.0.1:8787",
  project: "default",
  apiKey: process.env.GRADEBOX_API_KEY ?? readFileSync("data/default.key", "utf8").trim(),
});

// The toy judge: an OpenAI-compatible /chat/completions that passes a response naming Paris.
async function startToyJudge(): Promise<{ url: string; close: () => void }> {
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const prompt: string = JSON.parse(body).messages.at(-1).content;
    const response = prompt.split("Response to judge:")[1] ?? "";
    const verdict = /paris/i.test(response) ? "PASS" : "FAIL";
    const content = JSON.stringify({ reasoning: `the response ${verdict === "PASS" ? "names" : "does not name"} Paris`, verdict });
    res.setHeader("content-type", "application/json");
    res.end(
      JSON.stringify({ choices: [{ message: { role: "assistant", content } }], usage: { prompt_tokens: 120, completion_tokens: 20 } }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/v1`, close: () => server.close() };
}
const toy = process.env.JUDGE_BASE_URL ? undefined : await startToyJudge();

// start clean, so the example can be run again
for (const graderKey of ["capital-quality", "capital-judge", "short-answer"]) {
  await client.graders.delete({ graderKey }).catch((e) => e instanceof NotFoundError || Promise.reject(e));
}
await client.models.delete({ modelKey: "local-judge" }).catch((e) => e instanceof NotFoundError || Promise.reject(e));

await client.models.create({
  key: "local-judge",
  baseURL: process.env.JUDGE_BASE_URL ?? toy?.url ?? "",
  model: process.env.JUDGE_MODEL ?? "toy",
  maxConcurrency: 8,
});
await client.graders.create.binaryJudge({
  key: "capital-judge",
  criteria: "The response correctly names the capital of France.",
  judgeModel: "local-judge",
});

const thread = (answer: string) =>
  new StringThread([
    ["user", "What is the capital of France?"],
    ["assistant", answer],
  ]);
const { messages } = await client.graders.prompt({ graderKey: "capital-judge", thread: thread("Paris.") });
console.log(`prompt: ${messages.length} messages, the last ${messages[1].content.split("\n").length} lines`);

const single = await client.graders.grade({ graderKey: "capital-judge", thread: thread("It is Paris.") });
console.log(`score ${single.score} (${single.metadata?.verdict}): ${single.reason}`);

await client.graders.create.function({
  key: "short-answer",
  source: "async function grade(t: StringThread): Promise<number> {\n  return (t.completion() ?? '').length <= 20 ? 1 : 0;\n}",
});
await client.graders.create.combined({
  key: "capital-quality",
  mode: "weighted",
  graders: [{ graderKey: "capital-judge", weight: 3 }, { graderKey: "short-answer" }],
});
const batch = await client.graders.gradeBatch({
  graderKey: "capital-quality",
  threads: [thread("Paris."), thread("Lyon."), thread("The capital of France is Paris, of course.")],
});
console.log(
  `combined ${JSON.stringify(batch.results.map((r) => ("score" in r ? r.score : "error" in r ? r.error.code : r.abstained.code)))}`,
);
toy?.close();

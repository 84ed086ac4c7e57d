// An external endpoint grader: start the example reward server (examples/reward-server), register
// it, grade with it, and call a Gradebox grader back over the same protocol. Run with the server
// up and allowed to reach this machine (GRADEBOX_EGRESS_ALLOW=127.0.0.1/32 make run):
//   npx tsx examples/endpoint.ts
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { Gradebox, NotFoundError } from "gradebox";

const baseURL = process.env.GRADEBOX_URL ?? "http://127.0.0.1:8787";
const apiKey = process.env.GRADEBOX_API_KEY ?? readFileSync("data/default.key", "utf8").trim();
const client = new Gradebox({ baseURL, project: "default", apiKey });

// the reward server, as a user would run it: its own process, on a free port
const server = spawn(process.execPath, ["--import", "tsx", "examples/reward-server/server.ts"], {
  env: { ...process.env, PORT: "0" },
  stdio: ["ignore", "pipe", "inherit"],
});
const [line] = await once(server.stdout, "data");
const url = /http:\/\/\S+/.exec(String(line))?.[0] ?? "";

await client.graders.delete({ graderKey: "exact-endpoint" }).catch((e) => e instanceof NotFoundError || Promise.reject(e));
const created = await client.graders.create.externalEndpoint({ key: "exact-endpoint", url, batchSize: 64 });
console.log(`registered ${created.endpoint?.info.name} ${created.endpoint?.info.version}`);

const thread = (answer: string, expected?: string) => ({
  turns: [
    { role: "user" as const, content: "What is 2+2?" },
    { role: "assistant" as const, content: answer },
  ],
  ...(expected === undefined ? {} : { metadata: { expected } }),
});
const { results } = await client.graders.gradeBatch({
  graderKey: "exact-endpoint",
  threads: [thread("4", "4"), thread("5", "4"), thread("4")],
});
console.log(`batch ${JSON.stringify(results.map((r) => ("score" in r ? r.score : "error" in r ? r.error.code : r.abstained.code)))}`);

// the other direction: any grader of Gradebox speaks the protocol at …/graders/{key}/reward
const reward = `${baseURL}/v1/projects/default/graders/exact-endpoint/reward`;
const response = await fetch(`${reward}/score`, {
  method: "POST",
  headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
  body: JSON.stringify({ ...thread("4", "4"), id: "q1" }),
});
const scored = await response.json();
// each reward names the grader, version and source digest that scored it, in its metadata
const { grader, version } = scored.metadata.gradebox.provenance;
console.log(`reward/score ${scored.reward} ${scored.id} (expected ${scored.metadata.expected}; by ${grader} v${version})`);
server.kill();

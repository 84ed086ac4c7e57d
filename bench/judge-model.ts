// The bench's judge model: the tests' scripted OpenAI-compatible server in a process of its own,
// answering every request PASS after a fixed delay (argv[2] ms). Prints its base URL.

import { FakeOpenAI } from "../test/support/fake-openai.ts";

const fake = await new FakeOpenAI().start();
fake.fallback = { json: { reasoning: "fixed", verdict: "PASS" }, delayMs: Number(process.argv[2] ?? 50) };
// the bench runs for a while: keep no history
fake.requests.push = () => 0;
process.stdout.write(`${fake.url}\n`);
process.on("SIGTERM", () => void fake.close().then(() => process.exit(0)));

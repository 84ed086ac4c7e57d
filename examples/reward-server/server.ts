// A minimal reward server (the protocol Gradebox's external endpoint graders call): copy it,
// replace `reward`. Run: PORT=8790 npx tsx examples/reward-server/server.ts
import Fastify from "fastify";

type Request = { turns: Array<{ role: string; content: string }>; metadata?: { expected?: string } | null; id?: string | number };
const reward = ({ turns, metadata, id }: Request) => ({
  reward: turns.at(-1)?.content.trim() === metadata?.expected?.trim() ? 1 : 0,
  metadata: { expected: metadata?.expected ?? null },
  ...(id === undefined ? {} : { id }),
});

const app = Fastify();
app.get("/info", async () => ({ version: "1.0.0", name: "exact-match", description: "1 when the last turn equals metadata.expected" }));
app.get("/metadata_schema", async () => ({ type: "object", properties: { expected: { type: "string" } }, required: ["expected"] }));
app.post<{ Body: Request }>("/score", async (req) => reward(req.body));
app.post<{ Body: { requests: Request[] } }>("/batch_score", async (req) => ({ responses: req.body.requests.map(reward) }));
console.log(`reward server on ${await app.listen({ port: Number(process.env.PORT ?? 8790), host: "127.0.0.1" })}`);

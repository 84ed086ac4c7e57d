// The remote servers of `make soak` (bench/soak.ts), on 127.0.0.1: the attacker's reward servers
// (one whose /metadata_schema is costly to check, one whose /batch_score answers 16 MB, one that
// never answers a score until let go, one that answers honestly), the attacker's and the
// victim's OpenAI-compatible models (test/support/fake-openai.ts), and the victim's reward server.
// Every request the attacker's servers receive is scanned for the victim's secrets.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { FakeOpenAI } from "../test/support/fake-openai.ts";

/** Counts, per label, the requests in which a watched value appears (anywhere: URL, headers, body). */
export class SecretWatch {
  readonly seen: Record<string, number> = {};

  /** label → the value looked for (a prefix finds every value that starts with it) */
  constructor(private readonly values: Record<string, string>) {
    for (const label of Object.keys(values)) this.seen[label] = 0;
  }

  scan(text: string): void {
    for (const [label, value] of Object.entries(this.values)) if (text.includes(value)) this.seen[label]++;
  }

  /** a FakeOpenAI's recorded requests, then forgotten (they keep every prompt) */
  drain(fake: FakeOpenAI): void {
    for (const r of fake.requests) this.scan(`${JSON.stringify(r.headers)}\n${JSON.stringify(r.body)}`);
    fake.requests.length = 0;
  }

  snapshot(): Record<string, number> {
    return { ...this.seen };
  }
}

export type ScoreMode = "honest" | "huge" | "hang";

let hugeReply: Buffer | undefined;
/** 1.2 M responses to /batch_score (15.6 MB), built once: a reply whatever the request held */
export function hugeBatchReply(): Buffer {
  hugeReply ??= Buffer.from(`{"responses":[${Array(1_200_000).fill('{"reward":0}').join(",")}]}`);
  return hugeReply;
}

/** A reward server of the reward-server protocol, misbehaving as told on /score and /batch_score. */
export class RewardServer {
  url = "";
  /** requests received */
  requests = 0;
  /** the most score requests held open at once since hold() */
  maxHolding = 0;
  private readonly held = new Set<ServerResponse>();
  private hanging = true;
  private server: Server | undefined;

  constructor(
    private readonly name: string,
    private readonly mode: ScoreMode,
    private readonly watch?: SecretWatch,
    /** what GET /metadata_schema answers; undefined: 404 (no schema) */
    private readonly metadataSchema?: unknown,
  ) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    // a held request may stay open as long as the attack lasts
    this.server.requestTimeout = 0;
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  get holding(): number {
    return this.held.size;
  }

  /** (hang) score requests are held open again */
  hold(): void {
    this.hanging = true;
    this.maxHolding = 0;
  }

  /** (hang) every held request, and every later one, is answered 400 at once */
  release(): void {
    this.hanging = false;
    for (const res of this.held) this.refuse(res);
    this.held.clear();
  }

  async close(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private refuse(res: ServerResponse): void {
    if (!res.writableEnded) res.writeHead(400, { "content-type": "application/json" }).end('{"error":"released"}');
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.on("error", () => {}); // a reader that stops early (a capped reply) just closes
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    this.requests++;
    const body = Buffer.concat(chunks).toString("utf8");
    this.watch?.scan(`${req.url}\n${JSON.stringify(req.headers)}\n${body}`);
    const send = (status: number, value: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
    const path = req.url ?? "";
    if (req.method === "GET" && path.endsWith("/info")) return void send(200, { version: "1", name: this.name, description: "soak" });
    if (req.method === "GET" && path.endsWith("/metadata_schema"))
      return void (this.metadataSchema === undefined ? send(404, {}) : send(200, this.metadataSchema));
    if (req.method !== "POST" || !(path.endsWith("/score") || path.endsWith("/batch_score"))) return void send(404, {});
    if (this.mode === "hang") {
      if (!this.hanging) return this.refuse(res);
      this.held.add(res);
      this.maxHolding = Math.max(this.maxHolding, this.held.size);
      res.on("close", () => this.held.delete(res));
      return;
    }
    if (this.mode === "huge") {
      res.writeHead(200, { "content-type": "application/json" }).end(hugeBatchReply());
      return;
    }
    const parsed = JSON.parse(body) as { requests?: Array<{ id?: string }>; id?: string };
    if (path.endsWith("/batch_score")) send(200, { responses: (parsed.requests ?? []).map((r) => ({ reward: 0.5, id: r.id })) });
    else send(200, { reward: 0.5, id: parsed.id });
  }
}

/** The attacker's servers, as the attack classes see them. */
export interface AttackerRemotes {
  /** /metadata_schema: an anyOf of 40 `contains` branches that all fail on an array of zeros */
  schema: RewardServer;
  /** /batch_score: 16 MB of 1.2 M responses, whatever it was asked */
  huge: RewardServer;
  /** /score and /batch_score: never answered until release() */
  hang: RewardServer;
  /** answers every score honestly (0.5) */
  honest: RewardServer;
  /** the attacker's OpenAI-compatible model (answers PASS) */
  model: FakeOpenAI;
  /** what reached any of these: the victim's secrets must never */
  watch: SecretWatch;
}

export const HOSTILE_SCHEMA = {
  type: "object",
  properties: { a: { anyOf: Array.from({ length: 40 }, (_, i) => ({ contains: { const: i + 1 } })) } },
};

export async function startAttackerRemotes(watch: SecretWatch): Promise<AttackerRemotes> {
  const [schema, huge, hang, honest, model] = await Promise.all([
    new RewardServer("hostile-schema", "honest", watch, HOSTILE_SCHEMA).start(),
    new RewardServer("huge-replies", "huge", watch).start(),
    new RewardServer("hang", "hang", watch).start(),
    new RewardServer("honest", "honest", watch).start(),
    new FakeOpenAI().start(),
  ]);
  return { schema, huge, hang, honest, model, watch };
}

export async function closeAttackerRemotes(r: AttackerRemotes): Promise<void> {
  await Promise.all([r.schema.close(), r.huge.close(), r.hang.close(), r.honest.close(), r.model.close()]);
}

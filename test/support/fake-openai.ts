// A scripted OpenAI-compatible chat-completions server on loopback, for the judge tests and the
// bench: it records every request, answers from a table of rules (first match wins, a rule may
// be used a number of times), and can misbehave on demand: an HTTP status with retry-after,
// garbage, a truncated body, a huge body, a hang, a delay. It counts requests in flight.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

export interface FakeRequest {
  body: {
    model: string;
    messages: Array<{ role: string; content: string }>;
    response_format?: unknown;
    [k: string]: unknown;
  };
  headers: IncomingMessage["headers"];
  /** every message's content, joined by blank lines */
  prompt: string;
}

export interface Behaviour {
  /** the assistant message's content */
  content?: string;
  /** an object sent as JSON content */
  json?: unknown;
  status?: number;
  retryAfter?: string;
  /** a 200 whose body is not JSON */
  garbageBody?: boolean;
  /** declares a longer body than it sends, then closes the connection */
  truncate?: boolean;
  /** a body of this many bytes */
  hugeBytes?: number;
  /** a 307 to this URL */
  redirect?: string;
  /** never answers (the connection stays open until the server closes) */
  hang?: boolean;
  delayMs?: number;
  usage?: { prompt_tokens: number; completion_tokens: number };
}

interface Rule {
  match: (req: FakeRequest) => boolean;
  reply: Behaviour | ((req: FakeRequest) => Behaviour);
  times: number;
}

/** A 200 "JSON" body of `bytes` spaces, written as the client reads (a reader that stops early just closes). */
export function sendBlanks(res: ServerResponse, bytes: number): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.on("error", () => {});
  const block = Buffer.alloc(64 * 1024, 0x20);
  let sent = 0;
  const pump = () => {
    while (sent < bytes) {
      sent += block.length;
      if (!res.write(block)) return void res.once("drain", pump);
    }
    res.end();
  };
  pump();
}

export class FakeOpenAI {
  readonly requests: FakeRequest[] = [];
  inFlight = 0;
  maxInFlight = 0;
  /** when set, a request with response_format gets a 400 (a server without structured output) */
  rejectStructured = false;
  fallback: Behaviour = { json: { reasoning: "meets the criteria", verdict: "PASS" } };
  private rules: Rule[] = [];
  private readonly hanging = new Set<ServerResponse>();
  private server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const address = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${address.port}/v1`;
    return this;
  }

  /** Requests whose prompt matches get `reply` (at most `times` times, default: always). */
  on(match: RegExp | ((req: FakeRequest) => boolean), reply: Behaviour | ((req: FakeRequest) => Behaviour), times = Infinity): this {
    const test = match instanceof RegExp ? (req: FakeRequest) => match.test(req.prompt) : match;
    this.rules.push({ match: test, reply, times });
    return this;
  }

  reset(): void {
    this.rules = [];
    this.requests.length = 0;
    this.maxInFlight = 0;
    this.rejectStructured = false;
    this.fallback = { json: { reasoning: "meets the criteria", verdict: "PASS" } };
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404).end();
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as FakeRequest["body"];
    const request: FakeRequest = { body, headers: req.headers, prompt: body.messages.map((m) => m.content).join("\n\n") };
    this.requests.push(request);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    res.on("close", () => {
      this.inFlight--;
      this.hanging.delete(res);
    });
    if (this.rejectStructured && body.response_format) {
      res
        .writeHead(400, { "content-type": "application/json" })
        .end(JSON.stringify({ error: { message: "response_format is not supported" } }));
      return;
    }
    const rule = this.rules.find((r) => r.times > 0 && r.match(request));
    if (rule) rule.times--;
    const behaviour = rule ? (typeof rule.reply === "function" ? rule.reply(request) : rule.reply) : this.fallback;
    if (behaviour.delayMs) await new Promise((resolve) => setTimeout(resolve, behaviour.delayMs));
    if (behaviour.hang) {
      this.hanging.add(res);
      return;
    }
    if (behaviour.status && behaviour.status !== 200) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (behaviour.retryAfter !== undefined) headers["retry-after"] = behaviour.retryAfter;
      res.writeHead(behaviour.status, headers).end(JSON.stringify({ error: { message: `scripted ${behaviour.status}` } }));
      return;
    }
    if (behaviour.redirect) {
      res.writeHead(307, { location: behaviour.redirect }).end();
      return;
    }
    if (behaviour.garbageBody) {
      res.writeHead(200, { "content-type": "application/json" }).end("<html>not json at all");
      return;
    }
    if (behaviour.hugeBytes) {
      sendBlanks(res, behaviour.hugeBytes);
      return;
    }
    const content = behaviour.content ?? JSON.stringify(behaviour.json ?? {});
    const usage = behaviour.usage ?? {
      prompt_tokens: Math.ceil(request.prompt.length / 4),
      completion_tokens: Math.ceil(content.length / 4),
    };
    const payload = JSON.stringify({
      id: `chatcmpl-${this.requests.length}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    });
    if (behaviour.truncate) {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(payload.length + 100) });
      res.write(payload.slice(0, 20));
      setTimeout(() => res.destroy(), 5);
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(payload);
  }
}

// A reward server that speaks Adaptive's WebSocket transport as Adaptive's own does
// (send_large_text: a response's JSON in 10 KiB chunks after a total_num_chunks message), and
// its HTTP routes beside it. The first path segment says how it behaves (`/good`, `/reverse`,
// `/silent`, …; see serve). Used by the endpoint WebSocket suite and the console's.

import { createServer, type IncomingMessage, type Server } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";

export interface Request {
  turns: Array<{ role: string; content: string }>;
  metadata: Record<string, unknown>;
  id: number;
}

/** Python's json.dumps: ", " and ": " between items, non-ASCII escaped. */
const pyDumps = (value: unknown): string =>
  JSON.stringify(value)
    .replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    .replace(/^\{"id":(\d+),"(total_num_chunks|chunk)":/, '{"id": $1, "$2": ');

/** What the reward server answers: the last turn's length, and the metadata's pad back as feedback. */
const respond = (r: Request) => ({
  reward: r.turns[r.turns.length - 1].content.length / 100,
  metadata: { feedback: `saw ${r.turns.length} turns`, ...(r.metadata.pad ? { pad: r.metadata.pad } : {}) },
  id: r.id,
});

/** send_large_text: the response's JSON (pydantic's, compact) in chunks of 10 * 1024 characters. */
function sendLarge(ws: WebSocket, text: string, id: number): number {
  const chars = Array.from(text); // Python slices code points
  const size = 10 * 1024;
  const total = Math.ceil(chars.length / size);
  ws.send(pyDumps({ id, total_num_chunks: total }));
  for (let i = 0; i < chars.length; i += size) ws.send(pyDumps({ id, chunk: chars.slice(i, i + size).join("") }));
  return total;
}

export class AdaptiveLike {
  server: Server | undefined;
  url = "";
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  /** per prefix: connections opened, their upgrade headers, messages received, answers' ids in the order sent */
  connections = new Map<string, number>();
  closes = new Map<string, number>();
  upgradeHeaders: Array<Record<string, unknown>> = [];
  messages: Array<{ prefix: string; request: Request }> = [];
  answered: number[] = [];
  chunkCounts: number[] = [];
  httpScoreCalls = 0;
  private readonly open = new Set<WebSocket>();

  async start() {
    this.server = createServer(async (req, res) => {
      let text = "";
      for await (const chunk of req) text += chunk;
      const [, prefix, path] = /^\/([^/]+)(\/.*)$/.exec(req.url ?? "") ?? [];
      if (path?.endsWith("/info"))
        return void res.end(JSON.stringify({ version: "1.0", name: `adaptive-like ${prefix}`, description: "" }));
      if (path?.endsWith("/metadata_schema")) return void res.end(JSON.stringify({ type: "object", properties: {} }));
      this.httpScoreCalls++;
      const body = JSON.parse(text || "{}");
      const answer = path === "/batch_score" ? { responses: body.requests.map(respond) } : path === "/score" ? respond(body) : undefined;
      if (!answer) return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
    });
    this.server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const [, prefix] = /^\/([^/]+)\/ws$/.exec(req.url ?? "") ?? [];
      if (!prefix) return void socket.end("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
      this.upgradeHeaders.push(req.headers);
      this.wss.handleUpgrade(req, socket, head, (ws) => this.serve(prefix, ws));
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  reset() {
    this.connections.clear();
    this.closes.clear();
    this.upgradeHeaders = [];
    this.messages = [];
    this.answered = [];
    this.chunkCounts = [];
    this.httpScoreCalls = 0;
  }

  async close() {
    for (const ws of this.open) ws.terminate();
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private serve(prefix: string, ws: WebSocket) {
    const nth = (this.connections.get(prefix) ?? 0) + 1;
    this.connections.set(prefix, nth);
    this.open.add(ws);
    ws.on("close", () => {
      this.open.delete(ws);
      this.closes.set(prefix, (this.closes.get(prefix) ?? 0) + 1);
    });
    ws.on("error", () => {});
    const held: Request[] = [];
    let flush: NodeJS.Timeout | undefined;
    let received = 0;
    const answer = (r: Request) => {
      this.answered.push(r.id);
      // pydantic's model_dump_json: compact, non-ASCII as it is
      this.chunkCounts.push(sendLarge(ws, JSON.stringify(respond(r)), r.id));
    };
    ws.on("message", (data) => {
      const request = JSON.parse(data.toString()) as Request;
      this.messages.push({ prefix, request });
      received++;
      switch (prefix) {
        case "good":
          return answer(request);
        case "reverse":
          // held until the batch has stopped coming, then answered last first
          held.push(request);
          clearTimeout(flush);
          flush = setTimeout(() => {
            for (const r of held.splice(0).reverse()) answer(r);
          }, 50);
          return;
        case "silent":
          return;
        case "late":
          // the first request answered after the client gave up on it; the rest at once
          if (request.id === 0) return void setTimeout(() => ws.readyState === 1 && answer(request), 600);
          return answer(request);
        case "drop":
          // the first socket dies with two requests read and none answered; the next ones serve
          if (nth === 1) return void (received === 2 && ws.terminate());
          return answer(request);
        case "alwaysdrop":
          return ws.terminate();
        case "binary":
          return ws.send(Buffer.from([1, 2, 3]), { binary: true });
        case "garbled":
          return ws.send('{"id": 0, "chunk": "unterminated');
        case "unknown":
          return void sendLarge(ws, JSON.stringify(respond(request)), request.id + 1000);
        case "toomany":
          return ws.send(pyDumps({ id: request.id, total_num_chunks: 1_000_000_000 }));
        case "oversize": {
          // twenty full chunks: 200 KiB for one answer, where one needs at most ~100 KiB
          ws.send(pyDumps({ id: request.id, total_num_chunks: 20 }));
          for (let k = 0; k < 20; k++) ws.send(pyDumps({ id: request.id, chunk: "x".repeat(10 * 1024) }));
          return;
        }
        case "hugeframe":
          return ws.send(JSON.stringify({ id: request.id, reward: 1, metadata: { pad: "y".repeat(400 * 1024) } }));
        case "wrongshape":
          return void sendLarge(ws, JSON.stringify({ reward: "high", id: request.id }), request.id);
      }
    });
  }
}

// A reward server on loopback that answers the protocol (every reward 1) and records the
// headers of every call, so a test can see which secret reached it.

import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export class RecordingRewards {
  readonly headers: IncomingHttpHeaders[] = [];
  private server?: Server;
  url = "";
  async start(): Promise<this> {
    this.server = createServer(async (req, res) => {
      let text = "";
      for await (const chunk of req) text += chunk;
      this.headers.push(req.headers);
      if (req.url === "/info") return void res.end(JSON.stringify({ version: "1", name: "rm", description: "test" }));
      if (req.url === "/metadata_schema") return void res.writeHead(404).end();
      const body = JSON.parse(text || "{}") as { requests?: Array<{ id?: string }> };
      res.end(JSON.stringify({ responses: (body.requests ?? []).map((q) => ({ reward: 1, metadata: {}, id: q.id })) }));
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }
  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

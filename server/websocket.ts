// WebSocket upgrades through Fastify's own routing, so that a WebSocket route is authenticated,
// logged and answered like any other: an upgrade request is handed to the router with a response
// bound to its socket. A WebSocket route takes it over (upgradeRequest); any other route, or a
// refusal on the way (401, 404), is answered over HTTP and the socket is closed after it.

import { type IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type WebSocket, WebSocketServer } from "ws";

interface Pending {
  socket: Duplex;
  head: Buffer;
}
const pending = new WeakMap<IncomingMessage, Pending>();

/**
 * Routes the server's upgrade requests through `app`; open sockets are closed (1001) when it
 * closes. A message over `maxPayload` bytes closes its socket (1009) before it is buffered whole.
 */
export function acceptUpgrades(app: FastifyInstance, maxPayload: number): void {
  const open = new Set<WebSocket>();
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload });
  servers.set(app.server, { wss, open });
  app.server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    pending.set(req, { socket, head });
    const res = new ServerResponse(req);
    res.assignSocket(socket as never);
    // an upgrade not taken over was answered over HTTP: nothing more is read from its socket
    res.on("finish", () => {
      if (pending.has(req)) socket.destroy();
    });
    socket.on("error", () => socket.destroy());
    try {
      app.routing(req, res);
    } catch (error) {
      app.log.warn({ err: error }, "an upgrade request could not be routed");
      socket.destroy();
    }
  });
  app.addHook("preClose", async () => {
    for (const ws of open) ws.close(1001, "the server is shutting down");
    await new Promise((resolve) => setTimeout(resolve, 50).unref());
    for (const ws of open) ws.terminate();
  });
}

/** by the HTTP server, which every encapsulated instance of the app shares */
const servers = new WeakMap<object, { wss: WebSocketServer; open: Set<WebSocket> }>();

/** Whether the request asks for a WebSocket (and came through acceptUpgrades). */
export const wantsUpgrade = (req: FastifyRequest): boolean => pending.has(req.raw);

/** Completes the request's upgrade and answers its WebSocket (the reply is hijacked: nothing more is sent over HTTP). */
export function upgradeRequest(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): Promise<WebSocket> {
  const upgrade = pending.get(req.raw);
  const server = servers.get(app.server);
  if (!upgrade || !server) throw new Error("not an upgrade request");
  pending.delete(req.raw);
  reply.hijack();
  return new Promise((resolve) => {
    server.wss.handleUpgrade(req.raw, upgrade.socket, upgrade.head, (ws) => {
      server.open.add(ws);
      ws.on("close", () => server.open.delete(ws));
      resolve(ws);
    });
  });
}

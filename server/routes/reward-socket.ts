// The reward protocol over one WebSocket (Adaptive's transport: RewardClient.connect_websocket):
// each text message is a request with an id, `{id, turns, metadata?}` (score) or `{id, requests}`
// (batch_score), answered with that id whenever it is graded, so answers may come in any order.
// An answer is framed as Adaptive's servers frame it, `{id, total_num_chunks}` then that many
// `{id, chunk}` whose chunks joined are the response's JSON (?framing=whole: the response itself
// with its id, one message). A failure is `{id, error: {code, message, …}}`, framed the same way.
//
// Everything a client sends is bounded: a message's bytes (the HTTP body limit; past it the
// socket closes with 1009), the requests in flight (past them the socket is not read until one
// is answered), and its mistakes (a binary message closes with 1003; after MAX_INVALID invalid
// messages the socket closes with 1008).

import type { WebSocket } from "ws";
import type { z } from "zod";
import { AppError } from "../errors.ts";
import { parseUntrustedJson } from "../json-body.ts";

/** requests of one socket being graded at once; the socket is not read past them */
export const MAX_IN_FLIGHT = 64;
/** invalid messages a socket may send before it is closed */
export const MAX_INVALID = 16;
/** characters of a response's JSON per chunk, as Adaptive's servers chunk it */
export const CHUNK_CHARS = 10 * 1024;
/** bytes queued to a client that does not read: past them the socket is dropped */
const MAX_BUFFERED = 64 * 1024 * 1024;

export type Framing = "chunks" | "whole";
type Id = number | string;

export interface SocketHandlers<Score, Batch> {
  score: z.ZodType<Score>;
  batch: z.ZodType<Batch>;
  /** answers a score request, or throws AppError (the grader's failure as the HTTP route would answer it) */
  onScore(request: Score): Promise<Record<string, unknown>>;
  onBatch(request: Batch): Promise<Record<string, unknown>>;
}

export function serveRewardSocket<Score, Batch>(ws: WebSocket, framing: Framing, handlers: SocketHandlers<Score, Batch>): void {
  let inFlight = 0;
  let invalid = 0;
  let paused = false;

  const send = (id: Id | null, body: Record<string, unknown>) => {
    if (ws.readyState !== 1) return;
    if (ws.bufferedAmount > MAX_BUFFERED) return ws.terminate();
    if (framing === "whole") return ws.send(JSON.stringify({ id, ...body }));
    const text = JSON.stringify({ ...body, id });
    const chunks = Math.ceil(text.length / CHUNK_CHARS);
    ws.send(JSON.stringify({ id, total_num_chunks: chunks }));
    for (let k = 0; k < chunks; k++) ws.send(JSON.stringify({ id, chunk: text.slice(k * CHUNK_CHARS, (k + 1) * CHUNK_CHARS) }));
  };
  const fail = (id: Id | null, code: string, message: string, extra: Record<string, unknown> = {}) =>
    send(id, { error: { code, message, ...extra } });
  const refuse = (id: Id | null, message: string) => {
    fail(id, "INVALID_REQUEST", message);
    if (++invalid >= MAX_INVALID) ws.close(1008, `more than ${MAX_INVALID} invalid messages`);
  };

  ws.on("message", (data, isBinary) => {
    if (isBinary) return ws.close(1003, "messages are JSON text");
    let message: unknown;
    try {
      message = parseUntrustedJson(data.toString("utf8"));
    } catch {
      return refuse(null, "a message must be one JSON object (without __proto__ keys)");
    }
    if (message === null || typeof message !== "object" || Array.isArray(message)) return refuse(null, "a message must be a JSON object");
    const { id, ...rest } = message as Record<string, unknown>;
    if (!((typeof id === "number" && Number.isSafeInteger(id)) || (typeof id === "string" && id.length <= 256))) {
      return refuse(null, "a message needs an id (an integer, or a string of at most 256 characters): its answer carries it");
    }
    const batch = "requests" in rest;
    const parsed = batch ? handlers.batch.safeParse(rest) : handlers.score.safeParse({ ...rest, id });
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      return refuse(id, `${first?.path.map(String).join(".") || "the message"}: ${first?.message ?? "not a request"}`);
    }
    inFlight++;
    if (inFlight >= MAX_IN_FLIGHT && !paused) {
      paused = true;
      ws.pause();
    }
    const answer = batch ? handlers.onBatch(parsed.data as Batch) : handlers.onScore(parsed.data as Score);
    answer
      .then(
        (body) => send(id, body),
        (error: unknown) => {
          if (error instanceof AppError) fail(id, error.code, error.detail, error.extra);
          else fail(id, "INTERNAL", "the request could not be graded");
        },
      )
      .finally(() => {
        inFlight--;
        if (paused && inFlight < MAX_IN_FLIGHT) {
          paused = false;
          ws.resume();
        }
      });
  });
  ws.on("error", () => ws.terminate());
}

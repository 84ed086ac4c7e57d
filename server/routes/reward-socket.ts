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
// messages the socket closes with 1008). A request in flight holds its message's bytes of the
// project's share of the body budget, as an HTTP body does (body-budget.ts), from the moment it is
// read until its grading ends: one over the budget is answered TOO_MANY_BODIES or BODY_CAPACITY,
// not graded. Without that, 64 requests of 10 MB per socket took the API process past 1 GB.
// When the socket closes its grading is cancelled (the outbound calls of its judges and endpoints
// are aborted), so its budget comes back as soon as those calls stop, not when they time out.
// What a socket sends is bounded too: an answer larger than it may queue is that request's
// ANSWER_TOO_LARGE, and a client that leaves answers unread past the bound is dropped.

import type { WebSocket } from "ws";
import type { z } from "zod";
import type { BodyBudget } from "../body-budget.ts";
import { AppError } from "../errors.ts";
import { parseUntrustedJson } from "../json-body.ts";

/** requests of one socket being graded at once; the socket is not read past them */
export const MAX_IN_FLIGHT = 64;
/** invalid messages a socket may send before it is closed */
export const MAX_INVALID = 16;
/** characters of a response's JSON per chunk, as Adaptive's servers chunk it */
export const CHUNK_CHARS = 10 * 1024;

export type Framing = "chunks" | "whole";
type Id = number | string;

export interface SocketHandlers<Score, Batch> {
  score: z.ZodType<Score>;
  batch: z.ZodType<Batch>;
  /** answers a score request, or throws AppError (the grader's failure as the HTTP route would answer it) */
  onScore(request: Score, signal: AbortSignal): Promise<Record<string, unknown>>;
  onBatch(request: Batch, signal: AbortSignal): Promise<Record<string, unknown>>;
}

export interface SocketLimits {
  /** the project whose share of `budget` the socket's requests in flight hold */
  project: string;
  budget: BodyBudget;
  /** bytes queued to the client at most (GRADEBOX_REWARD_SOCKET_BUFFER_BYTES): a larger answer is refused, a client that does not read is dropped */
  bufferBytes: number;
}

export function serveRewardSocket<Score, Batch>(
  ws: WebSocket,
  framing: Framing,
  handlers: SocketHandlers<Score, Batch>,
  { project, budget, bufferBytes }: SocketLimits,
): void {
  let inFlight = 0;
  let invalid = 0;
  let paused = false;
  // aborted when the socket closes: grading nobody will read is stopped where it can be
  const closed = new AbortController();
  ws.once("close", () => closed.abort(new Error("the reward socket closed")));

  const framesOf = (id: Id | null, body: Record<string, unknown>): string[] => {
    if (framing === "whole") return [JSON.stringify({ id, ...body })];
    const text = JSON.stringify({ ...body, id });
    const chunks = Math.ceil(text.length / CHUNK_CHARS);
    const frames = [JSON.stringify({ id, total_num_chunks: chunks })];
    for (let k = 0; k < chunks; k++) frames.push(JSON.stringify({ id, chunk: text.slice(k * CHUNK_CHARS, (k + 1) * CHUNK_CHARS) }));
    return frames;
  };
  function send(id: Id | null, body: Record<string, unknown>, isError = false): void {
    if (ws.readyState !== 1) return;
    const frames = framesOf(id, body);
    const bytes = frames.reduce((sum, frame) => sum + Buffer.byteLength(frame), 0);
    // queued whole, one answer could pass the bound by any size: it is refused instead, as its request's error
    if (bytes > bufferBytes && !isError) {
      fail(
        id,
        "ANSWER_TOO_LARGE",
        `the answer is ${bytes} bytes as framed; a reward socket queues at most ${bufferBytes} ` +
          "(GRADEBOX_REWARD_SOCKET_BUFFER_BYTES): send fewer requests per batch_score message, or have the grader return less metadata",
        { limit: bufferBytes, size: bytes },
      );
      return;
    }
    // the client is not reading its answers (or even an error would not fit): nothing more is queued for it
    if (ws.bufferedAmount + bytes > bufferBytes) {
      ws.terminate();
      return;
    }
    for (const frame of frames) ws.send(frame);
  }
  function fail(id: Id | null, code: string, message: string, extra: Record<string, unknown> = {}): void {
    send(id, { error: { code, message, ...extra } }, true);
  }
  const refuse = (id: Id | null, message: string) => {
    fail(id, "INVALID_REQUEST", message);
    if (++invalid >= MAX_INVALID) ws.close(1008, `more than ${MAX_INVALID} invalid messages`);
  };

  ws.on("message", (data, isBinary) => {
    if (isBinary) return ws.close(1003, "messages are JSON text");
    const text = data.toString("utf8");
    let message: unknown;
    try {
      message = parseUntrustedJson(text);
    } catch {
      return refuse(null, "a message must be one JSON object (without __proto__ keys)");
    }
    if (message === null || typeof message !== "object" || Array.isArray(message)) return refuse(null, "a message must be a JSON object");
    const { id, ...rest } = message as Record<string, unknown>;
    if (!((typeof id === "number" && Number.isSafeInteger(id)) || (typeof id === "string" && id.length <= 256))) {
      return refuse(null, "a message needs an id (an integer, or a string of at most 256 characters): its answer carries it");
    }
    // held before the schema walks the message: a request the budget refuses is answered at once, never graded
    const bytes = Buffer.byteLength(text);
    try {
      budget.take(project, bytes);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return fail(id, error.code, error.detail, error.extra);
    }
    const batch = "requests" in rest;
    const parsed = batch ? handlers.batch.safeParse(rest) : handlers.score.safeParse({ ...rest, id });
    if (!parsed.success) {
      budget.give(project, bytes);
      const first = parsed.error.issues[0];
      return refuse(id, `${first?.path.map(String).join(".") || "the message"}: ${first?.message ?? "not a request"}`);
    }
    inFlight++;
    if (inFlight >= MAX_IN_FLIGHT && !paused) {
      paused = true;
      ws.pause();
    }
    const answer = batch ? handlers.onBatch(parsed.data as Batch, closed.signal) : handlers.onScore(parsed.data as Score, closed.signal);
    answer
      .then(
        (body) => send(id, body),
        (error: unknown) => {
          if (error instanceof AppError) fail(id, error.code, error.detail, error.extra);
          else fail(id, "INTERNAL", "the request could not be graded");
        },
      )
      // once answered, or once its grading stopped after the socket closed: the message is held by nothing of ours
      .finally(() => {
        budget.give(project, bytes);
        inFlight--;
        if (paused && inFlight < MAX_IN_FLIGHT) {
          paused = false;
          ws.resume();
        }
      });
  });
  ws.on("error", () => ws.terminate());
}

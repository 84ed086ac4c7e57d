// The client side of Adaptive's WebSocket transport, for endpoint graders registered with
// `transport: "websocket"`: one socket per endpoint grader per process at {url}/ws, opened when
// first needed and again after it closes. Each thread goes out as one score message, the /score
// body with an integer id (`{turns, metadata, id}`, as harmony's RewardClient sends it; Adaptive's
// server answers nothing else on its socket), and its answer comes back with that id whenever it
// is ready: `{id, total_num_chunks}` then that many `{id, chunk}` whose chunks joined are the
// response's JSON (send_large_text), or the response itself in one message.
//
// Everything read is hostile. The socket connects only to the address the egress policy resolved
// and allowed (the name is looked up once, there). A message is at most `frameBytes`; a reply at
// most `replyBytes` once joined, in at most that many chunks, nested at most `maxDepth` deep; the
// replies in progress at most `bufferedBytes` together. A message that breaks the framing ends
// the socket: when it names a request (a second header, a chunk without one, a reply too large)
// that request fails ENDPOINT_INVALID_RESPONSE and the others on the socket are retried; when it
// names none (binary, not JSON, no id or one never asked for) every request on the socket fails
// with it, since any of them may have been its. A well-framed answer of the wrong shape fails its
// own request only. A request given up (its attempt timed out) is remembered for a while so that
// its late answer is read and dropped rather than taken for one never asked for.

import { WebSocket } from "ws";
import { z } from "zod";
import { type EgressPolicy, egressDenial } from "../egress.ts";
import { parseUntrustedJson } from "../json-body.ts";
import { statusError, transportError, UpstreamError } from "../upstream.ts";
import { type ScoreRequest, ScoreResponse } from "./protocol.ts";
import { ShapeScan } from "./reply.ts";

export interface SocketLimits {
  /** bytes of one reply, its chunks joined */
  replyBytes: number;
  /** bytes of one message */
  frameBytes: number;
  /** bytes of the replies in progress on the socket, together */
  bufferedBytes: number;
  /** levels of objects and arrays in a reply */
  maxDepth: number;
}

/** requests given up whose late answers are still recognised */
const MAX_ABANDONED = 1024;
/** a socket with nothing in flight for this long is closed (the next call opens another) */
const IDLE_MS = 60_000;
/** bytes queued to an endpoint that does not read its socket: past them the socket is dropped */
const MAX_UNSENT = 64 * 1024 * 1024;

const FrameId = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
/** A Gradebox grader's reward socket answers a failure so: `{id, error: {code, message, …}}`. */
const ErrorAnswer = z.strictObject({
  error: z.looseObject({ code: z.string().max(64), message: z.string().max(10_000) }),
  id: z.unknown().optional(),
});

interface Reply {
  /** the chunks announced, and received so far */
  total: number;
  received: number;
  bytes: number;
  /** the chunks, kept while their request waits (undefined once it was given up: counted, not kept) */
  parts: string[] | undefined;
  scan: ShapeScan;
}

interface Pending {
  resolve(response: ScoreResponse): void;
  reject(error: UpstreamError): void;
  reply?: Reply;
}

const Header = z.strictObject({ id: z.number(), total_num_chunks: z.number().int() });
const Chunk = z.strictObject({ id: z.number(), chunk: z.string().min(1) });

export class EndpointSocket {
  private ws: WebSocket | undefined;
  private opening: Promise<WebSocket> | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();
  /** ids given up, with the reply they were receiving */
  private readonly abandoned = new Map<number, Reply | undefined>();
  /** bytes of the chunks kept */
  private buffered = 0;
  private idle: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    /** the endpoint's root, as registered (http:// or https://) */
    private readonly url: string,
    private readonly policy: EgressPolicy,
    private readonly limits: SocketLimits,
    /** the opening handshake's deadline */
    private readonly handshakeMs: number,
  ) {}

  /**
   * Scores one thread over the socket (opened with `headers` when there is none): its response,
   * checked against the protocol, or an UpstreamError: "invalid" for a wrong answer,
   * "unavailable" (retryable) for a socket that could not be opened or closed under it or an
   * answer that did not come before `signal`, "denied" for an address the egress policy refuses.
   */
  async score(request: Omit<ScoreRequest, "id">, headers: Record<string, string>, signal: AbortSignal): Promise<ScoreResponse> {
    if (this.closed) throw new UpstreamError("unavailable", "the endpoint grader was removed");
    const ws = await this.open(headers, signal);
    if (ws.bufferedAmount > MAX_UNSENT) {
      this.retire("the endpoint does not read its WebSocket");
      throw new UpstreamError("unavailable", "the endpoint does not read its WebSocket", { retryable: true });
    }
    const id = this.nextId++;
    clearTimeout(this.idle);
    return new Promise<ScoreResponse>((resolve, reject) => {
      const done = () => {
        signal.removeEventListener("abort", giveUp);
        this.settled();
      };
      const giveUp = () => {
        const entry = this.pending.get(id);
        if (!entry) return;
        this.pending.delete(id);
        this.abandon(id, entry.reply);
        done();
        reject(transportError(signal.reason, true, "the endpoint", this.limits.replyBytes));
      };
      this.pending.set(id, {
        resolve: (response) => {
          done();
          resolve(response);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
      signal.addEventListener("abort", giveUp, { once: true });
      if (signal.aborted) return giveUp();
      ws.send(JSON.stringify({ ...request, id }), (error) => {
        if (error) this.fail(id, new UpstreamError("unavailable", `cannot send to the endpoint: ${error.message}`, { retryable: true }));
      });
    });
  }

  /** Closes the socket for good: what is in flight fails. */
  close(): void {
    this.closed = true;
    this.retire("the endpoint grader was removed");
  }

  /** The open socket, or the one being opened; `signal` gives up waiting, not the opening (others may share it). */
  private async open(headers: Record<string, string>, signal: AbortSignal): Promise<WebSocket> {
    if (this.ws?.readyState === WebSocket.OPEN) return this.ws;
    // closing under us: what was in flight on it is not answered there
    if (this.ws) this.retire("the endpoint's WebSocket was closing");
    this.opening ??= this.connect(headers).finally(() => {
      this.opening = undefined;
    });
    let leave: (() => void) | undefined;
    try {
      return await Promise.race([
        this.opening,
        new Promise<never>((_, reject) => {
          leave = () => reject(transportError(signal.reason, true, "the endpoint", this.limits.replyBytes));
          if (signal.aborted) leave();
          else signal.addEventListener("abort", leave, { once: true });
        }),
      ]);
    } finally {
      if (leave) signal.removeEventListener("abort", leave);
    }
  }

  private async connect(headers: Record<string, string>): Promise<WebSocket> {
    const target = new URL(`${this.url.replace(/\/+$/, "")}/ws`);
    target.protocol = target.protocol === "https:" ? "wss:" : "ws:";
    let resolved: { address: string; family: 4 | 6 };
    try {
      // the one lookup: the socket goes to this address (a second lookup could answer differently)
      resolved = await this.policy.resolve(target.hostname);
    } catch (error) {
      const denied = egressDenial(error);
      if (denied) throw new UpstreamError("denied", denied.message);
      throw transportError(error, false, "the endpoint", this.limits.replyBytes);
    }
    const { address, family } = resolved;
    const ws = new WebSocket(target, {
      headers,
      maxPayload: this.limits.frameBytes,
      handshakeTimeout: this.handshakeMs,
      perMessageDeflate: false,
      // not followed: the headers (secrets among them) would go wherever it pointed
      followRedirects: false,
      lookup: (_host, options, callback) => (options.all ? callback(null, [{ address, family }]) : callback(null, address, family)),
    });
    return new Promise<WebSocket>((resolve, reject) => {
      let opened = false;
      ws.on("unexpected-response", (request, response) => {
        const status = response.statusCode ?? 0;
        const redirected = status >= 300 && status < 400 ? " (redirects are not followed: register the URL it points to)" : "";
        const missing =
          status === 404 ? ` (does the endpoint serve a WebSocket at ${target.pathname}? If not, register it with transport "http")` : "";
        reject(
          statusError(status, `GET ${target.pathname} (the WebSocket upgrade) answered HTTP ${status}${redirected}${missing}`, {
            get: (name) => {
              const value = response.headers[name];
              return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
            },
          }),
        );
        response.resume();
        (request as { destroy(): void }).destroy();
      });
      ws.on("error", (error: Error & { code?: string }) => {
        if (!opened) return reject(transportError(error, false, "the endpoint", this.limits.replyBytes));
        // the receiver's: a message past maxPayload, bad UTF-8, a malformed frame
        if (ws === this.ws && error.code?.startsWith("WS_ERR_")) {
          this.broken(
            error.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH"
              ? `sent a message over ${this.limits.frameBytes} bytes, more than a valid answer can need`
              : `broke the WebSocket protocol (${error.message})`,
          );
        }
        ws.terminate();
      });
      ws.once("open", () => {
        opened = true;
        if (this.closed) {
          ws.terminate();
          return reject(new UpstreamError("unavailable", "the endpoint grader was removed"));
        }
        this.ws = ws;
        ws.on("message", (data, isBinary) => this.onMessage(ws, data, isBinary));
        ws.on("close", (code) => {
          if (ws === this.ws) this.retire(`the endpoint's WebSocket closed (${code}) before answering`);
        });
        resolve(ws);
      });
    });
  }

  private onMessage(ws: WebSocket, data: Buffer, isBinary: boolean): undefined {
    if (ws !== this.ws) return;
    if (isBinary) return this.broken("sent a binary message; the protocol's messages are JSON text");
    const nested = new ShapeScan({ maxDepth: this.limits.maxDepth }).feed(data);
    if (nested) return this.broken(`sent a message ${nested}`);
    let frame: unknown;
    try {
      frame = parseUntrustedJson(data.toString("utf8"));
    } catch {
      return this.broken("sent a message that is not JSON (or uses __proto__ / constructor.prototype keys)");
    }
    if (frame === null || typeof frame !== "object" || Array.isArray(frame)) return this.broken("sent a message that is not a JSON object");
    const fields = frame as Record<string, unknown>;
    const id = FrameId.safeParse(fields.id);
    if (!id.success) {
      return this.broken(`sent a message whose id, ${String(JSON.stringify(fields.id)).slice(0, 40)}, is not one it was sent`);
    }
    const entry = this.pending.get(id.data);
    if (!entry && !this.abandoned.has(id.data)) return this.broken(`answered id ${id.data}, which was never asked or is already answered`);
    const reply = entry ? entry.reply : this.abandoned.get(id.data);

    if ("total_num_chunks" in fields) {
      const header = Header.safeParse(fields);
      const most = this.limits.replyBytes;
      if (!header.success || header.data.total_num_chunks < 1 || header.data.total_num_chunks > most) {
        return this.brokenBy(
          id.data,
          `announced total_num_chunks ${String(JSON.stringify(fields.total_num_chunks)).slice(0, 40)}; 1 to ${most}`,
        );
      }
      if (reply) return this.brokenBy(id.data, `announced the chunks of id ${id.data} twice`);
      const started: Reply = {
        total: header.data.total_num_chunks,
        received: 0,
        bytes: 0,
        parts: entry ? [] : undefined,
        scan: new ShapeScan({ maxDepth: this.limits.maxDepth }),
      };
      if (entry) entry.reply = started;
      else this.abandoned.set(id.data, started);
      return;
    }
    if ("chunk" in fields) {
      const chunk = Chunk.safeParse(fields);
      if (!chunk.success) return this.brokenBy(id.data, "sent a chunk that is not {id, chunk} with a non-empty string");
      if (!reply) return this.brokenBy(id.data, `sent a chunk of id ${id.data} before its {id, total_num_chunks}`);
      const problem = this.add(reply, chunk.data.chunk);
      if (problem) return this.brokenBy(id.data, problem);
      if (reply.received < reply.total) return;
      if (!entry) return void this.abandoned.delete(id.data);
      const text = (reply.parts ?? []).join("");
      this.buffered -= reply.bytes;
      entry.reply = undefined;
      let body: unknown;
      try {
        body = parseUntrustedJson(text);
      } catch {
        return this.fail(id.data, invalid("answered chunks that joined are not JSON (or use __proto__ / constructor.prototype keys)"));
      }
      return this.answer(id.data, body);
    }
    // an answer in one message: the response itself, with its id
    if (reply) return this.brokenBy(id.data, `answered id ${id.data} in one message while its chunks were coming`);
    if (!entry) return void this.abandoned.delete(id.data);
    if (data.length > this.limits.replyBytes) return this.brokenBy(id.data, `answered over ${this.limits.replyBytes} bytes to one request`);
    this.answer(id.data, frame);
  }

  /** Adds a chunk to its reply; answers what is wrong, or undefined. */
  private add(reply: Reply, chunk: string): string | undefined {
    const bytes = Buffer.from(chunk, "utf8");
    reply.received++;
    reply.bytes += bytes.length;
    if (reply.received > reply.total) return `sent more chunks than the ${reply.total} it announced`;
    if (reply.bytes > this.limits.replyBytes) {
      return `answered over ${this.limits.replyBytes} bytes to one request, more than a valid answer can need`;
    }
    const nested = reply.scan.feed(bytes);
    if (nested) return `answered ${nested}`;
    if (!reply.parts) return undefined;
    reply.parts.push(chunk);
    this.buffered += bytes.length;
    if (this.buffered > this.limits.bufferedBytes) return `had over ${this.limits.bufferedBytes} bytes of answers in progress at once`;
    return undefined;
  }

  /** A whole answer to request `id`: a response of the protocol whose id, when it has one, is `id`. */
  private answer(id: number, body: unknown): undefined {
    const failure = ErrorAnswer.safeParse(body);
    if (failure.success) {
      const { code, message } = failure.data.error;
      return this.fail(id, new UpstreamError("unavailable", `the endpoint answered ${code}: ${message}`));
    }
    const parsed = ScoreResponse.safeParse(body);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      return this.fail(id, invalid(`answered ${first?.path.map(String).join(".") || "something"}: ${first?.message ?? "not a response"}`));
    }
    const echoed = parsed.data.id;
    if (echoed !== undefined && echoed !== null && echoed !== id && echoed !== String(id)) {
      return this.fail(id, invalid(`answered id ${id} with a response that carries id ${JSON.stringify(echoed)}`));
    }
    const entry = this.pending.get(id);
    this.pending.delete(id);
    entry?.resolve(parsed.data);
  }

  private fail(id: number, error: UpstreamError): undefined {
    const entry = this.pending.get(id);
    if (!entry) return;
    this.pending.delete(id);
    if (entry.reply?.parts) this.buffered -= entry.reply.bytes;
    entry.reject(error);
  }

  /** A message that names request `id` broke the framing: that request is invalid; the others are retried on another socket. */
  private brokenBy(id: number, problem: string): undefined {
    this.fail(id, invalid(problem));
    this.retire("the socket was closed after an invalid answer to another request");
  }

  /** A message that names no request broke the framing: any request on the socket may have been its. */
  private broken(problem: string): undefined {
    this.retire(invalid(problem));
  }

  /** Ends the socket; what is in flight on it fails (a message: retryable, as an outage). */
  private retire(why: string | UpstreamError): undefined {
    const ws = this.ws;
    this.ws = undefined;
    this.abandoned.clear();
    this.buffered = 0;
    clearTimeout(this.idle);
    const error = typeof why === "string" ? new UpstreamError("unavailable", why, { retryable: true }) : why;
    for (const [id, entry] of [...this.pending]) {
      entry.reply = undefined;
      this.fail(id, error);
    }
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      ws.close(typeof why === "string" ? 1000 : 1008);
      ws.terminate();
    }
  }

  private abandon(id: number, reply: Reply | undefined): void {
    if (reply?.parts) {
      this.buffered -= reply.bytes;
      reply.parts = undefined;
    }
    this.abandoned.set(id, reply);
    if (this.abandoned.size > MAX_ABANDONED) this.abandoned.delete(this.abandoned.keys().next().value as number);
  }

  /** With nothing in flight, the socket is closed after IDLE_MS. */
  private settled(): void {
    if (this.pending.size > 0 || !this.ws) return;
    clearTimeout(this.idle);
    const ws = this.ws;
    this.idle = setTimeout(() => {
      if (this.ws === ws && this.pending.size === 0) this.retire("idle");
    }, IDLE_MS).unref();
  }
}

const invalid = (problem: string) => new UpstreamError("invalid", `the endpoint's WebSocket ${problem}`);

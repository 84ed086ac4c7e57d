// External endpoint graders: reward servers a project registers, called from the API process
// over the egress dispatcher. Registration reads /info and /metadata_schema; grading checks each
// thread's metadata against the schema (INVALID_METADATA, no call), then calls /batch_score in
// chunks or /score per thread, in the endpoint's slots, with the Upstream's deadlines, retries
// and breaker. Replies are read as strictly as an isolate's: the protocol's shape and nothing
// else, one response per request in order, finite rewards, bounded sizes. An endpoint registered
// with transport "websocket" gets the same chunks, slots, deadlines, retries and breaker, each
// chunk sent as score messages over its socket (socket.ts).

import { type Dispatcher, fetch as undiciFetch } from "undici";
import { MAX_RESULT } from "../../sandbox/protocol/replies.ts";
import type { GradeOutcome } from "../../sandbox/validate/checks.ts";
import type { WireThread } from "../../sdk/thread.ts";
import { type EgressPolicy, egressPolicy } from "../egress.ts";
import { AppError } from "../errors.ts";
import { parseUntrustedJson } from "../json-body.ts";
import type { Metrics } from "../metrics.ts";
import type { OutboundGate } from "../outbound.ts";
import { MAX_REQUEST_REPLY_BYTES, type RequestWork } from "../request-work.ts";
import { MAX_METADATA_DEPTH } from "../schemas.ts";
import {
  DeadlineError,
  deadlineAbstention,
  itemErrorOf,
  type OutboundOptions,
  outcomeLabel,
  statusError,
  transportError,
  Upstream,
  UpstreamError,
} from "../upstream.ts";
import { compileMetadataSchema, MAX_SCHEMA_BYTES, type MetadataCheck, SchemaRefused } from "./metadata-schema.ts";
import { SchemaBudgetExceeded, SchemaMeter } from "./metered-schema.ts";
import { BatchScoreResponse, Info, type ScoreRequest, ScoreResponse } from "./protocol.ts";
import { readReply } from "./reply.ts";
import { EndpointSocket } from "./socket.ts";
import type { EndpointCreate, EndpointSpec } from "./spec.ts";

/** A reply body of an endpoint, at most (the dispatcher stops there; a reply's own cap is lower: replyBytes). */
export const MAX_ENDPOINT_RESPONSE_BYTES = 16 * 1024 * 1024;
/**
 * Bytes one response of a reply may need: its metadata is at most MAX_RESULT characters of JSON,
 * and a character may take 6 bytes on the wire (a \uXXXX escape, as Python's json.dumps writes
 * any non-ASCII one); 1 KiB more for the reward, the id, the keys and whitespace.
 */
const RESPONSE_BYTES = 6 * MAX_RESULT + 1024;
/** A reply to n requests, at most: n responses and the envelope (2 requests: 202 KB, not 16 MB). */
export const replyBytes = (n: number) => Math.min(MAX_ENDPOINT_RESPONSE_BYTES, n * RESPONSE_BYTES + 4096);
/** GET /info: three strings of at most 10,512 characters in all, escaped or not */
const INFO_BYTES = 64 * 1024;
/** GET /metadata_schema: its compact JSON is at most 16 KiB; room for indentation and escapes */
const SCHEMA_BYTES = 8 * MAX_SCHEMA_BYTES;
/** endpoint graders kept ready per process (their Upstream and compiled metadata check) */
const MAX_HANDLES = 1000;
/** An endpoint's answer nests at most this deep: its metadata as a thread's may, plus the envelope. */
const MAX_ANSWER_DEPTH = MAX_METADATA_DEPTH + 4;
/**
 * A WebSocket's bounds: an answer to one request as /score's, a message thrice that (a chunk of
 * it, JSON-escaped once more: a character of 4 UTF-8 bytes becomes 12), the answers in progress
 * on one socket together as a whole reply's cap.
 */
const SOCKET_LIMITS = {
  replyBytes: replyBytes(1),
  frameBytes: 3 * replyBytes(1) + 1024,
  bufferedBytes: MAX_ENDPOINT_RESPONSE_BYTES,
  maxDepth: MAX_ANSWER_DEPTH,
};
const CODES = { unavailable: "ENDPOINT_UNAVAILABLE", invalid: "ENDPOINT_INVALID_RESPONSE" } as const;

export interface EndpointTarget {
  id: string;
  project: string;
  key: string;
  spec: EndpointSpec;
}

interface Handle {
  upstream: Upstream;
  check?: MetadataCheck;
  /** transport "websocket": the endpoint's socket in this process */
  socket?: EndpointSocket;
}

export class Endpoints {
  private readonly handles = new Map<string, Handle>();

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly metrics: Metrics,
    private readonly options: {
      /** the secret headers of a call, read from the project's secrets when it is sent (throws SecretUnavailable) */
      secretHeaders?: (
        project: string,
        spec: Pick<EndpointCreate, "url" | "headersEnv" | "headersSecret">,
      ) => Promise<Record<string, string>>;
      /** the node's outbound calls, shared fairly between projects */
      gate?: OutboundGate;
      /** a grader's fault (its metadata schema check went over budget), counted towards its quarantine */
      onFault?: (graderId: string, reason: string) => void;
      /** where a WebSocket may connect: the policy the dispatcher's connections follow (default: public addresses only) */
      egress?: EgressPolicy;
    } = {},
  ) {
    this.egress = options.egress ?? egressPolicy();
  }

  private readonly egress: EgressPolicy;

  /** Reads {url}/info and {url}/metadata_schema; refuses the endpoint with check "endpoint" when either is wrong. */
  async probe(project: string, create: EndpointCreate): Promise<EndpointSpec> {
    const refuse = (message: string): never => {
      throw new AppError("VALIDATION_FAILED", `endpoint check failed: ${message}`, { check: "endpoint", message });
    };
    const upstream = new Upstream(`endpoint ${create.url}`, {
      maxConcurrency: 1,
      timeoutMs: create.timeoutMs,
      retries: 0,
      gate: this.options.gate?.for(project),
    });
    const get = async (path: string, allow404: boolean, maxBytes: number) => {
      try {
        return await upstream.call(async (signal) =>
          this.send("GET", create, path, undefined, signal, allow404, await this.headersFor(project, create), maxBytes),
        );
      } catch (error) {
        if (error instanceof UpstreamError && error.kind === "denied") throw new AppError("EGRESS_DENIED", `url: ${error.message}`);
        return refuse(`GET ${path}: ${(error as Error).message}`);
      }
    };
    const info = Info.safeParse(await get("/info", false, INFO_BYTES));
    if (!info.success) refuse(`GET /info must answer {version, name, description} (strings, nothing else): ${issue(info.error)}`);
    const schema = await get("/metadata_schema", true, SCHEMA_BYTES);
    if (schema !== undefined) {
      try {
        compileMetadataSchema(schema);
      } catch (error) {
        if (error instanceof SchemaRefused) refuse(`GET /metadata_schema: ${error.message}`);
        throw error;
      }
    }
    return { ...create, info: info.data as EndpointSpec["info"], ...(schema === undefined ? {} : { metadataSchema: schema }) };
  }

  forget(id: string): void {
    this.handles.get(id)?.socket?.close();
    this.handles.delete(id);
  }

  /** Closes the endpoints' sockets (the server is closing). */
  close(): void {
    for (const handle of this.handles.values()) handle.socket?.close();
    this.handles.clear();
  }

  private handle(target: EndpointTarget): Handle {
    let handle = this.handles.get(target.id);
    if (!handle) {
      const { spec } = target;
      handle = {
        upstream: new Upstream(`endpoint ${target.key} (${spec.url})`, {
          maxConcurrency: spec.maxConcurrency,
          timeoutMs: spec.timeoutMs,
          gate: this.options.gate?.for(target.project),
        }),
        ...(spec.metadataSchema === undefined ? {} : { check: compileMetadataSchema(spec.metadataSchema) }),
        ...(spec.transport === "websocket" ? { socket: new EndpointSocket(spec.url, this.egress, SOCKET_LIMITS, spec.timeoutMs) } : {}),
      };
      // bounded as the judges' templates are: another node's delete is never heard here, and a
      // dropped handle is rebuilt on the next call (with a fresh breaker and socket; the dropped
      // one's socket serves what is in flight on it, then closes idle)
      if (this.handles.size >= MAX_HANDLES) this.handles.delete(this.handles.keys().next().value as string);
      this.handles.set(target.id, handle);
    }
    return handle;
  }

  async grade(target: EndpointTarget, threads: readonly WireThread[], { deadline, work }: OutboundOptions = {}): Promise<GradeOutcome[]> {
    const { spec } = target;
    const { upstream, check, socket } = this.handle(target);
    const label = `${target.project}/${target.key}`;
    const outcomes: GradeOutcome[] = new Array(threads.length);
    const pending = check ? await this.checkMetadata(target, check, threads, outcomes, work?.schema) : threads.map((_, i) => i);
    const size = spec.batch ? spec.batchSize : 1;
    if (socket) {
      const calls: Array<Promise<void>> = [];
      for (let k = 0; k < pending.length; k += size) {
        calls.push(this.overSocket(target, upstream, socket, threads, pending.slice(k, k + size), outcomes, deadline));
      }
      await Promise.all(calls);
      return outcomes;
    }
    // the thread's index in the batch as the id: an integer, as Adaptive's protocol declares ids
    const request = (i: number): ScoreRequest => ({ turns: threads[i].turns, metadata: threads[i].metadata ?? {}, id: i });
    // one call per chunk (/batch_score) or per thread (/score); a call's failure is its items' error
    const calls: number[][] = [];
    for (let k = 0; k < pending.length; k += size) calls.push(pending.slice(k, k + size));
    await Promise.all(
      calls.map(async (items) => {
        const started = performance.now();
        try {
          const results = await upstream.withSlot(
            () =>
              upstream.call(async (signal) => {
                const headers = await this.headersFor(target.project, spec);
                return spec.batch
                  ? this.batchScore(spec, items.map(request), signal, headers, work)
                  : this.score(spec, request(items[0]), signal, headers, work);
              }, deadline),
            deadline,
          );
          this.metrics.endpointCall(label, "ok", (performance.now() - started) / 1000);
          for (const [k, i] of items.entries()) outcomes[i] = results[k];
        } catch (error) {
          if (error instanceof DeadlineError) {
            for (const i of items) outcomes[i] = deadlineAbstention();
            return;
          }
          this.metrics.endpointCall(label, outcomeLabel(error), (performance.now() - started) / 1000);
          const item = itemErrorOf(error, CODES);
          for (const i of items) outcomes[i] = { error: item };
        }
      }),
    );
    return outcomes;
  }

  /**
   * One chunk over the endpoint's socket: a score message per thread, in one of its slots, as one
   * Upstream call. A thread answered keeps its answer; one whose answer was wrong (or a final
   * refusal) keeps its error; the rest, when their socket closed or their answer did not come in
   * time, are sent again on the next attempt, and what the last attempt left is their error.
   */
  private async overSocket(
    target: EndpointTarget,
    upstream: Upstream,
    socket: EndpointSocket,
    threads: readonly WireThread[],
    items: number[],
    outcomes: GradeOutcome[],
    deadline: AbortSignal | undefined,
  ): Promise<void> {
    const label = `${target.project}/${target.key}`;
    const started = performance.now();
    const settled = new Map<number, GradeOutcome>();
    let firstError: unknown;
    try {
      await upstream.withSlot(
        () =>
          upstream.call(async (signal) => {
            const headers = await this.headersFor(target.project, target.spec);
            const missing = items.filter((i) => !settled.has(i));
            const answers = await Promise.allSettled(
              missing.map((i) => socket.score({ turns: threads[i].turns, metadata: threads[i].metadata ?? {} }, headers, signal)),
            );
            let again: unknown;
            for (const [k, answer] of answers.entries()) {
              const i = missing[k];
              let error: unknown;
              if (answer.status === "fulfilled") {
                try {
                  settled.set(i, outcomeOf(answer.value));
                  continue;
                } catch (e) {
                  error = e;
                }
              } else error = answer.reason;
              if (error instanceof UpstreamError && !error.options.retryable) {
                firstError ??= error;
                settled.set(i, { error: itemErrorOf(error, CODES) });
              } else again ??= error;
            }
            if (again) throw again;
          }, deadline),
        deadline,
      );
      this.metrics.endpointCall(label, firstError ? outcomeLabel(firstError) : "ok", (performance.now() - started) / 1000);
    } catch (error) {
      if (error instanceof DeadlineError) {
        for (const i of items) outcomes[i] = settled.get(i) ?? deadlineAbstention();
        return;
      }
      this.metrics.endpointCall(label, outcomeLabel(error), (performance.now() - started) / 1000);
      const item = itemErrorOf(error, CODES);
      for (const i of items) outcomes[i] = settled.get(i) ?? { error: item };
      return;
    }
    for (const i of items) outcomes[i] = settled.get(i) as GradeOutcome;
  }

  /** A call's secret headers; a secret that cannot be sent fails the call as an outage (not retried). */
  private async headersFor(
    project: string,
    spec: Pick<EndpointCreate, "url" | "headersEnv" | "headersSecret">,
  ): Promise<Record<string, string>> {
    try {
      return (await this.options.secretHeaders?.(project, spec)) ?? {};
    } catch (error) {
      throw new UpstreamError("unavailable", (error as Error).message);
    }
  }

  /**
   * Checks each thread's metadata against the endpoint's schema under one meter for the batch
   * (the request's, shared by every part of a combined grader, when there is one); answers the
   * indexes that passed. A thread refused gets INVALID_METADATA; a check over budget
   * is the endpoint's fault (its schema, the tenant's metadata): recorded once, and the rest of
   * the batch fails without being checked.
   */
  private async checkMetadata(
    target: EndpointTarget,
    check: MetadataCheck,
    threads: readonly WireThread[],
    outcomes: GradeOutcome[],
    meter = new SchemaMeter(),
  ): Promise<number[]> {
    const counts = { ok: 0, refused: 0, over_budget: 0, not_checked: 0 };
    const pending: number[] = [];
    let blown: string | undefined;
    // this part's own units (the meter may be the request's, which other parts charge between yields)
    let spent = 0;
    let yielded = 0;
    for (let i = 0; i < threads.length; i++) {
      // a batch's budget is a few threads' worth: other requests get the event loop in between
      if (spent - yielded >= meter.perThread) {
        await new Promise(setImmediate);
        yielded = spent;
      }
      if (blown) {
        outcomes[i] = { error: { code: "INVALID_METADATA", message: blown } };
        counts.not_checked++;
        continue;
      }
      meter.startThread();
      let problem: string | undefined;
      const at = meter.units;
      try {
        problem = check(threads[i].metadata ?? {}, meter);
      } catch (error) {
        spent += meter.units - at;
        if (!(error instanceof SchemaBudgetExceeded)) throw error;
        outcomes[i] = { error: { code: "INVALID_METADATA", message: overBudget(error) } };
        counts.over_budget++;
        blown = `not checked: an earlier thread of this batch went over the ${error.scope} budget of the endpoint's metadata schema check (${error.limit} units of work)`;
        this.options.onFault?.(target.id, `its metadata schema check went over its ${error.scope} budget of ${error.limit} units`);
        continue;
      }
      spent += meter.units - at;
      if (problem) {
        outcomes[i] = { error: { code: "INVALID_METADATA", message: `the endpoint's metadata schema refuses it: ${problem}` } };
        counts.refused++;
      } else {
        pending.push(i);
        counts.ok++;
      }
    }
    this.metrics.endpointSchemaCheck(`${target.project}/${target.key}`, spent, counts);
    return pending;
  }

  private async batchScore(
    spec: EndpointSpec,
    requests: ScoreRequest[],
    signal: AbortSignal,
    secretHeaders: Record<string, string>,
    work?: RequestWork,
  ): Promise<GradeOutcome[]> {
    const reply = await this.send(
      "POST",
      spec,
      "/batch_score",
      { requests },
      signal,
      false,
      secretHeaders,
      replyBytes(requests.length),
      requests.length,
      work,
    );
    const parsed = BatchScoreResponse.safeParse(reply);
    if (!parsed.success) throw invalid(`/batch_score: ${issue(parsed.error)}`);
    const { responses } = parsed.data;
    if (responses.length !== requests.length)
      throw invalid(`/batch_score answered ${responses.length} responses to ${requests.length} requests`);
    return responses.map((r, k) => scored(r, requests[k].id as number));
  }

  private async score(
    spec: EndpointSpec,
    request: ScoreRequest,
    signal: AbortSignal,
    secretHeaders: Record<string, string>,
    work?: RequestWork,
  ): Promise<GradeOutcome[]> {
    const parsed = ScoreResponse.safeParse(
      await this.send("POST", spec, "/score", request, signal, false, secretHeaders, replyBytes(1), undefined, work),
    );
    if (!parsed.success) throw invalid(`/score: ${issue(parsed.error)}`);
    return [scored(parsed.data, request.id as number)];
  }

  /**
   * One HTTP exchange; the body parsed without prototype keys, or undefined for an allowed 404.
   * The body is read to at most maxBytes, with at most maxItems responses (readReply), before
   * it is parsed.
   */
  private async send(
    method: "GET" | "POST",
    spec: Pick<EndpointCreate, "url">,
    path: string,
    body: unknown,
    signal: AbortSignal,
    allow404: boolean,
    secretHeaders: Record<string, string>,
    maxBytes: number,
    maxItems?: number,
    work?: RequestWork,
  ): Promise<unknown> {
    // a reply is read no further than what is left of its request's budget
    const left = work?.replyBytes ?? Number.POSITIVE_INFINITY;
    if (left <= 0) throw invalid(REPLIES_OVER_BUDGET);
    const headers: Record<string, string> = { ...secretHeaders, accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    let text: string;
    try {
      const response = await undiciFetch(spec.url.replace(/\/+$/, "") + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        dispatcher: this.dispatcher,
        // not followed: the headers (secrets among them) would go wherever it pointed
        redirect: "manual",
      });
      if (response.status !== 200) {
        await response.body?.cancel().catch(() => {});
        if (response.status === 404 && allow404) return undefined;
        const redirected =
          response.status >= 300 && response.status < 400 ? " (redirects are not followed: register the URL it points to)" : "";
        throw statusError(response.status, `${method} ${path} answered HTTP ${response.status}${redirected}`, response.headers);
      }
      // size, nesting and the count of responses, checked as it streams: before JSON.parse, zod or any recursive walk
      // cut short by the request's budget rather than by the reply's own cap, it says so
      const limits = left < maxBytes ? { maxBytes: left, tooLong: REPLIES_OVER_BUDGET } : { maxBytes };
      text = await readReply(response.body, path, { ...limits, maxDepth: MAX_ANSWER_DEPTH, maxItems });
    } catch (error) {
      if (error instanceof UpstreamError) throw error;
      throw transportError(error, signal.aborted, "the endpoint", MAX_ENDPOINT_RESPONSE_BYTES);
    }
    if (work && !work.takeReply(Buffer.byteLength(text))) throw invalid(REPLIES_OVER_BUDGET);
    let value: unknown;
    try {
      value = parseUntrustedJson(text);
    } catch {
      throw invalid(`${path} answered a body that is not JSON (or uses __proto__ / constructor.prototype keys)`);
    }
    return value;
  }
}

const overBudget = (e: SchemaBudgetExceeded) =>
  e.scope === "thread"
    ? `checking this thread's metadata against the endpoint's metadata schema took more than ${e.limit} units of work ` +
      "(a unit: one schema keyword applied to one value); send less metadata or have the endpoint publish a simpler schema"
    : `checking this batch's metadata against the endpoint's metadata schema took more than ${e.limit} units of work in all ` +
      "(a unit: one schema keyword applied to one value); send smaller batches or less metadata";
const invalid = (message: string) => new UpstreamError("invalid", message);
const REPLIES_OVER_BUDGET = `not read: this request's endpoint replies would pass ${MAX_REQUEST_REPLY_BYTES / 1024 / 1024} MB in all (every part of a combined grader counts); send fewer threads per request, or have the endpoint answer less metadata`;
const issue = (error: { issues: Array<{ path: PropertyKey[]; message: string }> }) => {
  const first = error.issues[0];
  return first ? `${first.path.map(String).join(".") || "the body"}: ${first.message}` : "bad shape";
};

/**
 * A response read as an isolate's result is: the id it must carry, finite reward, bounded
 * metadata. No id, or a null one (a stock Adaptive server writes `"id": null` when its scorer
 * set none), says nothing of the order; an id must be the request's, as a number or its text.
 */
function scored(response: ScoreResponse, id: number): GradeOutcome {
  if (response.id !== undefined && response.id !== null && response.id !== id && response.id !== String(id)) {
    throw invalid(`responses must come in the order of the requests: id ${JSON.stringify(response.id)} where ${id} was expected`);
  }
  return outcomeOf(response);
}

/** A response whose id is known to be its request's: finite reward, bounded metadata. */
function outcomeOf(response: ScoreResponse): GradeOutcome {
  const metadata = response.metadata ?? {};
  const size = JSON.stringify(metadata).length;
  // one response's metadata as JSON: at most what an isolate's result may be
  if (size > MAX_RESULT) throw invalid(`a response's metadata is ${size} characters of JSON; at most ${MAX_RESULT}`);
  return Object.keys(metadata).length ? { score: response.reward, metadata } : { score: response.reward };
}

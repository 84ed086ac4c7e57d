// The Gradebox client: resources over HTTP (transport.ts), with timeouts, retries where a
// repeat is safe (backoff with jitter, honouring retry-after), and typed errors.

import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  APIUserAbortError,
  errorFromResponse,
  GradeboxError,
  NotFoundError,
} from "./errors.ts";
import { PACKED_BATCH_TYPE, packedBody } from "./packed-batch.ts";
import { functionSource, languageOfFile } from "./source.ts";
import { componentsOf, groupIndexes, summarize } from "./summary.ts";
import { StringThread, type WireThread } from "./thread.ts";
import { defaultTransport, type Transport, type TransportResponse } from "./transport.ts";
import type {
  ApiKey,
  CreateApiKeyParams,
  CreateBinaryJudgeParams,
  CreateCodeParams,
  CreateCombinedParams,
  CreatedApiKey,
  CreatedGradeToken,
  CreateExternalEndpointParams,
  CreateFunctionParams,
  CreateGradeTokenParams,
  CreateModelParams,
  CreatePrebuiltJudgeParams,
  CreateRubricJudgeParams,
  GradeBatchOptions,
  GradeBatchResponse,
  GradeResponse,
  GradeResult,
  Grader,
  GraderPage,
  GraderSourceInput,
  GraderVersion,
  GraderVersionWithSource,
  GraderWithSource,
  GradeToken,
  JudgePrompt,
  Limits,
  Model,
  OnUnavailable,
  Sample,
  Secret,
  SetSecretParams,
  ThreadInput,
  UpdateFunctionParams,
  UpdateResult,
  Usage,
  ValidateResponse,
} from "./types.ts";
import type { Language, RequestBody } from "./wire.ts";

export interface ClientOptions {
  /** default: GRADEBOX_URL, else http://127.0.0.1:8787 */
  baseURL?: string;
  /** default: GRADEBOX_PROJECT, else "default" */
  project?: string;
  /** sent as `Authorization: Bearer …`; default: GRADEBOX_API_KEY */
  apiKey?: string;
  /** sends every request through this fetch (default: node:http in Node, the global fetch elsewhere) */
  fetch?: typeof fetch;
  /** per attempt, in ms (default 60 000) */
  timeout?: number;
  /** retries of a request that is safe to repeat (default 2) */
  maxRetries?: number;
}

/** Per-request options: the last argument of every method (`client.graders.grade({…}, { timeout: 5_000 })`). */
export interface RequestOptions {
  /** per attempt, in ms (default: the client's) */
  timeout?: number;
  /** aborts the request, retries included (APIUserAbortError) */
  signal?: AbortSignal;
  /** added to (and overriding) the client's headers */
  headers?: Record<string, string>;
  /** retries of a request that is safe to repeat (default: the client's) */
  maxRetries?: number;
}

interface RequestSpec {
  body?: unknown;
  /** a body already serialized (as JSON, unless `contentType` says otherwise) */
  rawBody?: string;
  /** the rawBody's media type (default application/json) */
  contentType?: string;
  query?: Record<string, string | number | undefined>;
  /** true when repeating the request cannot change the outcome */
  retry: boolean;
  options?: RequestOptions;
}

const RETRY_STATUS = new Set([408, 429, 502, 503, 504]);
/**
 * Answered with a status worth retrying, but a repeat would not help: only the operator can
 * change SECRETS_NOT_CONFIGURED, and the server has already retried a judge's model or an
 * endpoint with its own backoff before answering 502 (repeating it here would multiply the
 * attempts and open the server's circuit breaker on the first call from a user).
 */
const LASTING_CODES = new Set([
  "SECRETS_NOT_CONFIGURED",
  "JUDGE_UNAVAILABLE",
  "JUDGE_INVALID_OUTPUT",
  "ENDPOINT_UNAVAILABLE",
  "ENDPOINT_INVALID_RESPONSE",
]);

/** The server's root without trailing slashes; a GradeboxError naming the fix when it is not an http(s) URL. */
function checkedBaseURL(given: string, fromEnv: boolean): string {
  const where = fromEnv && env("GRADEBOX_URL") !== undefined ? "GRADEBOX_URL" : "baseURL";
  let protocol = "";
  try {
    protocol = new URL(given).protocol;
  } catch {}
  if (protocol !== "http:" && protocol !== "https:") {
    const guess = /^[\w.-]+(:\d+)?(\/.*)?$/.test(given) ? `; did you mean http://${given}?` : "";
    throw new GradeboxError(`${where} must be an http:// or https:// URL, not ${JSON.stringify(given)}${guess}`);
  }
  return given.replace(/\/+$/, "");
}

function problemOf(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {}
  return { detail: text.slice(0, 500) };
}
const env = (name: string): string | undefined =>
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name] || undefined;

function toWire(thread: ThreadInput): WireThread {
  return thread instanceof StringThread ? thread.toJSON() : thread;
}

const samplesBody = (samples: Sample[] | undefined) =>
  samples === undefined
    ? {}
    : { samples: samples.map(({ thread, expected }) => ({ thread: toWire(thread), ...(expected === undefined ? {} : { expected }) })) };

/**
 * The source to send, and its language: `language` when given, else what `file`'s name says
 * (`.py`: python), else typescript for `fn` (a JavaScript function); for `source`, none is sent
 * (the server's default: typescript on a create, the current version's on an update).
 */
async function readSource(input: GraderSourceInput & { language?: Language }): Promise<{ source: string; language?: Language }> {
  const given = [input.fn, input.source, input.file].filter((v) => v !== undefined).length;
  if (given !== 1) throw new GradeboxError("pass exactly one of fn, source or file");
  const language =
    input.language ?? (input.file !== undefined ? languageOfFile(input.file) : input.fn !== undefined ? "typescript" : undefined);
  if (input.fn !== undefined) {
    if (language !== "typescript") {
      throw new GradeboxError(`fn is a JavaScript function, not ${language} source: pass a ${language} grader as \`source\` or \`file\``);
    }
    return { source: functionSource(input.fn), language };
  }
  const source =
    input.source ??
    (
      await (
        await import("./node.ts")
      ).readGraderFile(input.file as string, {
        python: language === "python",
        exportName: "export" in input ? input.export : undefined,
      })
    ).source;
  return language === undefined ? { source } : { source, language };
}

export class Gradebox {
  readonly baseURL: string;
  readonly project: string;
  readonly graders: Graders;
  readonly models: Models;
  readonly secrets: Secrets;
  readonly keys: Keys;
  readonly tokens: GradeTokens;
  private readonly apiKey: string | undefined;
  private readonly transport: Transport;
  /** @internal per attempt, in ms, unless a request says otherwise */
  readonly timeout: number;
  private readonly maxRetries: number;

  constructor(options: ClientOptions = {}) {
    this.baseURL = checkedBaseURL(options.baseURL ?? env("GRADEBOX_URL") ?? "http://127.0.0.1:8787", options.baseURL === undefined);
    this.project = options.project ?? env("GRADEBOX_PROJECT") ?? "default";
    this.apiKey = options.apiKey ?? env("GRADEBOX_API_KEY");
    this.transport = defaultTransport(options.fetch);
    this.timeout = options.timeout ?? 60_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.graders = new Graders(this);
    this.models = new Models(this);
    this.secrets = new Secrets(this);
    this.keys = new Keys(this);
    this.tokens = new GradeTokens(this);
  }

  /**
   * The server's request limits: `maxBatchThreads`, `maxBodyBytes`… They are the server's, so the
   * first answer is kept for the client's life; `options` apply to the request that fetches it.
   */
  async limits(options?: RequestOptions): Promise<Limits> {
    this.cachedLimits ??= await this.request<Limits>("GET", "/v1/limits", { retry: true, options });
    return this.cachedLimits;
  }
  private cachedLimits: Limits | undefined;
  /** @internal the server answered a packed batch 415 (it predates the packed wire): batches go as JSON */
  packedRefused = false;

  /** What the project stores against its quotas: graders, bytes, models, secrets, grade tokens (a write past one is a ConflictError QUOTA_EXCEEDED). */
  usage(options?: RequestOptions): Promise<Usage> {
    return this.request("GET", `/v1/projects/${encodeURIComponent(this.project)}/usage`, { retry: true, options });
  }

  /** @internal */
  async request<T>(method: string, path: string, spec: RequestSpec): Promise<T> {
    const options = spec.options ?? {};
    const url = new URL(this.baseURL + path);
    for (const [k, v] of Object.entries(spec.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: "application/json" };
    const body = spec.rawBody ?? (spec.body === undefined ? undefined : JSON.stringify(spec.body));
    if (body !== undefined) headers["content-type"] = spec.contentType ?? "application/json";
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    Object.assign(headers, options.headers);
    const timeout = options.timeout ?? this.timeout;
    const maxRetries = options.maxRetries ?? this.maxRetries;
    const userSignal = options.signal;
    const aborted = () => new APIUserAbortError(`${method} ${url.pathname} was aborted`);

    for (let attempt = 0; ; attempt++) {
      if (userSignal?.aborted) throw aborted();
      const canRetry = spec.retry && attempt < maxRetries;
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), timeout);
      const signal = userSignal ? AbortSignal.any([userSignal, controller.signal]) : controller.signal;
      let response: TransportResponse;
      let text: string;
      try {
        // the body too: fetch reads it after the headers, and an abort or a cut connection then lands here
        response = await this.transport(url, { method, headers, body, signal });
        text = await response.text();
      } catch (error) {
        if (userSignal?.aborted) throw aborted();
        if (canRetry) {
          await sleep(backoff(attempt), userSignal);
          continue;
        }
        if (controller.signal.aborted) throw new APITimeoutError(`${method} ${url.pathname} timed out after ${timeout} ms`);
        throw new APIConnectionError(`cannot reach Gradebox at ${this.baseURL}: ${(error as Error).message}`, { cause: error });
      } finally {
        clearTimeout(timer);
      }
      if (response.ok) return (text ? JSON.parse(text) : undefined) as T;
      const problem = problemOf(text);
      if (canRetry && RETRY_STATUS.has(response.status) && !LASTING_CODES.has(problem.code as string)) {
        await sleep(retryAfter(response.headers.get("retry-after")) ?? backoff(attempt), userSignal);
        continue;
      }
      throw errorFromResponse(response.status, problem, response.headers.get("x-request-id") ?? undefined);
    }
  }
}

function backoff(attempt: number): number {
  return Math.min(8000, 500 * 2 ** attempt) * (0.75 + Math.random() * 0.5);
}

function retryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), 60_000) : undefined;
}

/** Waits between attempts; a user's abort ends the wait (the loop then throws APIUserAbortError). */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}

/**
 * `graders.list()`: iterate with `for await (const g of client.graders.list())` (pages are fetched
 * as the loop needs them), walk `.pages()`, or `await` it (or `.toArray()`) for every grader at once.
 */
export class GraderList implements AsyncIterable<Grader>, Promise<Grader[]> {
  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<GraderPage>) {}

  async *pages(): AsyncGenerator<GraderPage> {
    let cursor: string | undefined;
    do {
      const page = await this.fetchPage(cursor);
      yield page;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Grader> {
    for await (const page of this.pages()) yield* page.data;
  }

  async toArray(): Promise<Grader[]> {
    const all: Grader[] = [];
    for await (const grader of this) all.push(grader);
    return all;
  }

  // A Promise too, so `await client.graders.list()` still gives every grader (fetched once, on first use).
  private all: Promise<Grader[]> | undefined;
  readonly [Symbol.toStringTag] = "GraderList";

  // biome-ignore lint/suspicious/noThenProperty: a GraderList is a Promise of every grader as well as an async iterable
  then<A = Grader[], B = never>(
    onfulfilled?: ((value: Grader[]) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    this.all ??= this.toArray();
    return this.all.then(onfulfilled, onrejected);
  }

  catch<B = never>(onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<Grader[] | B> {
    return this.then(undefined, onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<Grader[]> {
    return this.then().finally(onfinally);
  }
}

/** Batches gradeBatch sends at once when it splits one larger than the server's limit. */
const DEFAULT_BATCH_CONCURRENCY = 4;
/** Room left in a split part's body for the envelope and version. */
const BODY_MARGIN_BYTES = 1024;

/** Time the client waits for a batch's answer beyond its deadline, unless the request sets its own timeout. */
const DEADLINE_SLACK_MS = 10_000;

export interface GradeBatchParams extends GradeBatchOptions {
  graderKey: string;
  threads: ThreadInput[];
  version?: number;
  /** parts in flight at once when the batch is split (default 4) */
  concurrency?: number;
  /**
   * answer within this many ms of the call: every result finished by then, every other thread
   * abstained with DEADLINE_EXCEEDED (a split batch's parts each get the time left; the request's
   * timeout is raised to cover it unless `timeout` is given)
   */
  deadlineMs?: number;
  /** judge and endpoint graders: a model or endpoint that does not answer is an error ("error", default) or an abstention */
  onUnavailable?: OnUnavailable;
  /** group the threads by this metadata field (e.g. prompt_id): a group grader grades each group whole; a split never cuts a group */
  groupBy?: string;
  /** or explicit groups: one group index per thread */
  groups?: number[];
  /** add the batch's summary (true, or {bins, threshold, answerKey}); recomputed over the whole batch when it was split */
  summary?: GradeBatchOptions["summary"];
}

export class Graders {
  /** `graders.create.function({key, fn | source | file, description?})` */
  readonly create: {
    function: (params: CreateFunctionParams, options?: RequestOptions) => Promise<GraderWithSource>;
    /** a grader that combines stored function and judge graders of the project */
    combined: (params: CreateCombinedParams, options?: RequestOptions) => Promise<GraderWithSource>;
    /** an AI judge: PASS (1) or FAIL (0) against natural-language criteria, with the judge's reasoning */
    binaryJudge: (params: CreateBinaryJudgeParams, options?: RequestOptions) => Promise<GraderWithSource>;
    /** a pre-built RAG judge: FAITHFULNESS, CONTEXT_RELEVANCY or ANSWER_RELEVANCY (context from document turns) */
    prebuiltJudge: (params: CreatePrebuiltJudgeParams, options?: RequestOptions) => Promise<GraderWithSource>;
    /** weighted rubric criteria, each MET / UNMET / CANNOT_ASSESS (or an option), scored as scoreRubric does */
    rubricJudge: (params: CreateRubricJudgeParams, options?: RequestOptions) => Promise<GraderWithSource>;
    /**
     * an external reward server, called over HTTP to grade; its /info and /metadata_schema are read first
     * (ValidationError with check "endpoint" when it cannot be reached or answers badly; EGRESS_DENIED when the address is refused)
     */
    externalEndpoint: (params: CreateExternalEndpointParams, options?: RequestOptions) => Promise<GraderWithSource>;
    /** runs the completion's program against the tests in each thread's metadata, a fresh interpreter per test */
    code: (params: CreateCodeParams, options?: RequestOptions) => Promise<GraderWithSource>;
  };

  constructor(private readonly client: Gradebox) {
    const post = (suffix: string, body: unknown, options: RequestOptions | undefined) =>
      this.client.request<GraderWithSource>("POST", this.path(suffix), { body, retry: false, options });
    this.create = {
      function: async (params, options) => {
        const code = await readSource(params);
        const body = { key: params.key, ...code, description: params.description ?? "", ...samplesBody(params.samples) };
        return post("", body satisfies RequestBody<"graders.create.function">, options);
      },
      combined: (params, options) =>
        post("/combined", { ...params, description: params.description ?? "" } satisfies RequestBody<"graders.create.combined">, options),
      binaryJudge: ({ samples, ...params }, options) => {
        const body = { ...params, ...(samples ? { samples: samples.map((x) => ({ thread: toWire(x.thread) })) } : {}) };
        return post("/binary-judge", body satisfies RequestBody<"graders.create.binaryJudge">, options);
      },
      prebuiltJudge: (params, options) => post("/prebuilt-judge", params, options),
      rubricJudge: (params, options) => post("/rubric-judge", params, options),
      externalEndpoint: (params, options) => post("/external-endpoint", params, options),
      code: (params, options) => post("/code", params, options),
    };
  }

  /** The prompt a judge grader sends for `thread` (its first, for a multi-step judge); no model is called. */
  prompt({ graderKey, thread }: { graderKey: string; thread: ThreadInput }, options?: RequestOptions): Promise<JudgePrompt> {
    const body = { thread: toWire(thread) } satisfies RequestBody<"graders.prompt">;
    return this.client.request("POST", this.keyPath(graderKey, "/prompt"), { body, retry: true, options });
  }

  private path(suffix = ""): string {
    return `/v1/projects/${encodeURIComponent(this.client.project)}/graders${suffix}`;
  }

  private keyPath(graderKey: string, suffix = ""): string {
    return this.path(`/${encodeURIComponent(graderKey)}${suffix}`);
  }

  /** Runs the five checks of the source's language without saving; grades `threads` too when given. */
  async validate(
    params: GraderSourceInput & { language?: Language; threads?: ThreadInput[] },
    options?: RequestOptions,
  ): Promise<ValidateResponse> {
    const code = await readSource(params);
    return this.client.request("POST", this.path("/validate"), {
      body: { ...code, ...(params.threads ? { threads: params.threads.map(toWire) } : {}) } satisfies RequestBody<"graders.validate">,
      retry: true,
      options,
    });
  }

  /** Every grader in the project, sorted by key: an async iterable over pages of `pageSize` (default 200), or `await` it for an array. */
  list(params: { pageSize?: number } = {}, options?: RequestOptions): GraderList {
    return new GraderList((cursor) => this.listPage({ limit: params.pageSize ?? 200, cursor }, options));
  }

  /** One page, sorted by key. */
  listPage(params: { limit?: number; cursor?: string } = {}, options?: RequestOptions): Promise<GraderPage> {
    return this.client.request("GET", this.path(), { query: params, retry: true, options });
  }

  get({ graderKey }: { graderKey: string }, options?: RequestOptions): Promise<GraderWithSource> {
    return this.client.request("GET", this.keyPath(graderKey), { retry: true, options });
  }

  lock({ graderKey, locked }: { graderKey: string; locked: boolean }, options?: RequestOptions): Promise<Grader> {
    const body = { locked } satisfies RequestBody<"graders.lock">;
    return this.client.request("PUT", this.keyPath(graderKey, "/lock"), { body, retry: true, options });
  }

  /** Lifts a quarantine (GRADER_QUARANTINED) and clears the grader's fault count. */
  release({ graderKey }: { graderKey: string }, options?: RequestOptions): Promise<Grader> {
    return this.client.request("POST", this.keyPath(graderKey, "/release"), { retry: true, options });
  }

  /** Refused with ConflictError (GRADER_LOCKED) while the grader is locked. */
  async delete({ graderKey }: { graderKey: string }, options?: RequestOptions): Promise<void> {
    await this.client.request("DELETE", this.keyPath(graderKey), { retry: true, options });
  }

  /**
   * Grades one thread (with `version`, that stored version); a grader failure throws
   * GraderRuntimeError with its code, an abstention GraderAbstainedError (`.abstained`: code and
   * reason): a single thread's answer is a score or nothing.
   */
  grade(
    {
      graderKey,
      thread,
      version,
      onUnavailable,
    }: { graderKey: string; thread: ThreadInput; version?: number; onUnavailable?: OnUnavailable },
    options?: RequestOptions,
  ): Promise<GradeResponse> {
    return this.client.request("POST", this.keyPath(graderKey, "/grade"), {
      body: {
        thread: toWire(thread),
        ...(version === undefined ? {} : { version }),
        ...(onUnavailable === undefined ? {} : { onUnavailable }),
      } satisfies RequestBody<"graders.grade">,
      retry: true,
      options,
    });
  }

  /**
   * Grades many threads; results come back in input order, each a score, an error or an
   * abstention (`outcome`). A batch over the server's limits (`client.limits()`: threads per
   * request, body bytes) is sent as several requests: the first, then the rest `concurrency` at a
   * time pinned to the version that graded the first, so one version grades them all; the first
   * failure stops the rest. A split cuts only between groups (`groupBy`, `groups`): a group larger
   * than the server's limit fails the call before anything is sent. With `deadlineMs`, each part is
   * sent with the time left, and a part whose time is gone before it is sent is abstained with
   * DEADLINE_EXCEEDED without a request. A split batch's `components` and `summary` are computed
   * here over all its results, `provenance` is the first part's; `durationMs` is the whole call's.
   */
  async gradeBatch(params: GradeBatchParams, options?: RequestOptions): Promise<GradeBatchResponse> {
    const started = Date.now();
    if (!this.client.packedRefused) {
      try {
        return await this.sendBatch(params, options, started, true);
      } catch (error) {
        if (!(error instanceof APIError && error.status === 415)) throw error;
        // a server from before the packed wire: the batch again as JSON, split by JSON's sizes,
        // its deadline still counted from the call; JSON from here on
        this.client.packedRefused = true;
      }
    }
    return this.sendBatch(params, options, started, false);
  }

  /** gradeBatch's requests, their bodies packed (sdk/packed-batch.ts) or JSON */
  private async sendBatch(
    params: GradeBatchParams,
    options: RequestOptions | undefined,
    started: number,
    packed: boolean,
  ): Promise<GradeBatchResponse> {
    const { graderKey, threads, version, concurrency = DEFAULT_BATCH_CONCURRENCY, groups, groupBy, deadlineMs, summary } = params;
    if (groups !== undefined && groups.length !== threads.length) {
      throw new GradeboxError(`groups must hold one group index per thread (${groups.length} for ${threads.length} threads)`);
    }
    const path = this.keyPath(graderKey, "/grade-batch");
    /** the deadline's time left, for a request sent now (at least 1 ms: the server's minimum) */
    const left = () => (deadlineMs === undefined ? undefined : Math.max(1, Math.round(deadlineMs - (Date.now() - started))));
    /** one request; a server that does not answer one result per thread is refused */
    const post = async (rawBody: string, count: number, deadline: number | undefined, contentType?: string) => {
      // the answer may take the whole deadline: the attempt's timeout must not end it sooner
      const timeout =
        deadline === undefined || options?.timeout !== undefined
          ? options?.timeout
          : Math.max(this.client.timeout, deadline + DEADLINE_SLACK_MS);
      const answer = await this.client.request<GradeBatchResponse>("POST", path, {
        rawBody,
        contentType,
        retry: true,
        options: timeout === undefined ? options : { ...options, timeout },
      });
      if (answer.results?.length !== count) {
        throw new GradeboxError(`the server answered ${answer.results?.length ?? "no"} results for ${count} threads`);
      }
      return answer;
    };
    /** the request's fields besides threads, version, groups and deadlineMs: every part carries them */
    const shared = {
      ...(params.onUnavailable === undefined ? {} : { onUnavailable: params.onUnavailable }),
      ...(groupBy === undefined ? {} : { groupBy }),
    };
    const limits = await this.client.limits(options).catch((error) => {
      if (error instanceof NotFoundError) return undefined; // a server without /v1/limits: one request, as before
      throw error;
    });
    /** a request's body: packed, unless the threads cannot be (then JSON: the server says what is wrong) */
    const bodyOf = (part: WireThread[], fields: Omit<RequestBody<"graders.gradeBatch">, "threads">) => {
      if (packed) {
        try {
          return { body: packedBody(part, fields), type: PACKED_BATCH_TYPE };
        } catch (error) {
          if (!(error instanceof TypeError)) throw error;
        }
      }
      return { body: JSON.stringify({ threads: part, ...fields }), type: undefined };
    };
    const wire = threads.map(toWire);
    // the common case, one request: its body is made in one go; its UTF-8 size is counted only
    // when 3 bytes per UTF-16 unit could exceed the limit
    if (!limits || threads.length <= limits.maxBatchThreads) {
      const room = limits ? limits.maxBodyBytes - BODY_MARGIN_BYTES : Number.POSITIVE_INFINITY;
      const deadline = left();
      let made: { body: string; type: string | undefined } | undefined;
      try {
        made = bodyOf(wire, {
          ...(version === undefined ? {} : { version }),
          ...shared,
          ...(groups === undefined ? {} : { groups }),
          ...(deadline === undefined ? {} : { deadlineMs: deadline }),
          ...(summary === undefined ? {} : { summary }),
        });
      } catch (error) {
        if (!(error instanceof RangeError)) throw error; // longer than a string may be: split below
      }
      const body = made?.body;
      if (body !== undefined && (3 * body.length <= room || (body.length <= room && byteLength(body) <= room))) {
        return post(body, threads.length, deadline, made?.type);
      }
    }

    // a part's size is its JSON's, which a packed part never exceeds
    const serialized = wire.map((t) => JSON.stringify(t));
    /** each thread's group, to keep groups whole and to summarize them (groupBy: as the server groups) */
    const groupOf =
      groups ??
      (groupBy === undefined
        ? undefined
        : groupIndexes(
            wire.map((t) => t.metadata),
            groupBy,
          ));
    const sizes = serialized.map((t, i) => byteLength(t) + 1 + (groups ? String(groups[i]).length + 1 : 0));
    const envelope = BODY_MARGIN_BYTES + byteLength(JSON.stringify(shared));
    const units = groupOf ? unitsOf(groupOf) : serialized.map((_, i) => [i]);
    if (limits && groupOf) {
      const big = units.find((u) => u.length > limits.maxBatchThreads);
      if (big) {
        const which = groups
          ? `group ${groups[big[0] as number]}`
          : `the group of ${groupBy} ${JSON.stringify(wire[big[0] as number]?.metadata?.[groupBy as string])}`;
        throw new GradeboxError(
          `${which} holds ${big.length} threads, more than the server grades in one request (maxBatchThreads ${limits.maxBatchThreads}), and a group is never split: make the group smaller or raise GRADEBOX_MAX_BATCH`,
        );
      }
    }
    const parts = limits ? packParts(units, sizes, limits.maxBatchThreads, limits.maxBodyBytes - envelope) : [units.flat()];
    const results: GradeResult[] = new Array(threads.length);
    let unsent = 0;
    const send = async (indexes: number[], pinned: number | undefined, first: boolean) => {
      const deadline = left();
      if (!first && deadlineMs !== undefined && deadlineMs - (Date.now() - started) <= 0) {
        // no time left to grade anything: what the server would answer, without a request
        for (const i of indexes) {
          results[i] = {
            outcome: "abstained",
            abstained: { code: "DEADLINE_EXCEEDED", reason: `the batch's deadline (${deadlineMs} ms) came before this part was sent` },
          };
        }
        unsent += indexes.length;
        return undefined;
      }
      const fields = {
        ...(pinned === undefined ? {} : { version: pinned }),
        ...shared,
        ...(groups === undefined ? {} : { groups: indexes.map((i) => groups[i] as number) }),
        ...(deadline === undefined ? {} : { deadlineMs: deadline }),
      };
      // as JSON, a part joins the threads it serialized for sizing
      const joined = () => {
        const extra = JSON.stringify(fields).slice(1, -1);
        return `{"threads":[${indexes.map((i) => serialized[i]).join(",")}]${extra ? `,${extra}` : ""}}`;
      };
      const made = packed
        ? bodyOf(
            indexes.map((i) => wire[i] as WireThread),
            fields,
          )
        : { body: joined(), type: undefined };
      const answer = await post(made.body, indexes.length, deadline, made.type);
      answer.results.forEach((r, j) => {
        results[indexes[j] as number] = r;
      });
      return answer;
    };

    const first = (await send(parts[0] as number[], version, true)) as GradeBatchResponse;
    let exceeded = first.deadlineExceeded ?? 0;
    let next = 1;
    let failed = false;
    const lane = async () => {
      while (next < parts.length && !failed) {
        const i = next++;
        try {
          exceeded += (await send(parts[i] as number[], first.version, false))?.deadlineExceeded ?? 0;
        } catch (error) {
          failed = true; // the call fails: the other lanes send nothing more
          throw error;
        }
      }
    };
    if (parts.length > 1) await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, parts.length - 1)) }, lane));
    const components = componentsOf(results);
    return {
      results,
      durationMs: Date.now() - started,
      version: first.version,
      provenance: first.provenance,
      ...(components ? { components } : {}),
      ...(summary ? { summary: summarize(results, { ...(summary === true ? {} : summary), groups: groupOf }) } : {}),
      ...(deadlineMs === undefined ? {} : { deadlineExceeded: exceeded + unsent }),
    };
  }

  /**
   * Checks a new source and stores it as the grader's next version, which becomes current;
   * nothing changes when a check fails (BadRequest/ValidationError) or the grader is locked (ConflictError).
   */
  async update(params: UpdateFunctionParams, options?: RequestOptions): Promise<UpdateResult> {
    const code = await readSource(params);
    return this.client.request("PUT", this.keyPath(params.graderKey), {
      body: {
        ...code,
        ...(params.description === undefined ? {} : { description: params.description }),
        ...samplesBody(params.samples),
        ...(params.dryRun ? { dryRun: true } : {}),
      } satisfies RequestBody<"graders.update">,
      retry: false,
      options,
    });
  }

  /**
   * A grader's stored versions: `list`, `get` (with its source), `restore` (a new version with an old
   * source) and `delete` (one that is neither current nor pinned, to free quota).
   */
  readonly versions = {
    list: async ({ graderKey }: { graderKey: string }, options?: RequestOptions): Promise<GraderVersion[]> =>
      (await this.client.request<{ data: GraderVersion[] }>("GET", this.keyPath(graderKey, "/versions"), { retry: true, options })).data,
    get: ({ graderKey, version }: { graderKey: string; version: number }, options?: RequestOptions): Promise<GraderVersionWithSource> =>
      this.client.request("GET", this.keyPath(graderKey, `/versions/${version}`), { retry: true, options }),
    restore: ({ graderKey, version }: { graderKey: string; version: number }, options?: RequestOptions): Promise<UpdateResult> =>
      this.client.request("POST", this.keyPath(graderKey, `/versions/${version}/restore`), { retry: false, options }),
    delete: async ({ graderKey, version }: { graderKey: string; version: number }, options?: RequestOptions): Promise<void> => {
      await this.client.request("DELETE", this.keyPath(graderKey, `/versions/${version}`), { retry: true, options });
    },
  };
}

/**
 * Consecutive parts of at most `maxThreads` threads and about `maxBytes` of JSON each, in order. A
 * thread larger than `maxBytes` goes alone (the server then answers 413 for it).
 */
export function splitBatch(serialized: string[], maxThreads: number, maxBytes: number): string[][] {
  const units = serialized.map((_, i) => [i]);
  const sizes = serialized.map((t) => byteLength(t) + 1);
  return packParts(units, sizes, maxThreads, maxBytes).map((part) => part.map((i) => serialized[i] as string));
}

/** The threads of each group (`groupOf[i]`: thread i's group), groups in order of first appearance. */
export function unitsOf(groupOf: readonly number[]): number[][] {
  const byGroup = new Map<number, number[]>();
  groupOf.forEach((g, i) => {
    const unit = byGroup.get(g);
    if (unit) unit.push(i);
    else byGroup.set(g, [i]);
  });
  return [...byGroup.values()];
}

/**
 * Parts (lists of thread indexes) of at most `maxThreads` threads and about `maxBytes` each
 * (`sizes[i]`: thread i's bytes), filled with whole units (a thread, or a group's threads) in
 * order: a unit is never cut; one over a limit goes alone.
 */
export function packParts(units: readonly number[][], sizes: readonly number[], maxThreads: number, maxBytes: number): number[][] {
  const parts: number[][] = [];
  let part: number[] = [];
  let bytes = 0;
  for (const unit of units) {
    const size = unit.reduce((sum, i) => sum + (sizes[i] as number), 0);
    if (part.length > 0 && (part.length + unit.length > maxThreads || bytes + size > maxBytes)) {
      parts.push(part);
      part = [];
      bytes = 0;
    }
    part.push(...unit);
    bytes += size;
  }
  if (part.length > 0 || parts.length === 0) parts.push(part);
  return parts;
}

/** UTF-8 length without a Buffer (the SDK runs in browsers too); ASCII, the common case, is its length. */
function byteLength(s: string): number {
  let bytes = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff) {
      bytes += 2; // a surrogate pair: 4 bytes for 2 units
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** The judge models of the project: OpenAI-compatible endpoints its judge graders call. */
export class Models {
  constructor(private readonly client: Gradebox) {}

  private path(suffix = ""): string {
    return `/v1/projects/${encodeURIComponent(this.client.project)}/models${suffix}`;
  }

  /** Refused with UnprocessableEntityError (EGRESS_DENIED) when the server's egress policy forbids the address. */
  create(params: CreateModelParams, options?: RequestOptions): Promise<Model> {
    return this.client.request("POST", this.path(), { body: params, retry: false, options });
  }

  async list(options?: RequestOptions): Promise<Model[]> {
    return (await this.client.request<{ data: Model[] }>("GET", this.path(), { retry: true, options })).data;
  }

  get({ modelKey }: { modelKey: string }, options?: RequestOptions): Promise<Model> {
    return this.client.request("GET", this.path(`/${encodeURIComponent(modelKey)}`), { retry: true, options });
  }

  /** Refused with ConflictError (MODEL_IN_USE) while a grader uses the model. */
  async delete({ modelKey }: { modelKey: string }, options?: RequestOptions): Promise<void> {
    await this.client.request("DELETE", this.path(`/${encodeURIComponent(modelKey)}`), { retry: true, options });
  }
}

/**
 * The project's secrets: values its models (`apiKeySecret`) and endpoints (`headersSecret`) send.
 * Write-only: a value is never returned, only its name, the host it is bound to and its dates.
 */
export class Secrets {
  constructor(private readonly client: Gradebox) {}

  private path(name?: string): string {
    return `/v1/projects/${encodeURIComponent(this.client.project)}/secrets${name === undefined ? "" : `/${encodeURIComponent(name)}`}`;
  }

  /**
   * Creates the secret or replaces its value (a rotation: models and endpoints using it send the new
   * value from their next call). Setting a value unbinds it from its host; the next model or endpoint
   * that uses it binds it to theirs. InternalServerError (503 SECRETS_NOT_CONFIGURED) when the server
   * has no secrets key; BadRequestError for an empty value, a line break or over 8192 bytes.
   */
  set({ name, value }: SetSecretParams, options?: RequestOptions): Promise<Secret> {
    return this.client.request("PUT", this.path(name), { body: { value } satisfies RequestBody<"secrets.set">, retry: true, options });
  }

  /** Every secret of the project, by name (never their values). */
  async list(options?: RequestOptions): Promise<Secret[]> {
    return (await this.client.request<{ data: Secret[] }>("GET", this.path(), { retry: true, options })).data;
  }

  /** NotFoundError (SECRET_NOT_FOUND) when the project has no such secret. */
  get({ name }: { name: string }, options?: RequestOptions): Promise<Secret> {
    return this.client.request("GET", this.path(name), { retry: true, options });
  }

  /** Refused with ConflictError (SECRET_IN_USE; `error.body.usedBy` names them) while a model or endpoint uses it. */
  async delete({ name }: { name: string }, options?: RequestOptions): Promise<void> {
    await this.client.request("DELETE", this.path(name), { retry: true, options });
  }
}

/**
 * The project's API keys, for a project admin (an `admin` key of the project; `apiKey` may also be
 * the operator's GRADEBOX_ADMIN_TOKEN, for any `project`). A `grader` key gets PermissionDeniedError
 * (403 FORBIDDEN).
 */
export class Keys {
  constructor(private readonly client: Gradebox) {}

  private path(id?: string): string {
    return `/v1/projects/${encodeURIComponent(this.client.project)}/keys${id === undefined ? "" : `/${encodeURIComponent(id)}`}`;
  }

  /** A new key (`role` grader unless given; a project's first key is admin): `key` is in this answer only. Never retried. */
  create(params: CreateApiKeyParams = {}, options?: RequestOptions): Promise<CreatedApiKey> {
    return this.client.request("POST", this.path(), { body: params satisfies RequestBody<"keys.create">, retry: false, options });
  }

  /** The project's keys, live and revoked (never a key itself). */
  async list(options?: RequestOptions): Promise<ApiKey[]> {
    return (await this.client.request<{ data: ApiKey[] }>("GET", this.path(), { retry: true, options })).data;
  }

  /**
   * Revokes a key by id (from `list`): every node refuses it from the answer on. NotFoundError
   * (KEY_NOT_FOUND) for an id not in the project; ConflictError (LAST_ADMIN_KEY) for the project's last live admin key.
   */
  revoke({ id }: { id: string }, options?: RequestOptions): Promise<ApiKey> {
    return this.client.request("DELETE", this.path(id), { retry: true, options });
  }
}

/**
 * Grade tokens, for a project admin: grade-only credentials for one grader that sit in a
 * trainer's URL (OpenRLHF's --reward.remote_url, NeMo Gym's resources-server host), for trainers
 * that send no Authorization header. A `grader` key gets PermissionDeniedError (403 FORBIDDEN).
 */
export class GradeTokens {
  constructor(private readonly client: Gradebox) {}

  private path(grader: string, id?: string): string {
    const project = encodeURIComponent(this.client.project);
    return `/v1/projects/${project}/graders/${encodeURIComponent(grader)}/tokens${id === undefined ? "" : `/${encodeURIComponent(id)}`}`;
  }

  /** A new token for `grader`: `token` (and `urls`) are in this answer only. Never retried. */
  create({ grader, ...params }: CreateGradeTokenParams, options?: RequestOptions): Promise<CreatedGradeToken> {
    return this.client.request("POST", this.path(grader), { body: params satisfies RequestBody<"tokens.create">, retry: false, options });
  }

  /** The grader's tokens, live and revoked (never a token itself). */
  async list({ grader }: { grader: string }, options?: RequestOptions): Promise<GradeToken[]> {
    return (await this.client.request<{ data: GradeToken[] }>("GET", this.path(grader), { retry: true, options })).data;
  }

  /** Revokes a token by id (from `list`): every node refuses it (401) from the answer on. NotFoundError (TOKEN_NOT_FOUND) for an id not of this grader. */
  revoke({ grader, id }: { grader: string; id: string }, options?: RequestOptions): Promise<GradeToken> {
    return this.client.request("DELETE", this.path(grader, id), { retry: true, options });
  }
}

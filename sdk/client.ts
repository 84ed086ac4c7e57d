// The Gradebox client: resources over HTTP (transport.ts), with timeouts, retries where a
// repeat is safe (backoff with jitter, honouring retry-after), and typed errors.

import { APIConnectionError, APITimeoutError, errorFromResponse, GradeboxError } from "./errors.ts";
import { functionSource } from "./source.ts";
import { StringThread, type WireThread } from "./thread.ts";
import { defaultTransport, type Transport, type TransportResponse } from "./transport.ts";
import type {
  CreateBinaryJudgeParams,
  CreateCombinedParams,
  CreateExternalEndpointParams,
  CreateFunctionParams,
  CreateModelParams,
  CreatePrebuiltJudgeParams,
  CreateRubricJudgeParams,
  GradeBatchResponse,
  GradeResponse,
  Grader,
  GraderPage,
  GraderSourceInput,
  GraderVersion,
  GraderVersionWithSource,
  GraderWithSource,
  JudgePrompt,
  Model,
  Sample,
  ThreadInput,
  UpdateFunctionParams,
  UpdateResult,
  ValidateResponse,
} from "./types.ts";

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

interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** true when repeating the request cannot change the outcome */
  retry: boolean;
}

const RETRY_STATUS = new Set([408, 429, 502, 503, 504]);
const env = (name: string): string | undefined =>
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name] || undefined;

function toWire(thread: ThreadInput): WireThread {
  return thread instanceof StringThread ? thread.toJSON() : thread;
}

const samplesBody = (samples: Sample[] | undefined) =>
  samples === undefined
    ? {}
    : { samples: samples.map(({ thread, expected }) => ({ thread: toWire(thread), ...(expected === undefined ? {} : { expected }) })) };

async function readSource(input: GraderSourceInput): Promise<string> {
  const given = [input.fn, input.source, input.file].filter((v) => v !== undefined).length;
  if (given !== 1) throw new GradeboxError("pass exactly one of fn, source or file");
  if (input.fn !== undefined) return functionSource(input.fn);
  if (input.source !== undefined) return input.source;
  const { readFile } = await import("node:fs/promises");
  return readFile(input.file as string, "utf8");
}

export class Gradebox {
  readonly baseURL: string;
  readonly project: string;
  readonly graders: Graders;
  readonly models: Models;
  private readonly apiKey: string | undefined;
  private readonly transport: Transport;
  private readonly timeout: number;
  private readonly maxRetries: number;

  constructor(options: ClientOptions = {}) {
    this.baseURL = (options.baseURL ?? env("GRADEBOX_URL") ?? "http://127.0.0.1:8787").replace(/\/+$/, "");
    this.project = options.project ?? env("GRADEBOX_PROJECT") ?? "default";
    this.apiKey = options.apiKey ?? env("GRADEBOX_API_KEY");
    this.transport = defaultTransport(options.fetch);
    this.timeout = options.timeout ?? 60_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.graders = new Graders(this);
    this.models = new Models(this);
  }

  /** @internal */
  async request<T>(method: string, path: string, opts: RequestOptions): Promise<T> {
    const url = new URL(this.baseURL + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: "application/json" };
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);

    for (let attempt = 0; ; attempt++) {
      const canRetry = opts.retry && attempt < this.maxRetries;
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), this.timeout);
      let response: TransportResponse;
      try {
        response = await this.transport(url, { method, headers, body, signal: controller.signal });
      } catch (error) {
        clearTimeout(timer);
        if (canRetry) {
          await sleep(backoff(attempt));
          continue;
        }
        if (controller.signal.aborted) throw new APITimeoutError(`${method} ${url.pathname} timed out after ${this.timeout} ms`);
        throw new APIConnectionError(`cannot reach Gradebox at ${this.baseURL}: ${(error as Error).message}`, { cause: error });
      }
      try {
        const text = await response.text();
        if (response.ok) return (text ? JSON.parse(text) : undefined) as T;
        if (canRetry && RETRY_STATUS.has(response.status)) {
          await sleep(retryAfter(response.headers.get("retry-after")) ?? backoff(attempt));
          continue;
        }
        let problem: Record<string, unknown> = {};
        try {
          problem = JSON.parse(text) as Record<string, unknown>;
        } catch {
          problem = { detail: text.slice(0, 500) };
        }
        throw errorFromResponse(response.status, problem, response.headers.get("x-request-id") ?? undefined);
      } finally {
        clearTimeout(timer);
      }
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class Graders {
  /** `graders.create.function({key, fn | source | file, description?})` */
  readonly create: {
    function: (params: CreateFunctionParams) => Promise<GraderWithSource>;
    /** a grader that combines stored function and judge graders of the project */
    combined: (params: CreateCombinedParams) => Promise<GraderWithSource>;
    /** an AI judge: PASS (1) or FAIL (0) against natural-language criteria, with the judge's reasoning */
    binaryJudge: (params: CreateBinaryJudgeParams) => Promise<GraderWithSource>;
    /** a pre-built RAG judge: FAITHFULNESS, CONTEXT_RELEVANCY or ANSWER_RELEVANCY (context from document turns) */
    prebuiltJudge: (params: CreatePrebuiltJudgeParams) => Promise<GraderWithSource>;
    /** weighted rubric criteria, each MET / UNMET / CANNOT_ASSESS (or an option), scored as scoreRubric does */
    rubricJudge: (params: CreateRubricJudgeParams) => Promise<GraderWithSource>;
    /**
     * an external reward server, called over HTTP to grade; its /info and /metadata_schema are read first
     * (ValidationError with check "endpoint" when it cannot be reached or answers badly; EGRESS_DENIED when the address is refused)
     */
    externalEndpoint: (params: CreateExternalEndpointParams) => Promise<GraderWithSource>;
  };

  constructor(private readonly client: Gradebox) {
    this.create = {
      function: async (params) => {
        const source = await readSource(params);
        return this.client.request<GraderWithSource>("POST", this.path(), {
          body: { key: params.key, source, description: params.description ?? "", ...samplesBody(params.samples) },
          retry: false,
        });
      },
      combined: (params) =>
        this.client.request<GraderWithSource>("POST", this.path("/combined"), {
          body: { ...params, description: params.description ?? "" },
          retry: false,
        }),
      binaryJudge: ({ samples, ...params }) =>
        this.client.request<GraderWithSource>("POST", this.path("/binary-judge"), {
          body: { ...params, ...(samples ? { samples: samples.map((x) => ({ thread: toWire(x.thread) })) } : {}) },
          retry: false,
        }),
      prebuiltJudge: (params) =>
        this.client.request<GraderWithSource>("POST", this.path("/prebuilt-judge"), { body: params, retry: false }),
      rubricJudge: (params) => this.client.request<GraderWithSource>("POST", this.path("/rubric-judge"), { body: params, retry: false }),
      externalEndpoint: (params) =>
        this.client.request<GraderWithSource>("POST", this.path("/external-endpoint"), { body: params, retry: false }),
    };
  }

  /** The prompt a judge grader sends for `thread` (its first, for a multi-step judge); no model is called. */
  prompt({ graderKey, thread }: { graderKey: string; thread: ThreadInput }): Promise<JudgePrompt> {
    return this.client.request("POST", this.keyPath(graderKey, "/prompt"), { body: { thread: toWire(thread) }, retry: true });
  }

  private path(suffix = ""): string {
    return `/v1/projects/${encodeURIComponent(this.client.project)}/graders${suffix}`;
  }

  private keyPath(graderKey: string, suffix = ""): string {
    return this.path(`/${encodeURIComponent(graderKey)}${suffix}`);
  }

  /** Runs the five checks without saving; grades `threads` too when given. */
  async validate(params: GraderSourceInput & { threads?: ThreadInput[] }): Promise<ValidateResponse> {
    const source = await readSource(params);
    return this.client.request("POST", this.path("/validate"), {
      body: { source, ...(params.threads ? { threads: params.threads.map(toWire) } : {}) },
      retry: true,
    });
  }

  /** Every grader in the project (follows pages). */
  async list(): Promise<Grader[]> {
    const all: Grader[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.listPage({ limit: 200, cursor });
      all.push(...page.data);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return all;
  }

  /** One page, sorted by key. */
  listPage(params: { limit?: number; cursor?: string } = {}): Promise<GraderPage> {
    return this.client.request("GET", this.path(), { query: params, retry: true });
  }

  get({ graderKey }: { graderKey: string }): Promise<GraderWithSource> {
    return this.client.request("GET", this.keyPath(graderKey), { retry: true });
  }

  lock({ graderKey, locked }: { graderKey: string; locked: boolean }): Promise<Grader> {
    return this.client.request("PUT", this.keyPath(graderKey, "/lock"), { body: { locked }, retry: true });
  }

  /** Lifts a quarantine (GRADER_QUARANTINED) and clears the grader's fault count. */
  release({ graderKey }: { graderKey: string }): Promise<Grader> {
    return this.client.request("POST", this.keyPath(graderKey, "/release"), { retry: true });
  }

  /** Refused with ConflictError (GRADER_LOCKED) while the grader is locked. */
  async delete({ graderKey }: { graderKey: string }): Promise<void> {
    await this.client.request("DELETE", this.keyPath(graderKey), { retry: true });
  }

  /** Grades one thread (with `version`, that stored version); a grader failure throws GraderRuntimeError with its code. */
  grade({ graderKey, thread, version }: { graderKey: string; thread: ThreadInput; version?: number }): Promise<GradeResponse> {
    return this.client.request("POST", this.keyPath(graderKey, "/grade"), {
      body: { thread: toWire(thread), ...(version === undefined ? {} : { version }) },
      retry: true,
    });
  }

  /** Grades many threads in one request; results come back in input order, each a score or an error. */
  gradeBatch({
    graderKey,
    threads,
    version,
  }: {
    graderKey: string;
    threads: ThreadInput[];
    version?: number;
  }): Promise<GradeBatchResponse> {
    return this.client.request("POST", this.keyPath(graderKey, "/grade-batch"), {
      body: { threads: threads.map(toWire), ...(version === undefined ? {} : { version }) },
      retry: true,
    });
  }

  /**
   * Checks a new source and stores it as the grader's next version, which becomes current;
   * nothing changes when a check fails (BadRequest/ValidationError) or the grader is locked (ConflictError).
   */
  async update(params: UpdateFunctionParams): Promise<UpdateResult> {
    const source = await readSource(params);
    return this.client.request("PUT", this.keyPath(params.graderKey), {
      body: {
        source,
        ...(params.description === undefined ? {} : { description: params.description }),
        ...samplesBody(params.samples),
        ...(params.dryRun ? { dryRun: true } : {}),
      },
      retry: false,
    });
  }

  /** A grader's stored versions: `list`, `get` (with its source) and `restore` (a new version with an old source). */
  readonly versions = {
    list: async ({ graderKey }: { graderKey: string }): Promise<GraderVersion[]> =>
      (await this.client.request<{ data: GraderVersion[] }>("GET", this.keyPath(graderKey, "/versions"), { retry: true })).data,
    get: ({ graderKey, version }: { graderKey: string; version: number }): Promise<GraderVersionWithSource> =>
      this.client.request("GET", this.keyPath(graderKey, `/versions/${version}`), { retry: true }),
    restore: ({ graderKey, version }: { graderKey: string; version: number }): Promise<UpdateResult> =>
      this.client.request("POST", this.keyPath(graderKey, `/versions/${version}/restore`), { retry: false }),
  };
}

/** The judge models of the project: OpenAI-compatible endpoints its judge graders call. */
export class Models {
  constructor(private readonly client: Gradebox) {}

  private path(suffix = ""): string {
    return `/v1/projects/${encodeURIComponent(this.client.project)}/models${suffix}`;
  }

  /** Refused with UnprocessableEntityError (EGRESS_DENIED) when the server's egress policy forbids the address. */
  create(params: CreateModelParams): Promise<Model> {
    return this.client.request("POST", this.path(), { body: params, retry: false });
  }

  async list(): Promise<Model[]> {
    return (await this.client.request<{ data: Model[] }>("GET", this.path(), { retry: true })).data;
  }

  get({ modelKey }: { modelKey: string }): Promise<Model> {
    return this.client.request("GET", this.path(`/${encodeURIComponent(modelKey)}`), { retry: true });
  }

  /** Refused with ConflictError (MODEL_IN_USE) while a grader uses the model. */
  async delete({ modelKey }: { modelKey: string }): Promise<void> {
    await this.client.request("DELETE", this.path(`/${encodeURIComponent(modelKey)}`), { retry: true });
  }
}

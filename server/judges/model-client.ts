// One registered judge model: chat completions through the `openai` package (which speaks to
// vLLM, Ollama, llama.cpp's server and OpenAI alike), over a dispatcher that enforces the
// egress policy, with replies bounded in size and read strictly, and the Upstream's limits.

import { TransformStream } from "node:stream/web";
import OpenAI from "openai";
import { type Dispatcher, Response as UndiciResponse, fetch as undiciFetch } from "undici";
import { z } from "zod";
import { statusError, transportError, Upstream, UpstreamError } from "../upstream.ts";
import type { ModelRow } from "./spec.ts";

/** The largest chat-completion response read from a model, in bytes (the egress agent stops there). */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

/** A registered model, as calls need it. */
export type ModelSpec = Omit<ModelRow, "createdAt">;

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}
export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}
export interface ChatReply {
  content: string;
  usage: Usage;
}

const count = z.number().int().min(0).max(1e12);
/** What we read of a chat completion; anything else in it is ignored. */
const Completion = z.object({
  choices: z
    .array(z.object({ message: z.object({ content: z.string().nullable().optional() }) }))
    .min(1)
    .max(128),
  usage: z
    .object({ prompt_tokens: count.optional(), completion_tokens: count.optional(), total_tokens: count.optional() })
    .nullable()
    .optional(),
});

/**
 * A fetch through the egress dispatcher, its bodies capped twice while they stream: as sent (the
 * dispatcher's maxResponseSize) and as read (here), since fetch undoes a gzip or deflate
 * content-encoding itself: 1 MB of gzip would otherwise be read as 1 GB.
 */
export function dispatcherFetch(dispatcher: Dispatcher): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) =>
    capDecoded(await undiciFetch(input as never, { ...(init as object), dispatcher } as never), MAX_RESPONSE_BYTES)) as never;
}

/** The response, its decoded body failing past maxBytes (as undici's own cap does: the connection is dropped there). */
function capDecoded(response: UndiciResponse, maxBytes: number): UndiciResponse {
  if (!response.body) return response;
  let seen = 0;
  const counted = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen <= maxBytes) return controller.enqueue(chunk);
        // the code undici's maxResponseSize gives, so that transportError words both alike
        controller.error(Object.assign(new Error(`the response is over ${maxBytes} bytes`), { code: "UND_ERR_RES_EXCEEDED_MAX_SIZE" }));
      },
    }),
  );
  return new UndiciResponse(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
}

export class ModelClient {
  readonly upstream: Upstream;
  private readonly openai: OpenAI;
  /** false once the server refused a structured-output request: JSON is asked for in words then */
  private structured = true;

  constructor(
    readonly spec: ModelSpec,
    dispatcher: Dispatcher,
    /** the model's API key for this call (its project's secret, read when it is sent), or undefined for none */
    private readonly apiKey: (spec: ModelSpec) => Promise<string | undefined> = async () => undefined,
    /** the project's share of the node's outbound calls (OutboundGate.for) */
    gate?: () => Promise<() => void>,
  ) {
    this.upstream = new Upstream(`model ${spec.key} (${spec.baseURL})`, {
      maxConcurrency: spec.maxConcurrency,
      timeoutMs: spec.timeoutMs,
      gate,
    });
    this.openai = new OpenAI({
      baseURL: spec.baseURL,
      // an OpenAI-compatible server without auth still gets a header; the value is ours, not a secret
      // (a model's key goes per request: it is read from its project's secrets on every call)
      apiKey: "gradebox-no-key",
      maxRetries: 0, // the Upstream retries, so that the breaker and the metrics see every attempt
      timeout: spec.timeoutMs,
      fetch: dispatcherFetch(dispatcher),
    });
  }

  /** One chat completion (retried as the Upstream allows); JSON per `schema` where the server supports it. */
  async chat(
    messages: ChatMessage[],
    schema?: { name: string; schema: Record<string, unknown> },
    deadline?: AbortSignal,
  ): Promise<ChatReply> {
    return this.upstream.call(async (signal) => {
      let key: string | undefined;
      try {
        key = await this.apiKey(this.spec);
      } catch (error) {
        throw new UpstreamError("unavailable", (error as Error).message);
      }
      const headers = key === undefined ? undefined : { Authorization: `Bearer ${key}` };
      const ask = (structured: boolean) =>
        this.openai.chat.completions.create(
          {
            model: this.spec.model,
            messages,
            temperature: 0,
            ...(structured && schema ? { response_format: { type: "json_schema", json_schema: { ...schema, strict: true } } } : {}),
          },
          { signal, maxRetries: 0, headers },
        );
      let raw: unknown;
      try {
        try {
          raw = await ask(this.structured && schema !== undefined);
        } catch (error) {
          // servers without structured output refuse the request with a 400: ask again without it
          if (!(this.structured && schema && error instanceof OpenAI.APIError && error.status === 400)) throw error;
          raw = await ask(false);
          this.structured = false;
        }
      } catch (error) {
        throw classify(error, signal);
      }
      const parsed = Completion.safeParse(raw);
      if (!parsed.success) {
        throw new UpstreamError(
          "invalid",
          `the model's response is not a chat completion: ${parsed.error.issues[0]?.message ?? "bad shape"}`,
        );
      }
      const usage = parsed.data.usage ?? {};
      const promptTokens = usage.prompt_tokens ?? 0;
      const completionTokens = usage.completion_tokens ?? 0;
      return {
        content: parsed.data.choices[0].message.content ?? "",
        usage: { promptTokens, completionTokens, totalTokens: usage.total_tokens ?? promptTokens + completionTokens },
      };
    }, deadline);
  }
}

function classify(error: unknown, signal: AbortSignal): UpstreamError {
  if (error instanceof OpenAI.APIError && typeof error.status === "number") {
    return statusError(
      error.status,
      `the model answered HTTP ${error.status}${error.message ? `: ${error.message.slice(0, 300)}` : ""}`,
      error.headers,
    );
  }
  if (error instanceof SyntaxError) return new UpstreamError("invalid", `the model's response is not JSON: ${error.message.slice(0, 200)}`);
  // the openai package reports its own time-out (the signal is ours) as a connection time-out
  const timedOut = signal.aborted || error instanceof OpenAI.APIConnectionTimeoutError;
  return transportError(error, timedOut, "the model", MAX_RESPONSE_BYTES);
}

// The one definition of an external endpoint grader, as created, stored and shown.

import { z } from "zod";
import { SecretEnvName, SecretName } from "../secrets/secrets.ts";

/** Request headers an endpoint grader may set from secrets; the transport's own are not among them. */
const HEADER =
  /^(?!(host|content-length|content-type|transfer-encoding|connection|keep-alive|upgrade|te|trailer|expect|cookie)$)[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/i;

export const EndpointCreate = z
  .object({
    url: z
      .string()
      .max(2048)
      .url("url must be an absolute URL, e.g. https://rewards.example.com")
      .refine((u) => /^https?:\/\//i.test(u), "url must be http:// or https://")
      .describe(
        "the reward server's root: Gradebox calls {url}/score, /batch_score, /info, /metadata_schema (transport websocket: {url}/ws)",
      ),
    headersEnv: z
      .record(z.string().regex(HEADER, "a header name (not one the transport sets: host, content-length, …)"), SecretEnvName)
      .refine((h) => Object.keys(h).length <= 16, "at most 16 headers")
      .optional()
      .describe(
        "request headers whose values are server environment secrets (GRADEBOX_SECRET_…) the operator granted to this project (GRADEBOX_SECRET_GRANTS)",
      ),
    headersSecret: z
      .record(z.string().regex(HEADER, "a header name (not one the transport sets: host, content-length, …)"), SecretName)
      .refine((h) => Object.keys(h).length <= 16, "at most 16 headers")
      .optional()
      .describe(
        "request headers whose values are the project's secrets (PUT /v1/projects/{project}/secrets/{name}), bound to this URL's host",
      ),
    transport: z
      .enum(["http", "websocket"])
      .default("http")
      .describe(
        "how threads are scored: http (POST /score, /batch_score) or websocket (one socket at {url}/ws, a score message per thread, " +
          "answers correlated by id, as Adaptive's RewardClient.connect_websocket). /info and /metadata_schema are read over HTTP either way",
      ),
    timeoutMs: z.number().int().min(100).max(600_000).default(30_000).describe("milliseconds per attempt"),
    batch: z
      .boolean()
      .default(true)
      .describe("true: /batch_score for batches; false: /score per thread (websocket: threads per call, batchSize or 1)"),
    batchSize: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(64)
      .describe("threads per /batch_score call (websocket: score messages sent, retried and timed together)"),
    maxConcurrency: z.number().int().min(1).max(256).default(8).describe("calls in flight to the endpoint at once"),
  })
  .describe("a reward server and how to call it");

export type EndpointCreate = z.infer<typeof EndpointCreate>;

export const EndpointSpec = EndpointCreate.extend({
  info: z
    .object({
      version: z.string().describe("the reward server's version"),
      name: z.string().describe("its name"),
      description: z.string().describe("its description"),
    })
    .describe("what GET {url}/info answered at registration")
    .meta({ id: "EndpointInfo" }),
  metadataSchema: z.unknown().optional().describe("what GET {url}/metadata_schema answered at registration, when it had one"),
})
  .describe("an external endpoint grader's definition")
  .meta({ id: "EndpointSpec" });
export type EndpointSpec = z.infer<typeof EndpointSpec>;

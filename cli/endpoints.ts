// `gradebox endpoint …`: external endpoint graders, reward servers Gradebox calls over HTTP to grade
// (their /info and /metadata_schema are read when one is created).

import type { Command } from "commander";
import type { EndpointDefinition } from "../sdk/index.ts";
import { type ApiOptions, client, nameValue, printJson, run, wholeNumber, withApiOptions } from "./api.ts";

/** An endpoint's definition, as `get` shows it. */
export function describeEndpoint(e: EndpointDefinition): string {
  const socket = e.transport === "websocket";
  const batching = socket
    ? `over a WebSocket at ${e.url.replace(/\/+$/, "")}/ws, ${e.batch ? e.batchSize : 1} score messages per call`
    : e.batch
      ? `batch ${e.batchSize} per /batch_score call`
      : "no batching (/score per thread)";
  const headers = [
    ...Object.entries(e.headersSecret ?? {}).map(([name, secret]) => `\n  header ${name} from secret ${secret}`),
    ...Object.entries(e.headersEnv ?? {}).map(([name, env]) => `\n  header ${name} from ${env}`),
  ];
  return (
    `  endpoint ${e.url}\n  ${batching}, concurrency ${e.maxConcurrency}, timeout ${e.timeoutMs}ms${headers.join("")}` +
    `\n  info: ${e.info.name} ${e.info.version}${e.info.description ? ` (${e.info.description})` : ""}` +
    `\n  metadata schema: ${e.metadataSchema === undefined ? "none" : "yes (see --json)"}`
  );
}

export function addEndpointCommands(program: Command): void {
  const endpoint = program.command("endpoint").description("external endpoint graders: reward servers Gradebox calls to grade");

  // --url is the endpoint's here, so the server's address is --server (or GRADEBOX_URL)
  withApiOptions(
    endpoint
      .command("create")
      .description("register a reward server as a grader (its /info and /metadata_schema are read; grade it with `gradebox grade`)")
      .argument("<key>", "the grader key")
      .requiredOption("--url <url>", "the reward server's root: Gradebox calls {url}/score, /batch_score, /info, /metadata_schema")
      .option(
        "--header-secret <name=secret>",
        "a request header whose value is a project secret (see `gradebox secrets set`), e.g. Authorization=rm-token (repeatable)",
        nameValue("Name=secret"),
        {} as Record<string, string>,
      )
      .option(
        "--header <name=var>",
        "a request header whose value is a server environment variable the operator granted to this project, e.g. Authorization=GRADEBOX_SECRET_REWARD (repeatable)",
        nameValue("Name=GRADEBOX_SECRET_VAR"),
        {} as Record<string, string>,
      )
      .option(
        "--transport <transport>",
        "http (POST /score, /batch_score; the default) or websocket (a score message per thread over one socket at {url}/ws, as Adaptive's RewardClient.connect_websocket)",
      )
      .option("--timeout-ms <n>", "per attempt, ms (default 30000)", wholeNumber)
      .option("--no-batch", "call /score once per thread instead of /batch_score")
      .option("--batch-size <n>", "threads per /batch_score call (default 64)", wholeNumber)
      .option("--max-concurrency <n>", "calls in flight to the endpoint at once (default 8)", wholeNumber)
      .option("-d, --description <text>", "what it scores"),
    "--server",
  ).action(
    (
      key: string,
      opts: Omit<ApiOptions, "url"> & {
        server?: string;
        url: string;
        header: Record<string, string>;
        headerSecret: Record<string, string>;
        transport?: "http" | "websocket";
        timeoutMs?: number;
        batch: boolean;
        batchSize?: number;
        maxConcurrency?: number;
        description?: string;
      },
    ) => {
      const api: ApiOptions = { url: opts.server, apiKey: opts.apiKey, project: opts.project, json: opts.json };
      return run(api, async () => {
        const g = await client(api).graders.create.externalEndpoint({
          key,
          url: opts.url,
          headersSecret: Object.keys(opts.headerSecret).length ? opts.headerSecret : undefined,
          headersEnv: Object.keys(opts.header).length ? opts.header : undefined,
          transport: opts.transport,
          timeoutMs: opts.timeoutMs,
          batch: opts.batch,
          batchSize: opts.batchSize,
          maxConcurrency: opts.maxConcurrency,
          description: opts.description,
        });
        if (opts.json) return printJson(g);
        const info = g.endpoint?.info;
        console.log(`✓ created ${g.key} (endpoint ${info?.name ?? "?"} ${info?.version ?? "?"} at ${g.endpoint?.url ?? opts.url})`);
        for (const w of g.warnings) console.log(`  warning: ${w}`);
      });
    },
  );
}

// Prometheus metrics (prom-client), one registry per app. Scraped at GET /metrics.

import client from "prom-client";
import type { SandboxPool } from "../sandbox/host/pool.ts";
import type { GradeOutcome } from "../sandbox/validate/checks.ts";

export class Metrics {
  readonly registry = new client.Registry();
  private readonly grades;
  private readonly duration;
  private readonly batchSize;
  readonly workerRestarts;
  readonly quarantines;
  private readonly judgeCalls;
  private readonly judgeLatency;
  private readonly judgeTokens;
  private readonly endpointCalls;
  private readonly endpointLatency;
  private readonly schemaUnits;
  private readonly schemaChecks;
  private readonly sandboxFusionCalls;

  constructor(pool: SandboxPool) {
    const registers = [this.registry];
    client.collectDefaultMetrics({ register: this.registry, prefix: "gradebox_api_" });
    this.grades = new client.Counter({
      name: "gradebox_grades_total",
      help: "Threads graded, by project, grader and result code (ok for a score)",
      labelNames: ["project", "grader", "code"],
      registers,
    });
    this.duration = new client.Histogram({
      name: "gradebox_grading_duration_seconds",
      help: "Time to grade one request (grade or grade-batch), sandbox round trip included",
      labelNames: ["route"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.batchSize = new client.Histogram({
      name: "gradebox_batch_size",
      help: "Threads per grading request",
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
      registers,
    });
    this.workerRestarts = new client.Counter({
      name: "gradebox_worker_restarts_total",
      help: "Sandbox workers replaced after they exited",
      registers,
    });
    this.quarantines = new client.Counter({ name: "gradebox_quarantines_total", help: "Graders quarantined", registers });
    // outbound calls, the same pair of series for judge models and endpoints
    const outbound = (what: "judge" | "endpoint", label: string, help: string) => ({
      calls: new client.Counter({
        name: `gradebox_${what}_calls_total`,
        help: `${help}, by ${label} (project/key) and outcome: ok, unavailable, invalid_response, egress_denied`,
        labelNames: [label, "outcome"],
        registers,
      }),
      latency: new client.Histogram({
        name: `gradebox_${what}_call_duration_seconds`,
        help: `Time of one call (retries included), by ${label}`,
        labelNames: [label],
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
        registers,
      }),
    });
    ({ calls: this.judgeCalls, latency: this.judgeLatency } = outbound(
      "judge",
      "model",
      "Calls to judge models (invalid_output counts items whose judge gave no usable verdict, asked twice)",
    ));
    ({ calls: this.endpointCalls, latency: this.endpointLatency } = outbound(
      "endpoint",
      "endpoint",
      "Calls to external endpoint graders, one per /score or per /batch_score chunk",
    ));
    // the metered metadata-schema check (metered-schema.ts): what it cost and how it ended
    this.schemaUnits = new client.Counter({
      name: "gradebox_endpoint_schema_units_total",
      help: "Units of work spent checking threads' metadata against endpoints' metadata schemas, by endpoint (project/key)",
      labelNames: ["endpoint"],
      registers,
    });
    this.schemaChecks = new client.Counter({
      name: "gradebox_endpoint_schema_checks_total",
      help: "Threads whose metadata met an endpoint's metadata schema, by endpoint and outcome: ok, refused, over_budget, not_checked (an earlier thread of the batch went over budget)",
      labelNames: ["endpoint", "outcome"],
      registers,
    });
    // verl turns any failed call into a silent 0: every call that ran nothing is counted here, loudly
    this.sandboxFusionCalls = new client.Counter({
      name: "gradebox_sandbox_fusion_calls_total",
      help:
        "Calls to the SandboxFusion-compatible route (/sf/<token>/run_code), by project and outcome: success, failed (the " +
        "program failed: an honest answer), sandbox_error (the runner failed: the caller scores it 0), busy (answered 504: " +
        "verl retries), refused (a bad token, body, language or grader: the caller scores it 0)",
      labelNames: ["project", "outcome"],
      registers,
    });
    this.judgeTokens = new client.Counter({
      name: "gradebox_judge_tokens_total",
      help: "Tokens the judge models reported, by model and type (prompt, completion)",
      labelNames: ["model", "type"],
      registers,
    });
    new client.Gauge({
      name: "gradebox_sandbox_workers_ready",
      help: "Sandbox workers ready to grade",
      registers,
      collect() {
        this.set(pool.readyWorkers);
      },
    });
    // per-worker figures come from the workers themselves, asked at scrape time
    const warm = new client.Gauge({ name: "gradebox_warm_isolates", help: "Warm grader isolates across workers", registers });
    const evictions = new client.Gauge({
      name: "gradebox_isolate_evictions",
      help: "Warm isolates evicted (LRU) by the workers now running, since they started",
      registers,
    });
    const rss = new client.Gauge({ name: "gradebox_sandbox_rss_bytes", help: "Resident memory of the sandbox workers", registers });
    this.collectWorkers = async () => {
      const stats = await pool.stats().catch(() => []);
      warm.set(stats.reduce((a, s) => a + s.warm, 0));
      evictions.set(stats.reduce((a, s) => a + s.evictions, 0));
      rss.set(stats.reduce((a, s) => a + s.rss, 0));
    };
  }

  /** Refreshes the figures that live in the workers; called before each scrape. */
  readonly collectWorkers: () => Promise<void>;

  judgeCall(model: string, outcome: string, seconds?: number, usage?: { promptTokens: number; completionTokens: number }): void {
    this.judgeCalls.inc({ model, outcome });
    if (seconds !== undefined) this.judgeLatency.observe({ model }, seconds);
    if (usage) {
      this.judgeTokens.inc({ model, type: "prompt" }, usage.promptTokens);
      this.judgeTokens.inc({ model, type: "completion" }, usage.completionTokens);
    }
  }

  endpointCall(endpoint: string, outcome: string, seconds: number): void {
    this.endpointCalls.inc({ endpoint, outcome });
    this.endpointLatency.observe({ endpoint }, seconds);
  }

  endpointSchemaCheck(endpoint: string, units: number, outcomes: Record<"ok" | "refused" | "over_budget" | "not_checked", number>): void {
    this.schemaUnits.inc({ endpoint }, units);
    for (const [outcome, n] of Object.entries(outcomes)) if (n > 0) this.schemaChecks.inc({ endpoint, outcome }, n);
  }

  sandboxFusionCall(project: string, outcome: "success" | "failed" | "sandbox_error" | "busy" | "refused"): void {
    this.sandboxFusionCalls.inc({ project, outcome });
  }

  observe(project: string, grader: string, route: "grade" | "grade-batch", seconds: number, outcomes: GradeOutcome[]): void {
    this.duration.observe({ route }, seconds);
    this.batchSize.observe(outcomes.length);
    const counts = new Map<string, number>();
    for (const o of outcomes) {
      const code = "error" in o ? o.error.code : "ok";
      counts.set(code, (counts.get(code) ?? 0) + 1);
    }
    for (const [code, n] of counts) this.grades.inc({ project, grader, code }, n);
  }
}

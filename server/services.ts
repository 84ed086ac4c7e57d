// The one place the server's services are built and wired: outbound calls (the egress policy,
// its dispatchers, the shared gate), secrets, judges, endpoints, grading, and the services the
// routes call. What the sandbox pool reports (a grader's fault, a validation's, a worker's exit)
// goes to the store, the metrics and the log from here.

import type { FastifyBaseLogger } from "fastify";
import type { SandboxPool } from "../sandbox/host/pool.ts";
import { bootstrapSecretsKey } from "./bootstrap.ts";
import type { Config } from "./config.ts";
import { type EgressPolicy, egressAgent, egressPolicy } from "./egress.ts";
import { Endpoints, MAX_ENDPOINT_RESPONSE_BYTES } from "./endpoints/endpoints.ts";
import { Grading } from "./grading.ts";
import { Judges } from "./judges/judges.ts";
import { MAX_RESPONSE_BYTES } from "./judges/model-client.ts";
import { LoopShare } from "./loop-share.ts";
import { Metrics } from "./metrics.ts";
import { OutboundGate } from "./outbound.ts";
import { RewardSockets } from "./reward-sockets.ts";
import { SecretBox } from "./secrets/box.ts";
import { parseGrants, Secrets } from "./secrets/secrets.ts";
import { EndpointGraders } from "./services/endpoint-graders.ts";
import { Graders } from "./services/graders.ts";
import { JudgeGraders } from "./services/judge-graders.ts";
import { Models } from "./services/models.ts";
import { Validation } from "./services/validation.ts";
import { Versions } from "./services/versions.ts";
import { graderIdOf } from "./store/graders.ts";
import type { Store } from "./store.ts";
import { ValidationLimiter } from "./validation-limit.ts";

export interface Services {
  config: Config;
  store: Store;
  pool: SandboxPool;
  metrics: Metrics;
  egress: EgressPolicy;
  secrets: Secrets;
  judges: Judges;
  endpoints: Endpoints;
  grading: Grading;
  validation: Validation;
  versions: Versions;
  graders: Graders;
  judgeGraders: JudgeGraders;
  endpointGraders: EndpointGraders;
  models: Models;
  /** reward-protocol WebSockets open per project (both addresses of the protocol) */
  rewardSockets: RewardSockets;
  /** stops hearing the pool and closes the outbound connections (the app's onClose) */
  close(): Promise<void>;
}

export function buildServices({
  config,
  store,
  pool,
  log,
}: {
  config: Config;
  store: Store;
  pool: SandboxPool;
  log: FastifyBaseLogger;
}): Services {
  const metrics = new Metrics(pool);
  const egress = egressPolicy(config.egressAllow);
  const dispatcher = egressAgent(egress, { maxResponseSize: MAX_RESPONSE_BYTES });
  const secretsKey = bootstrapSecretsKey(config);
  const secrets = new Secrets(store.db, secretsKey && new SecretBox(secretsKey), parseGrants(config.secretGrants), store.quotas);
  const outbound = new OutboundGate({ perProject: config.outboundPerProject, total: config.outboundMax, maxWaiting: 100_000 });
  const judges = new Judges(dispatcher, metrics, (id) => store.modelById(id), {
    apiKey: (model) => secrets.apiKey(model),
    gate: outbound,
    // a judge's template over its budget is a fault of its grader, recorded as a worker it took down is (onFault, below)
    onFault: (graderId, reason) => onFault(graderId, reason),
  });
  // endpoints answer whole batches: their replies get a larger cap than a judge's verdict
  const endpointDispatcher = egressAgent(egress, { maxResponseSize: MAX_ENDPOINT_RESPONSE_BYTES });
  const endpoints = new Endpoints(endpointDispatcher, metrics, {
    secretHeaders: (project, spec) => secrets.headers(project, spec),
    gate: outbound,
    // an endpoint whose metadata schema check goes over budget is at fault, as a grader that kills its worker
    onFault: (graderId, reason) => onFault(graderId, reason),
    // an endpoint's WebSocket connects where the dispatcher's connections may
    egress,
  });
  const grading = new Grading(store, pool, metrics, judges, endpoints, new LoopShare(config.loopWorkPerProject));
  // validations that take their worker down count per project (a rate limit after a few)
  const validations = new ValidationLimiter();
  const validation = new Validation(pool, validations);

  // a grader that takes its worker down (or a judge's template or an endpoint's schema check over
  // its budget) is recorded; the third time in 10 minutes quarantines it
  const onFault = (graderId: string, reason: string) => {
    grading.recordFault(graderIdOf(graderId), reason).then(
      (quarantined) => {
        if (!quarantined) return;
        metrics.quarantines.inc();
        log.warn({ graderId, reason }, "grader quarantined");
      },
      (error) => log.error({ err: error, graderId }, "could not record a grader fault"),
    );
  };
  const onWorkerExit = ({ pid, ...info }: { pid: number; code: number | null; signal: string | null; stderrTail: string }) => {
    metrics.workerRestarts.inc();
    // workerPid: every log line has `pid` already, the server's
    log.warn({ ...info, workerPid: pid, stderrTail: info.stderrTail.slice(-500) }, "sandbox worker exited; replacing it");
  };
  const onWorkersStopped = (signal: string) =>
    log.debug({ signal }, "sandbox workers stopped by the terminal's signal; not replacing them");
  const onValidationFault = (project: string, reason: string) => {
    validations.record(project);
    log.warn({ project, reason }, "a validation took its sandbox worker down");
  };
  pool.on("graderFault", onFault);
  pool.on("validationFault", onValidationFault);
  pool.on("workerExit", onWorkerExit);
  pool.on("workersStopped", onWorkersStopped);

  return {
    config,
    store,
    pool,
    metrics,
    egress,
    secrets,
    judges,
    endpoints,
    grading,
    validation,
    versions: new Versions(store, validation),
    graders: new Graders(store, pool, validation, grading),
    judgeGraders: new JudgeGraders(store, grading),
    endpointGraders: new EndpointGraders(store, grading, secrets),
    models: new Models(store, judges, egress, secrets),
    rewardSockets: new RewardSockets(config.rewardSocketsPerProject),
    async close() {
      pool.off("graderFault", onFault);
      pool.off("validationFault", onValidationFault);
      pool.off("workerExit", onWorkerExit);
      pool.off("workersStopped", onWorkersStopped);
      endpoints.close();
      await Promise.all([dispatcher.close(), endpointDispatcher.close()]);
    },
  };
}

// A sandbox worker process: owns an Engine (and so every isolate) and answers the pool's
// requests one at a time. If V8 aborts this process on an out-of-memory path, only this
// process dies; the pool replaces it.

import { Engine } from "./engine.ts";
import { type EngineLimits, LIMITS_ENV, type WorkerHello, type WorkerReply, type WorkerRequest } from "./protocol.ts";

if (!process.send) {
  console.error("sandbox/worker.ts is started by the server's sandbox pool, not by hand");
  process.exit(2);
}
const channel = process.send.bind(process);
// The pool may close the channel while a reply is on its way (shutdown): drop it quietly.
const send = (message: WorkerReply | WorkerHello) => {
  if (process.connected) channel(message, undefined, {}, () => {});
};
const limits = JSON.parse(process.env[LIMITS_ENV] ?? "") as EngineLimits;
const engine = new Engine(limits);

async function handle(req: WorkerRequest): Promise<WorkerReply> {
  switch (req.op) {
    case "grade":
      return { id: req.id, op: "grade", results: engine.gradeBatch(req.grader, req.batch) };
    case "validate":
      return { id: req.id, op: "validate", result: await engine.validate(req.source, req.threads) };
    case "stats":
      return { id: req.id, op: "stats", warm: engine.warmCount, evictions: engine.evictions, rss: process.memoryUsage.rss() };
  }
}

process.on("message", (req: WorkerRequest) => {
  handle(req).then(
    (reply) => send(reply),
    (error: unknown) => send({ id: req.id, op: "failed", message: error instanceof Error ? error.message : String(error) }),
  );
});
// The server died or closed the channel: nothing is left to answer.
process.on("disconnect", () => {
  engine.dispose();
  process.exit(0);
});
send({ op: "ready", pid: process.pid } satisfies WorkerHello);

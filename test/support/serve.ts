// A real server on a free 127.0.0.1 port for a program outside node's test runner (`make
// test-trainers`, test/support/trainers.sh): writes one JSON line {"url", "key", "project"} to
// stdout once it listens, then serves until stdin closes or it gets SIGTERM/SIGINT, and removes
// its temporary directory. The server's settings are the tests' (not the caller's GRADEBOX_*),
// but for GRADEBOX_MAX_BATCH (the Python tests' split batches), with loopback egress allowed (the
// reward servers a test registers as endpoint graders listen on 127.0.0.1).
//   node --no-node-snapshot --import tsx test/support/serve.ts [project]

import { startServer } from "./helpers.ts";

const project = process.argv[2] ?? "trainers";
const maxBatch = process.env.GRADEBOX_MAX_BATCH;
const server = await startServer({
  listen: true,
  env: { GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32", ...(maxBatch ? { GRADEBOX_MAX_BATCH: maxBatch } : {}) },
});
process.stdout.write(`${JSON.stringify({ url: server.url, key: await server.keyFor(project), project })}\n`);

let closing = false;
async function stop(): Promise<void> {
  if (closing) return;
  closing = true;
  await server.close();
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();

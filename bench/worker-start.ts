// How long a sandbox worker takes from fork to ready (wall time, and the CPU time it used, which a
// busy machine disturbs less), and how much memory it holds then (its own RSS and its children's:
// the esbuild service a worker starts when it bundles), run three ways:
//   tsx       sandbox/worker/worker.ts through tsx's loader (`make run`, the tests)
//   strip     the same source under Node's own --experimental-transform-types (type stripping
//             alone cannot run it: the code has parameter properties)
//   compiled  dist/app/sandbox/worker/worker.js as `make build` writes it, plain node (production)
// Each mode forks RUNS workers one after another per role and prints the medians.
//   node --import tsx bench/worker-start.ts [runs] [compiled tree, default dist/app]

import { fork } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { LIMITS_ENV, ROLE_ENV } from "../sandbox/protocol/requests.ts";
import { cpuUs, descendantPids, statusKb } from "./proc.ts";

const RUNS = Number(process.argv[2] ?? 9);
const compiledTree = resolve(process.argv[3] ?? "dist/app");
const LIMITS = { timeoutMs: 5000, memoryMb: 64, maxWarm: 64, maxWarmHeapMb: 384 };
const COMMON = ["--no-node-snapshot", "--max-semi-space-size=2"];

const modes = {
  tsx: { entry: new URL("../sandbox/worker/worker.ts", import.meta.url), execArgv: [...COMMON, "--import", import.meta.resolve("tsx")] },
  strip: {
    entry: new URL("../sandbox/worker/worker.ts", import.meta.url),
    execArgv: [...COMMON, "--experimental-transform-types", "--no-warnings=ExperimentalWarning"],
  },
  compiled: { entry: pathToFileURL(`${compiledTree}/sandbox/worker/worker.js`), execArgv: COMMON },
};

async function once(mode: keyof typeof modes, role: string) {
  const { entry, execArgv } = modes[mode];
  const started = performance.now();
  const child = fork(entry, [], {
    execArgv,
    serialization: "advanced",
    env: { ...process.env, [LIMITS_ENV]: JSON.stringify(LIMITS), [ROLE_ENV]: role },
    stdio: ["ignore", "inherit", "inherit", "ipc", "pipe"],
  });
  await new Promise<void>((ready, fail) => {
    child.on("message", (msg: { op?: string }) => msg?.op === "ready" && ready());
    child.on("exit", (code) => fail(new Error(`${mode} worker exited with ${code}`)));
  });
  const ms = performance.now() - started;
  const pid = child.pid as number;
  const cpu = cpuUs(pid) / 1000;
  const own = statusKb(pid, "VmRSS");
  const withChildren = own + descendantPids(pid).reduce((sum, p) => sum + statusKb(p, "VmRSS"), 0);
  const exited = new Promise((done) => child.once("exit", done));
  child.disconnect();
  await exited;
  return { ms, cpu, ownMb: own / 1024, totalMb: withChildren / 1024 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const available = (Object.keys(modes) as Array<keyof typeof modes>).filter((m) => existsSync(modes[m].entry));
if (!available.includes("compiled")) console.error(`no compiled tree at ${compiledTree}: run make build first (measuring the others)`);
for (const role of ["grade", "validate"]) {
  for (const mode of available) {
    const runs: Array<Awaited<ReturnType<typeof once>>> = [];
    await once(mode, role); // the first start fills the page cache and tsx's disk cache
    for (let i = 0; i < RUNS; i++) runs.push(await once(mode, role));
    const m = (key: "ms" | "cpu" | "ownMb" | "totalMb", width: number) =>
      median(runs.map((r) => r[key]))
        .toFixed(0)
        .padStart(width);
    console.log(
      `${role.padEnd(8)} ${mode.padEnd(8)} ready ${m("ms", 4)} ms  CPU ${m("cpu", 4)} ms  RSS ${m("ownMb", 3)} MB` +
        `  with children ${m("totalMb", 3)} MB  (median of ${RUNS})`,
    );
  }
}

// A real load balancer in front of test servers: Debian's haproxy (scripts/ensure-haproxy.sh installs it)
// with a generated config in a temp dir, in the foreground as a child of the test (master-worker mode, so
// reload() can swap the backend list without dropping the listening socket). Round robin over node1..nodeN,
// health checks on GET /readyz every 200 ms (down after 2 failures, up after 1 success), and a connection
// refused by a dead node retried on another node before the client sees it (retries + redispatch: only
// connection failures are retried, never a request a node has already received).

import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { accepts, freePort } from "./ports.ts";

export interface Backend {
  host: string;
  port: number;
}

export interface HaproxyOptions {
  /** the health check request path (GET); default /readyz, which must answer 200 */
  checkPath?: string;
  /** health check interval in ms; default 200 */
  checkIntervalMs?: number;
  /** consecutive failed checks before a node is DOWN; default 2 */
  fall?: number;
  /** consecutive good checks before a node is UP again; default 1 */
  rise?: number;
  /** timeout server/client in ms (a grade can take a while); default 60 000 */
  timeoutMs?: number;
  /** wait until every node's health check passed before returning; default true */
  waitUntilUp?: boolean;
}

export interface ServerStats {
  /** node1..nodeN, in the order of the backends */
  name: string;
  /** haproxy's status column: UP, DOWN, "UP 1/2" (going down), "DOWN 1/1" (going up), MAINT, no check … */
  status: string;
  /** HTTP requests sent to this node (the CSV's req_tot; stot, the sessions, if the former is empty) */
  requests: number;
  /** the last health check's result, e.g. L7OK, L4CON (refused), L7STS (bad status) */
  checkStatus: string;
}

export interface Haproxy {
  /** http://127.0.0.1:<port>, the frontend */
  url: string;
  port: number;
  /** http://127.0.0.1:<statsPort>/stats (add ;csv for CSV) */
  statsUrl: string;
  dir: string;
  /** haproxy's own output so far (warnings, alerts) */
  logs(): string;
  /** the per-node rows of the stats page */
  stats(): Promise<ServerStats[]>;
  /** poll stats() until `name`'s status is exactly `status` (e.g. "UP", "DOWN"); throws after timeoutMs */
  waitForStatus(name: string, status: string, timeoutMs?: number): Promise<void>;
  /** rewrite the config with another backend list and reload (SIGUSR2 to the master); counters start again */
  reload(backends: Backend[]): Promise<void>;
  /** SIGTERM (SIGKILL after 3 s), then remove the dir. Idempotent. */
  stop(): Promise<void>;
}

/** The haproxy binary: $GRADEBOX_HAPROXY, PATH, or Debian's /usr/sbin/haproxy (not on a non-root PATH). */
export function haproxyBin(): string {
  const candidates = [
    process.env.GRADEBOX_HAPROXY,
    ...(process.env.PATH ?? "").split(delimiter).map((d) => d && join(d, "haproxy")),
    "/usr/sbin/haproxy",
  ];
  for (const c of candidates) {
    if (!c) continue;
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {}
  }
  throw new Error("haproxy not found (PATH, /usr/sbin/haproxy): run scripts/ensure-haproxy.sh");
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** GET on a fresh connection (no keep-alive pool: after a reload an old worker must not answer). */
function fetchText(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false, headers: { connection: "close" } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${url}: HTTP ${res.statusCode}`))));
      res.on("error", reject);
    }).on("error", reject);
  });
}

// `generation` names the stats proxy (stats_g1, stats_g2 …), so a reload shows in the CSV once it took effect.
function config(backends: Backend[], port: number, statsPort: number, opts: HaproxyOptions, generation: number): string {
  const inter = opts.checkIntervalMs ?? 200;
  const timeout = opts.timeoutMs ?? 60_000;
  const servers = backends.map((b, i) => `  server node${i + 1} ${b.host}:${b.port} check`);
  return `global
  maxconn 4096
  hard-stop-after 10s

defaults
  mode http
  timeout connect 1s
  timeout client ${timeout}ms
  timeout server ${timeout}ms
  timeout http-request 30s
  timeout check ${Math.max(inter, 500)}ms
  retries 2
  option redispatch
  option http-keep-alive

frontend gradebox
  bind 127.0.0.1:${port}
  default_backend nodes

backend nodes
  balance roundrobin
  option httpchk GET ${opts.checkPath ?? "/readyz"}
  http-check expect status 200
  default-server inter ${inter}ms fastinter ${inter}ms downinter ${inter}ms fall ${opts.fall ?? 2} rise ${opts.rise ?? 1}
${servers.join("\n")}

listen stats_g${generation}
  bind 127.0.0.1:${statsPort}
  stats enable
  stats uri /stats
  stats refresh 1s
`;
}

/** Parse haproxy's stats CSV ("# pxname,svname,…" header) into objects keyed by column name. */
export function parseStatsCsv(csv: string): Array<Record<string, string>> {
  const lines = csv.split("\n").filter((l) => l.trim() !== "");
  const header = lines.shift();
  if (!header?.startsWith("# ")) throw new Error(`not haproxy stats CSV: ${csv.slice(0, 200)}`);
  const columns = header.slice(2).split(",");
  return lines.map((line) => {
    const cells = line.split(",");
    return Object.fromEntries(columns.map((c, i) => [c, cells[i] ?? ""]));
  });
}

// haproxy processes still running when the test process exits are killed then.
const children = new Set<ChildProcess>();
let exitHook = false;

/** Start haproxy in front of `backends` (node1..nodeN) on a free loopback port. */
export async function startHaproxy(backends: Backend[], opts: HaproxyOptions = {}): Promise<Haproxy> {
  if (backends.length === 0) throw new Error("startHaproxy: no backends");
  const bin = haproxyBin();
  const dir = mkdtempSync(join(tmpdir(), "gradebox-haproxy-"));
  const cfg = join(dir, "haproxy.cfg");
  let output = "";
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let port = 0;
  let statsPort = 0;
  let generation = 1;

  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    statsPort = await freePort();
    writeFileSync(cfg, config(backends, port, statsPort, opts, generation));
    output = "";
    const c = spawn(bin, ["-W", "-db", "-f", cfg], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    child = c;
    children.add(c);
    c.stdout?.on("data", (d) => (output += d));
    c.stderr?.on("data", (d) => (output += d));
    let dead = false;
    exited = new Promise((resolve) => {
      c.once("exit", () => {
        dead = true;
        children.delete(c);
        resolve();
      });
      c.once("error", (err) => {
        output += `\n${err.message}`;
        dead = true;
        children.delete(c);
        resolve();
      });
    });
    const end = Date.now() + 10_000;
    while (!dead && Date.now() < end && !((await accepts(port)) && (await accepts(statsPort)))) await sleep(20);
    if (!dead && Date.now() < end) break;
    if (!dead) {
      c.kill("SIGKILL");
      await exited;
    }
    if (attempt < 3 && /cannot bind socket|Address already in use/i.test(output)) continue;
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`haproxy did not start (${dead ? `exit ${c.exitCode ?? c.signalCode}` : "timed out"}):\n${output}`);
  }
  if (!exitHook) {
    exitHook = true;
    process.once("exit", () => {
      for (const c of children) c.kill("SIGKILL");
    });
  }

  const statsUrl = `http://127.0.0.1:${statsPort}/stats`;
  const rawStats = async () => parseStatsCsv(await fetchText(`${statsUrl};csv`));
  const stats = async (): Promise<ServerStats[]> => {
    return (await rawStats())
      .filter((r) => r.pxname === "nodes" && r.svname !== "BACKEND" && r.svname !== "FRONTEND")
      .map((r) => ({
        name: r.svname,
        status: r.status,
        requests: Number(r.req_tot || r.stot || 0),
        checkStatus: r.check_status ?? "",
      }));
  };
  const waitForStatus = async (name: string, status: string, timeoutMs = 5_000) => {
    const end = Date.now() + timeoutMs;
    let last: ServerStats[] = [];
    for (;;) {
      last = await stats();
      if (last.find((s) => s.name === name)?.status === status) return;
      if (Date.now() > end) throw new Error(`haproxy: ${name} not ${status} after ${timeoutMs} ms: ${JSON.stringify(last)}`);
      await sleep(50);
    }
  };
  // Every node UP after a passing check (L7OK), not merely in its initial state.
  const waitAllUp = async (count: number, timeoutMs = 10_000) => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const rows = await stats();
      if (rows.length === count && rows.every((r) => r.status === "UP" && r.checkStatus === "L7OK")) return;
      if (Date.now() > end) throw new Error(`haproxy: not every node UP after ${timeoutMs} ms: ${JSON.stringify(rows)}`);
      await sleep(50);
    }
  };

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const c = child;
    if (c && c.exitCode === null && c.signalCode === null) {
      c.kill("SIGTERM");
      const timer = setTimeout(() => c.kill("SIGKILL"), 3_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    if (opts.waitUntilUp ?? true) await waitAllUp(backends.length);
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${output}`);
  }

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    statsUrl,
    dir,
    logs: () => output,
    stats,
    waitForStatus,
    async reload(next: Backend[]) {
      if (next.length === 0) throw new Error("reload: no backends");
      generation++;
      writeFileSync(cfg, config(next, port, statsPort, opts, generation));
      child?.kill("SIGUSR2");
      const want = `stats_g${generation}`;
      const end = Date.now() + 10_000;
      for (;;) {
        const rows = await rawStats().catch(() => []);
        if (rows.some((r) => r.pxname === want)) break;
        if (Date.now() > end) throw new Error(`haproxy reload did not take effect:\n${output}`);
        await sleep(50);
      }
      if (opts.waitUntilUp ?? true) await waitAllUp(next.length);
    },
    stop,
  };
}

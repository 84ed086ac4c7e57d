// The server process as an operator runs it: SIGKILL in the middle of writes loses nothing
// that was acknowledged and leaves nothing half-written; SIGTERM lets in-flight requests
// finish, stops the workers and closes the database cleanly; Ctrl-C (SIGINT to the process
// group) mid-batch stops quietly; a port in use is one line on stderr.

import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { freePort, repoRoot, spawnServer } from "./support/helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "gradebox-proc-"));
const dbPath = join(dir, "g.db");
after(() => rmSync(dir, { recursive: true, force: true }));

const start = () => spawnServer({ GRADEBOX_DB: dbPath, GRADEBOX_WORKERS: "1", GRADEBOX_LOG_LEVEL: "warn" });

const key = () => readFileSync(join(dir, "default.key"), "utf8").trim();
const api = (url: string, method: string, path: string, body?: unknown) =>
  fetch(`${url}/v1/projects/default/graders${path}`, {
    method,
    headers: { authorization: `Bearer ${key()}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });

const childrenOf = (pid: number): number[] => {
  try {
    return execFileSync("pgrep", ["-P", String(pid)])
      .toString()
      .trim()
      .split("\n")
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
};
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
async function waitUntil(cond: () => boolean, ms = 10_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

test("SIGKILL during concurrent registrations and deletions, three times: nothing acknowledged is lost, nothing is half-written", async () => {
  const acknowledged = new Set<string>();
  const deleted = new Set<string>();
  for (let round = 0; round < 3; round++) {
    const server = await start();
    const workers = childrenOf(server.child.pid as number);
    const ops: Promise<void>[] = [];
    // kill once this many creates of the round were acknowledged: mid-stream, whatever the machine's speed
    const killAfter = 4 + round * 4;
    let acked = 0;
    let reached: () => void = () => {};
    const enough = new Promise<void>((resolve) => {
      reached = resolve;
    });
    for (let i = 0; i < 24; i++) {
      const k = `r${round}-${i}`;
      ops.push(
        api(server.url, "POST", "", { key: k, source: `async (t) => ${i % 10} / 10` })
          .then((res) => {
            if (res.status !== 201) return;
            acknowledged.add(k);
            if (++acked === killAfter) reached();
          })
          .catch(() => {}),
      );
    }
    for (const k of [...acknowledged].slice(0, 6)) {
      ops.push(
        api(server.url, "DELETE", `/${k}`)
          .then((res) => {
            if (res.status === 204) deleted.add(k);
          })
          .catch(() => {}),
      );
    }
    await enough;
    server.child.kill("SIGKILL");
    await server.exited;
    await Promise.allSettled(ops);
    assert.ok(await waitUntil(() => workers.every((pid) => !alive(pid))), "orphaned sandbox workers exit with their server");

    const db = new Database(dbPath, { readonly: true });
    assert.equal(db.pragma("integrity_check", { simple: true }), "ok");
    assert.deepEqual(db.pragma("foreign_key_check"), []);
    const bad = db.prepare("SELECT key FROM graders WHERE kind = 'function' AND (compiled = '' OR length(source_sha256) != 64)").all();
    assert.deepEqual(bad, [], "no half-written grader");
    db.close();
  }

  const server = await start();
  try {
    assert.ok(acknowledged.size > 0, "some creates were acknowledged before the kills");
    for (const k of acknowledged) {
      const res = await api(server.url, "POST", `/${k}/grade`, { thread: { turns: [{ role: "assistant", content: "x" }] } });
      if (deleted.has(k)) {
        assert.equal(res.status, 404, `${k} was deleted with a 204`);
      } else {
        assert.equal(res.status, 200, `${k} was created with a 201 and must grade`);
        assert.equal(((await res.json()) as { score: number }).score, (Number(k.split("-")[1]) % 10) / 10);
      }
    }
    assert.ok(acknowledged.size < 3 * 24, "the kills landed while creates were still in flight");
    console.log(`# ${acknowledged.size} acknowledged creates and ${deleted.size} acknowledged deletes survived 3 SIGKILLs`);
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
  }
});

test("SIGTERM: the in-flight request finishes, the workers stop, the database closes cleanly", async () => {
  const server = await start();
  const created = await api(server.url, "POST", "", {
    key: "slow",
    source: "async (t) => { const end = Date.now() + Number(t.metadata.ms ?? 0); while (Date.now() < end) {} return 1 }",
  });
  assert.equal(created.status, 201);
  const workers = childrenOf(server.child.pid as number);
  assert.ok(workers.length >= 1);
  const inflight = api(server.url, "POST", "/slow/grade", { thread: { turns: [{ role: "user", content: "x" }], metadata: { ms: 600 } } });
  await new Promise((r) => setTimeout(r, 200));
  server.child.kill("SIGTERM");
  const res = await inflight;
  assert.equal(res.status, 200, "the in-flight grade completed");
  assert.equal(((await res.json()) as { score: number }).score, 1);
  assert.equal(await server.exited, 0, server.logs());
  assert.ok(await waitUntil(() => workers.every((pid) => !alive(pid))), "the workers stopped");
  assert.equal(existsSync(`${dbPath}-wal`), false, "the WAL was checkpointed and removed: a clean close");
  const db = new Database(dbPath, { readonly: true });
  assert.equal(db.pragma("integrity_check", { simple: true }), "ok");
  db.close();
});

test("Ctrl-C mid-batch: the workers' exits are expected, none is replaced or logged; a worker that dies otherwise is logged with one pid key", async () => {
  const server = await spawnServer({ GRADEBOX_DB: dbPath, GRADEBOX_WORKERS: "2", GRADEBOX_LOG_LEVEL: "warn" }, { detached: true });
  const pid = server.child.pid as number;
  try {
    const created = await api(server.url, "POST", "", {
      key: "spin",
      source:
        "async (t) => { if (t.metadata.boom) new Array(6e7).fill(0); const end = Date.now() + Number(t.metadata.ms ?? 0); while (Date.now() < end) {} return 1 }",
    });
    assert.equal(created.status, 201);
    // a grader that takes its worker down: the worker is replaced, and that is logged (warn)
    const boom = await api(server.url, "POST", "/spin/grade", {
      thread: { turns: [{ role: "user", content: "x" }], metadata: { boom: true } },
    });
    assert.equal(boom.status, 422);
    assert.ok(await waitUntil(() => server.logs().includes("replacing it")), server.logs());
    const line = server
      .logs()
      .split("\n")
      .find((l) => l.includes("replacing it")) as string;
    assert.equal(line.match(/"pid":/g)?.length, 1, `one pid key (the server's), the worker's is workerPid: ${line}`);
    assert.match(line, /"workerPid":\d+/);
    await waitUntil(() => childrenOf(pid).length >= 2);
    const workers = childrenOf(pid);
    const before = server.logs().split("replacing it").length;

    const threads = Array.from({ length: 12 }, () => ({ turns: [{ role: "user", content: "x" }], metadata: { ms: 150 } }));
    const batch = api(server.url, "POST", "/spin/grade-batch", { threads }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
    process.kill(-pid, "SIGINT"); // what a terminal does on Ctrl-C: the whole process group
    await batch;
    assert.equal(await server.exited, 0, server.logs());
    assert.equal(server.logs().split("replacing it").length, before, `no worker was replaced after Ctrl-C:\n${server.logs()}`);
    assert.ok(await waitUntil(() => workers.every((w) => !alive(w))), "the workers stopped");
    assert.deepEqual(childrenOf(pid), []);
  } finally {
    if (alive(pid)) process.kill(-pid, "SIGKILL");
  }
});

test("a port in use: one line on stderr that says what to do, exit status 1, no stack", async () => {
  const port = await freePort();
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(port, "127.0.0.1", resolve));
  try {
    const child = spawn(process.execPath, ["--no-node-snapshot", "--import", "tsx", "server/main.ts"], {
      cwd: repoRoot,
      env: { ...process.env, GRADEBOX_PORT: String(port), GRADEBOX_HOST: "127.0.0.1", GRADEBOX_DB: dbPath, GRADEBOX_WORKERS: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise((resolve) => child.once("exit", resolve));
    assert.equal(code, 1);
    assert.equal(stderr, `port ${port} is in use: stop the other server or set GRADEBOX_PORT\n`);
    assert.doesNotMatch(stdout, /EADDRINUSE|\n\s+at /);
  } finally {
    taken.close();
  }
});

// gradebox grade --threads with issue 25's batch options against the real server: --group-by
// (requests cut only between groups, the summary's group statistics), --deadline-ms and
// --on-unavailable sent with each request, abstentions printed per line and failing the run only
// under --fail-on-abstain. A recording proxy between the command and the server shows what each
// request carried; the server answers every one.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Gradebox } from "../sdk/index.ts";
import { PACKED_BATCH_TYPE, unpackBody } from "../sdk/packed-batch.ts";
import { repoRoot, startServer, type TestServer } from "./support/helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "gradebox-cli-batch-"));
let s: TestServer;
let proxy: Server;
let env: NodeJS.ProcessEnv;
/** the grading requests' bodies, as the proxy forwarded them */
let sent: Array<{ path: string; threads?: Array<{ metadata?: Record<string, unknown> }>; [field: string]: unknown }> = [];

before(async () => {
  // 4 threads a request at most: a group of 5 cannot be graded whole
  s = await startServer({ listen: true, env: { GRADEBOX_MAX_BATCH: "4" } });
  const apiKey = await s.keyFor("batch");
  const client = new Gradebox({ baseURL: s.url, project: "batch", apiKey });
  await client.graders.create.function({ key: "idx", source: "async (t) => Number(t.metadata.i ?? 0)" });
  await client.graders.create.function({ key: "maybe", source: "async (t) => (t.metadata.skip ? null : 1)" });
  proxy = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const path = req.url ?? "/";
    const packed = req.headers["content-type"] === PACKED_BATCH_TYPE;
    if (/\/grade(-batch)?$/.test(path)) sent.push({ path, ...(packed ? unpackBody(body.toString()) : JSON.parse(body.toString())) });
    const headers: Record<string, string> = {};
    for (const name of ["authorization", "content-type", "accept"]) if (req.headers[name]) headers[name] = String(req.headers[name]);
    const upstream = await fetch(s.url + path, { method: req.method, headers, body: body.length > 0 ? body : undefined });
    res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/json" });
    res.end(Buffer.from(await upstream.arrayBuffer()));
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  env = { ...process.env, GRADEBOX_URL: url, GRADEBOX_API_KEY: apiKey, GRADEBOX_PROJECT: "batch" };
});
after(async () => {
  proxy?.close();
  await s?.close();
  rmSync(dir, { recursive: true, force: true });
});

function gradebox(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(repoRoot, "bin/gradebox.js"), ...args], { cwd: dir, env }, (error, stdout, stderr) =>
      resolve({ stdout, stderr, code: error ? (typeof error.code === "number" ? error.code : 1) : 0 }),
    );
  });
}

const file = (name: string, metadatas: Array<Record<string, unknown>>) => {
  const path = join(dir, name);
  writeFileSync(
    path,
    metadatas.map((metadata) => `${JSON.stringify({ turns: [{ role: "assistant", content: "x" }], metadata })}\n`).join(""),
  );
  return path;
};
const jsonl = (text: string) =>
  text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));

test("--group-by: requests are cut only between groups, the summary has the group statistics; a group's lines apart exit 2", async () => {
  // groups a (scores 0, 1, 2), b (3, 4), c (5), and a line without the field (6): a group of its own
  const input = file("groups.jsonl", [
    { i: 0, p: "a" },
    { i: 1, p: "a" },
    { i: 2, p: "a" },
    { i: 3, p: "b" },
    { i: 4, p: "b" },
    { i: 5, p: "c" },
    { i: 6 },
  ]);
  sent = [];
  const run = await gradebox("grade", "idx", "--threads", input, "--group-by", "p", "--batch", "2", "--json");
  assert.equal(run.code, 0, run.stderr);
  // --batch 2, but a chunk is sent only where a group ends: a's three lines together
  assert.deepEqual(
    sent.map((r) => r.threads?.map((t) => t.metadata?.p ?? "-")),
    [
      ["a", "a", "a"],
      ["b", "b"],
      ["c", "-"],
    ],
  );
  assert.ok(
    sent.every((r) => r.groupBy === "p"),
    "every request names the group field",
  );
  assert.deepEqual(
    jsonl(run.stdout).map((r) => r.score),
    [0, 1, 2, 3, 4, 5, 6],
  );
  // best per group: 2, 4, 5, 6 (mean 4.25); means: 1, 3.5, 5, 6 (mean 3.875)
  assert.deepEqual(JSON.parse(run.stderr).summary.groups, { groups: 4, k: 3, meanOfBest: 4.25, meanOfMeans: 3.875 });
  const human = await gradebox("grade", "idx", "--threads", input, "--group-by", "p");
  assert.match(human.stderr, /groups 4 \(largest 3\): mean of best 4\.25, mean of means 3\.875/);

  const apart = file("apart.jsonl", [{ p: "a" }, { p: "b" }, { p: "a" }]);
  sent = [];
  const refused = await gradebox("grade", "idx", "--threads", apart, "--group-by", "p");
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /--group-by p: line 3 is in the group p="a" that began at line 1 .*sort the file by p/);
  assert.equal(sent.length, 0, "refused before anything was sent");

  // a group larger than the server grades in one request is never cut: the run fails, saying so
  const big = await gradebox("grade", "idx", "--threads", file("big.jsonl", Array(5).fill({ p: "big" })), "--group-by", "p");
  assert.equal(big.code, 1);
  assert.match(big.stderr, /the group of p "big" holds 5 threads, more than the server grades in one request \(maxBatchThreads 4\)/);
});

test("--deadline-ms and --on-unavailable go with each request; bad values and --thread misuse are argument errors", async () => {
  const input = file("plain.jsonl", [{ i: 1 }, { i: 2 }, { i: 3 }]);
  sent = [];
  const run = await gradebox("grade", "idx", "--threads", input, "--deadline-ms", "60000", "--on-unavailable", "abstain", "--batch", "2");
  assert.equal(run.code, 0, run.stderr);
  assert.equal(sent.length, 2);
  for (const body of sent) {
    assert.equal(body.onUnavailable, "abstain");
    assert.ok(typeof body.deadlineMs === "number" && body.deadlineMs >= 1 && body.deadlineMs <= 60_000, `deadlineMs ${body.deadlineMs}`);
  }
  sent = [];
  const one = await gradebox(
    "grade",
    "idx",
    "--thread",
    '{"turns":[{"role":"assistant","content":"x"}],"metadata":{"i":7}}',
    "--on-unavailable",
    "abstain",
  );
  assert.deepEqual([one.code, one.stdout.trim(), sent[0]?.onUnavailable], [0, "7", "abstain"]);

  for (const [args, message] of [
    [["--threads", input, "--deadline-ms", "0"], /--deadline-ms.*whole number from 1/],
    [["--threads", input, "--deadline-ms", "600001"], /--deadline-ms.*from 1 to 600000/],
    [["--threads", input, "--on-unavailable", "maybe"], /--on-unavailable.*maybe.*Allowed choices are error, abstain/],
    [["--thread", "{}", "--deadline-ms", "5"], /--deadline-ms is for --threads/],
    [["--thread", "{}", "--group-by", "p"], /--group-by is for --threads/],
  ] as const) {
    const refused = await gradebox("grade", "idx", ...args);
    assert.equal(refused.code, 2, `${args.join(" ")}: ${refused.stderr}`);
    assert.match(refused.stderr, message);
  }
});

test("abstentions: a line each (not an error), in the summary by code; the run fails only with --fail-on-abstain; grade --thread exits 1", async (t) => {
  const skip = '{"turns":[{"role":"assistant","content":"x"}],"metadata":{"skip":true}}';
  const one = await gradebox("grade", "maybe", "--thread", skip);
  if (/INVALID_SCORE/.test(one.stderr)) {
    return t.skip("this server's sandbox does not abstain yet (null is INVALID_SCORE): it comes with the sandbox's abstentions");
  }
  assert.equal(one.code, 1);
  assert.match(one.stderr, /^✗ abstained GRADER_ABSTAINED: .+\(no score for this thread\)\n$/);

  const input = file("maybe.jsonl", [{}, { skip: true }, {}]);
  const run = await gradebox("grade", "maybe", "--threads", input);
  assert.equal(run.code, 0, "an abstention alone does not fail the run");
  const results = jsonl(run.stdout);
  assert.deepEqual(
    results.map((r) => r.outcome),
    ["scored", "abstained", "scored"],
  );
  assert.equal(results[1].abstained.code, "GRADER_ABSTAINED");
  assert.match(run.stderr, /graded 3: 2 scored, 0 errors, 1 abstained\n[\s\S]*abstained: GRADER_ABSTAINED 1/);
  assert.equal((await gradebox("grade", "maybe", "--threads", input, "--fail-on-abstain")).code, 1);

  writeFileSync(join(dir, "maybe.ts"), "async function grade(t) {\n  return t.metadata.skip ? null : 1;\n}\n");
  const tested = await gradebox("test", "maybe.ts", "--threads", input);
  assert.match(tested.stdout, /^ {2}line 2: abstained GRADER_ABSTAINED: /m);
});

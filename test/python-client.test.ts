// The Python client (clients/python) against the real server on a real port: installed offline
// into a fresh venv outside the repository, then its pytest suite run with GRADEBOX_URL,
// GRADEBOX_API_KEY and GRADEBOX_PROJECT pointing at the server (started with
// GRADEBOX_MAX_BATCH=5, so grade_batch and reward functions must split their lists, and allowed to
// reach 127.0.0.1, where a model of the secrets tests points).
// The interpreter and the venv: test/support/python.ts.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { ABSTAIN_CODES, GRADE_ERROR_CODES } from "../sdk/errors.ts";
import { ERRORS } from "../server/errors.ts";
import { repoRoot, startServer, type TestServer, testPostgres } from "./support/helpers.ts";
import { installPythonClient } from "./support/python.ts";

const run = promisify(execFile);
const project = "pyclient";
const MAX_BATCH = 5;
/** every test function in clients/python/tests, so that pytest collecting fewer (a file skipped, an import failing quietly) fails here */
const pythonTests = join(repoRoot, "clients/python/tests");
const EXPECTED_TESTS = readdirSync(pythonTests)
  .filter((f) => /^test_.*\.py$/.test(f))
  .reduce((n, f) => n + (readFileSync(join(pythonTests, f), "utf8").match(/^def test_/gm)?.length ?? 0), 0);

let s: TestServer;
let work: string;

before(async () => {
  s = await startServer({
    listen: true,
    env: {
      GRADEBOX_MAX_BATCH: String(MAX_BATCH),
      GRADEBOX_EGRESS_ALLOW: "127.0.0.1/32",
      ...(testPostgres ? { GRADEBOX_SECRETS_KEY: "ef".repeat(32) } : {}),
    },
  });
  work = mkdtempSync(join(tmpdir(), "gradebox-pyclient-"));
});
after(async () => {
  await s?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

test("the Python client's pytest suite passes against the real server", { timeout: 120_000 }, async () => {
  const venvPython = await installPythonClient(work);

  // the client's copy of the grading error codes, of the ones answered with 502, and of the abstention codes, is the server's
  const copied = await run(venvPython, [
    "-c",
    "import json, gradebox.errors as e; print(json.dumps({'codes': sorted(e.GRADE_ERROR_CODES), 'status': e.GRADE_ERROR_STATUS, 'abstain': sorted(e.ABSTAIN_CODES)}))",
  ]);
  const { codes, status, abstain } = JSON.parse(copied.stdout) as { codes: string[]; status: Record<string, number>; abstain: string[] };
  assert.deepEqual(codes, [...GRADE_ERROR_CODES].sort());
  assert.deepEqual(abstain, [...ABSTAIN_CODES].sort());
  assert.deepEqual(status, Object.fromEntries(GRADE_ERROR_CODES.filter((c) => ERRORS[c].status !== 422).map((c) => [c, ERRORS[c].status])));

  // the installed package must be the one imported: nothing may put the source tree on the path
  const { PYTHONPATH: _, ...withoutPythonPath } = process.env;
  const result = await run(venvPython, ["-m", "pytest", pythonTests, "-q", "-p", "no:cacheprovider"], {
    cwd: work,
    timeout: 90_000,
    env: {
      ...withoutPythonPath,
      GRADEBOX_URL: s.url,
      GRADEBOX_API_KEY: await s.keyFor(project),
      GRADEBOX_PROJECT: project,
      GRADEBOX_TEST_MAX_BATCH: String(MAX_BATCH),
      PYTHONDONTWRITEBYTECODE: "1",
    },
  }).catch((e: { code?: number; stdout?: string; stderr?: string }) => {
    assert.fail(`pytest exited with ${e.code}:\n${e.stdout}\n${e.stderr}`);
  });
  // the closing line of -q: "27 passed in 3.21s" (", 1 warning" may follow the count)
  const summary = result.stdout.trim().split("\n").at(-1) ?? "";
  const passed = /^(\d+) passed(, \d+ warnings?)? in [\d.]+s$/.exec(summary);
  assert.ok(passed, `pytest said:\n${result.stdout}`);
  assert.equal(Number(passed[1]), EXPECTED_TESTS, `pytest said:\n${result.stdout}`);
});

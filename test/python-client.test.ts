// The Python client (clients/python) against the real server on a real port: installed offline
// into a fresh venv outside the repository, then its pytest suite run with GRADEBOX_URL,
// GRADEBOX_API_KEY and GRADEBOX_PROJECT pointing at the server (started with
// GRADEBOX_MAX_BATCH=5, so grade_batch and reward functions must split their lists, and allowed to
// reach 127.0.0.1, where a model of the secrets tests points).
// The interpreter: $GRADEBOX_PYTHON, python3 or /usr/bin/python3, the first with pytest, venv
// and setuptools (scripts/ensure-pytest.sh installs Debian's when none has them).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { GRADE_ERROR_CODES } from "../sdk/errors.ts";
import { ERRORS } from "../server/errors.ts";
import { repoRoot, startServer, type TestServer, testPostgres } from "./support/helpers.ts";

const run = promisify(execFile);
const project = "pyclient";
const MAX_BATCH = 5;
/** every test function in clients/python/tests, so that pytest collecting fewer (a file skipped, an import failing quietly) fails here */
const pythonTests = join(repoRoot, "clients/python/tests");
const EXPECTED_TESTS = readdirSync(pythonTests)
  .filter((f) => /^test_.*\.py$/.test(f))
  .reduce((n, f) => n + (readFileSync(join(pythonTests, f), "utf8").match(/^def test_/gm)?.length ?? 0), 0);
const PROBE =
  'import pytest, venv, ensurepip, setuptools; (tuple(map(int, setuptools.__version__.split(".")[:2])) >= (70, 1)) or __import__("wheel")';

async function findPython(): Promise<string> {
  const candidates = [process.env.GRADEBOX_PYTHON, "python3", "/usr/bin/python3"].filter((p): p is string => Boolean(p));
  for (const python of candidates) {
    try {
      await run(python, ["-c", PROBE], { timeout: 20_000 });
      return python;
    } catch {}
  }
  throw new Error(`no python with pytest, venv and setuptools among ${candidates.join(", ")}: run scripts/ensure-pytest.sh`);
}

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
  const python = await findPython();
  // a copy of the package, so pip's in-tree build leaves nothing in the repository
  const pkg = join(work, "pkg");
  for (const name of ["pyproject.toml", "README.md", "src"]) {
    cpSync(join(repoRoot, "clients/python", name), join(pkg, name), {
      recursive: true,
      filter: (src) => !/(__pycache__|\.egg-info|[\\/]build)$/.test(src),
    });
  }
  const venv = join(work, "venv");
  await run(python, ["-m", "venv", "--system-site-packages", venv], { timeout: 60_000 });
  const venvPython = join(venv, "bin", "python");
  // offline: no index, and the build uses the interpreter's own setuptools
  await run(
    venvPython,
    ["-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps", "--disable-pip-version-check", "--quiet", pkg],
    { timeout: 60_000, env: { ...process.env, PIP_NO_INPUT: "1" } },
  );

  // the client's copy of the grading error codes, and of the ones answered with 502, is the server's
  const copied = await run(venvPython, [
    "-c",
    "import json, gradebox.errors as e; print(json.dumps({'codes': sorted(e.GRADE_ERROR_CODES), 'status': e.GRADE_ERROR_STATUS}))",
  ]);
  const { codes, status } = JSON.parse(copied.stdout) as { codes: string[]; status: Record<string, number> };
  assert.deepEqual(codes, [...GRADE_ERROR_CODES].sort());
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

// The Python library the sandbox's interpreter loads (sandbox/python/lib: gradebox._sandbox,
// StringThread, gradebox.graders, adaptive_harmony), tested natively: its unittest suite run by
// the first Python 3.11+ found ($GRADEBOX_PYTHON, python3, /usr/bin/python3), with the library
// on PYTHONPATH. Skipped, saying why, when there is none.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { repoRoot } from "./support/helpers.ts";

const run = promisify(execFile);
const lib = join(repoRoot, "sandbox/python/lib");
/** every test method in the suite's files, so that unittest collecting fewer (an import failing quietly) fails here */
const EXPECTED = readdirSync(join(lib, "tests"))
  .filter((f) => /^test_.*\.py$/.test(f))
  .reduce((n, f) => n + (readFileSync(join(lib, "tests", f), "utf8").match(/^ {4}def test_/gm)?.length ?? 0), 0);

async function findPython(): Promise<{ python?: string; why: string }> {
  const candidates = [process.env.GRADEBOX_PYTHON, "python3", "/usr/bin/python3"].filter((p): p is string => Boolean(p));
  const seen: string[] = [];
  for (const python of candidates) {
    try {
      const { stdout } = await run(python, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], { timeout: 20_000 });
      const [major, minor] = stdout.trim().split(".").map(Number);
      if (major === 3 && minor >= 11) return { python, why: "" };
      seen.push(`${python} is ${stdout.trim()}`);
    } catch {
      seen.push(`${python} did not run`);
    }
  }
  return { why: `no Python 3.11 or later (${seen.join("; ")})` };
}

test("the sandbox's Python library passes its unittest suite", { timeout: 120_000 }, async (t) => {
  const { python, why } = await findPython();
  if (!python) {
    t.skip(why);
    return;
  }
  assert.ok(EXPECTED >= 60, `the suite has ${EXPECTED} tests`);
  const result = await run(python, ["-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v"], {
    cwd: lib,
    timeout: 110_000,
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, PYTHONPATH: lib, PYTHONDONTWRITEBYTECODE: "1", PYTHONWARNINGS: "" },
  }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
    assert.fail(`unittest failed:\n${error.stderr ?? ""}${error.stdout ?? ""}\n${error.message}`);
  });
  const ran = /^Ran (\d+) tests? in /m.exec(result.stderr);
  assert.ok(ran, result.stderr);
  assert.equal(Number(ran[1]), EXPECTED, "every test method of the suite ran");
  assert.match(result.stderr, /^OK$/m);
});

// The Python client ships StringThread and gradebox.graders so that a grader runs in a user's script
// as in the sandbox: its files are copies of the sandbox's, byte for byte (edit the sandbox's, then cp).
test("the Python client's thread.py and graders.py are the sandbox's, byte for byte", () => {
  for (const name of ["thread.py", "graders.py"]) {
    const sandbox = readFileSync(join(lib, "gradebox", name));
    const client = readFileSync(join(repoRoot, "clients/python/src/gradebox", name));
    assert.ok(
      sandbox.equals(client),
      `clients/python/src/gradebox/${name} differs from sandbox/python/lib/gradebox/${name}: cp the sandbox's over it`,
    );
  }
});

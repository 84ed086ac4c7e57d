// The Python client installed offline into a fresh venv outside the repository (for
// test/python-client.test.ts and test/python-graders.test.ts). The interpreter: $GRADEBOX_PYTHON,
// python3 or /usr/bin/python3, the first with pytest, venv and setuptools (scripts/ensure-pytest.sh
// installs Debian's when none has them).

import { execFile } from "node:child_process";
import { cpSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { repoRoot } from "./helpers.ts";

const run = promisify(execFile);
const PROBE =
  'import pytest, venv, ensurepip, setuptools; (tuple(map(int, setuptools.__version__.split(".")[:2])) >= (70, 1)) or __import__("wheel")';

export async function findPython(): Promise<string> {
  const candidates = [process.env.GRADEBOX_PYTHON, "python3", "/usr/bin/python3"].filter((p): p is string => Boolean(p));
  for (const python of candidates) {
    try {
      await run(python, ["-c", PROBE], { timeout: 20_000 });
      return python;
    } catch {}
  }
  throw new Error(`no python with pytest, venv and setuptools among ${candidates.join(", ")}: run scripts/ensure-pytest.sh`);
}

/** A venv in `work` with the client installed (from a copy, so pip's in-tree build leaves nothing in the repository); its python. */
export async function installPythonClient(work: string): Promise<string> {
  const python = await findPython();
  const pkg = join(work, "pkg");
  for (const name of ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "src"]) {
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
  return venvPython;
}

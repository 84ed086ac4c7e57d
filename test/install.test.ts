// `make install` leaves package-lock.json as committed: run against a copy of the checkout's
// package.json, lock file and Makefile (Node from the checkout's .node), with a lock that npm
// would bring up to date (its root version behind package.json's, as another npm or an older
// checkout leaves it), the lock must come out byte-identical, and npm must not warn about a config
// the Makefile sets. It installs the dependencies from the registry (or npm's cache) into a
// temporary directory: a slow suite.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { repoRoot } from "./support/helpers.ts";

test("make install never rewrites package-lock.json and sets no npm config npm warns about", { timeout: 300_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "gradebox-install-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const f of ["package.json", "Makefile"]) copyFileSync(join(repoRoot, f), join(dir, f));
  mkdirSync(join(dir, "scripts"));
  copyFileSync(join(repoRoot, "scripts/ensure-node.sh"), join(dir, "scripts/ensure-node.sh"));
  symlinkSync(join(repoRoot, ".node"), join(dir, ".node"));
  const committed = readFileSync(join(repoRoot, "package-lock.json"), "utf8");
  const version = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).version;
  const stale = committed.replace(`"version": "${version}"`, `"version": "0.0.0-stale"`);
  assert.notEqual(stale, committed);
  writeFileSync(join(dir, "package-lock.json"), stale);

  const { stdout, stderr } = await promisify(execFile)("make", ["install"], {
    cwd: dir,
    timeout: 280_000,
    maxBuffer: 16 * 1024 * 1024,
    // make's own PATH puts .node/bin first; the machine's npm (its ~/.npmrc too) is used as a developer's would be
    env: { ...process.env, MAKEFLAGS: "" },
  });
  assert.equal(readFileSync(join(dir, "package-lock.json"), "utf8"), stale, "the lock file is byte-identical");
  assert.doesNotMatch(`${stdout}${stderr}`, /Unknown env config/, "npm warns of no config the Makefile set");
  assert.match(readFileSync(join(dir, "node_modules/tsx/package.json"), "utf8"), /"name": "tsx"/, "the dependencies were installed");
});

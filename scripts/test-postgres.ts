// `make test-postgres`: the test suite again, with every server the tests start on a database of
// its own in a throwaway PostgreSQL cluster (GRADEBOX_TEST_PG; see test/support/helpers.ts) instead of a
// SQLite file. Arguments: test files (default: all of test/*.test.ts).

import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { startPostgres } from "../test/support/pg.ts";

const files =
  process.argv.length > 2
    ? process.argv.slice(2)
    : readdirSync("test")
        .filter((f) => f.endsWith(".test.ts"))
        .sort()
        .map((f) => `test/${f}`);
const pg = await startPostgres({ maxConnections: 500 });
let code: number | null = 1;
try {
  const child = spawn(process.execPath, ["--no-node-snapshot", "--import", "tsx", "--test", "--test-concurrency=1", ...files], {
    stdio: "inherit",
    env: { ...process.env, GRADEBOX_TEST_PG: pg.url },
  });
  code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
} finally {
  await pg.stop();
}
process.exit(code ?? 1);

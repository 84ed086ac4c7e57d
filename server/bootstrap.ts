// First start on a fresh database: project "default" with one API key, printed once and
// written next to the database (mode 0600) so the README quickstart works without a step.

import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Store } from "./store.ts";

export function defaultKeyPath(dbPath: string): string {
  return join(dirname(dbPath), "default.key");
}

export function bootstrapDefaultKey(store: Store, dbPath: string): void {
  if (!store.keys.empty || dbPath === ":memory:") return;
  const { key } = store.keys.create("default", "created at first start");
  const path = defaultKeyPath(dbPath);
  writeFileSync(path, `${key}\n`, { mode: 0o600 });
  process.stdout.write(
    `\nCreated project "default" and its API key (shown once, also saved to ${path}):\n\n  ${key}\n\n` +
      `  export GRADEBOX_API_KEY=$(cat ${path})\n\n`,
  );
}

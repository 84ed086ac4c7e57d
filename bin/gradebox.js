#!/usr/bin/env node
// The `gradebox` command (package bin). In a checkout the CLI is TypeScript, run through tsx's
// loader; where only the compiled tree is (the image), its JavaScript runs.
// The native modules are built for the project's Node (`make` installs it into .node/): under
// any other Node, the command runs itself again with that one.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const PROJECT_NODE_MAJOR = "24";
const projectNode = fileURLToPath(new URL("../.node/bin/node", import.meta.url));
if (process.versions.node.split(".")[0] !== PROJECT_NODE_MAJOR) {
  if (!existsSync(projectNode)) {
    console.error(
      `gradebox needs Node ${PROJECT_NODE_MAJOR} (this is ${process.version}): run \`make install\` in the gradebox checkout first`,
    );
    process.exit(2);
  }
  const run = spawnSync(projectNode, ["--no-node-snapshot", fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
  });
  process.exit(run.status ?? 1);
}
if (existsSync(new URL("../cli/main.ts", import.meta.url))) {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../cli/main.ts");
} else {
  // the image holds only the compiled tree (`make build`): the same command, without tsx
  await import("../dist/app/cli/main.js");
}

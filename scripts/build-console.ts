// Builds the web console (console/app.ts bundled by esbuild, its page and style sheets) into
// dist/console/, which the server serves. The server also rebuilds it at start when it is
// missing or stale, so this is for builds that ship (an image, `make build`).

import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { buildConsole, CONSOLE_DIST } from "../server/console.ts";

const files = buildConsole(CONSOLE_DIST);
const size = Object.values(files).reduce((n, text) => n + Buffer.byteLength(text), 0);
console.log(
  `built the console into ${relative(process.cwd(), fileURLToPath(CONSOLE_DIST))}/ (${Object.keys(files).join(", ")}: ${size} bytes)`,
);

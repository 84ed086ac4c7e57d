// The web console at /: a static page and one script, bundled by esbuild when the server starts.

import { readFileSync } from "node:fs";
import * as esbuild from "esbuild";
import type { FastifyInstance } from "fastify";

const dir = new URL("../console/", import.meta.url);

export function registerConsole(app: FastifyInstance): void {
  const script = esbuild.buildSync({
    entryPoints: [new URL("app.ts", dir).pathname],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    external: ["node:*"], // the SDK reads files only when asked to, which the console never does
    logLevel: "silent",
  }).outputFiles[0].text;
  const files: Record<string, [string, string]> = {
    "/": [readFileSync(new URL("index.html", dir), "utf8"), "text/html; charset=utf-8"],
    "/console/app.js": [script, "text/javascript; charset=utf-8"],
    "/console/style.css": [readFileSync(new URL("style.css", dir), "utf8"), "text/css; charset=utf-8"],
    "/console/hljs.css": [
      readFileSync(new URL("../node_modules/highlight.js/styles/github.css", import.meta.url), "utf8"),
      "text/css; charset=utf-8",
    ],
  };
  for (const [path, [body, type]] of Object.entries(files)) {
    app.get(path, { schema: { hide: true } }, async (_req, reply) => reply.type(type).header("cache-control", "no-cache").send(body));
  }
}

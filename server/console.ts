// The web console at /: its page, style sheets and script, built ahead of time into CONSOLE_DIST
// (buildConsole: scripts/build-console.ts; scripts/build.ts for the compiled tree) and served
// from memory. Run from a checkout (make run, the tests), the server first rebuilds it when it is
// missing or older than a file it was built from, so nobody runs a step by hand after an edit; a
// fresh bundle is only read (a rebuild took 0.2–0.6 s of every start). Never anything per request.

import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import type { FastifyInstance } from "fastify";

/**
 * Compiled by `make build` (scripts/build.ts), this file is JavaScript and the console was built
 * into the compiled tree's console/, beside server/; nothing there is ever rebuilt.
 */
const COMPILED = import.meta.url.endsWith(".js");
/** Where the built console goes (gitignored, with the rest of dist/). */
export const CONSOLE_DIST = COMPILED ? new URL("../console/", import.meta.url) : new URL("../dist/console/", import.meta.url);

const sources = new URL("../console/", import.meta.url);
const root = new URL("../", sources);
/** What the built console is made of, by path under the checkout, besides the modules the bundle imports. */
const assets = {
  "index.html": "console/index.html",
  "style.css": "console/style.css",
  "hljs.css": "node_modules/highlight.js/styles/github.css",
} as const;
/** The checkout's files the build read (the builder included), written last: the bundle's date. */
const INPUTS = "inputs.json";

/** The URL each built file is served at, and its type. */
const served: Record<string, [string, string]> = {
  "index.html": ["/", "text/html; charset=utf-8"],
  "app.js": ["/console/app.js", "text/javascript; charset=utf-8"],
  "style.css": ["/console/style.css", "text/css; charset=utf-8"],
  "hljs.css": ["/console/hljs.css", "text/css; charset=utf-8"],
};

/** The built files by name: index.html, app.js, style.css, hljs.css. */
type Built = Record<string, string>;

/** Bundles console/app.ts with esbuild and writes the console into `out` (each file replaced whole). */
export function buildConsole(out: URL = CONSOLE_DIST): Built {
  const built = bundle();
  save(out, built.files, built.inputs);
  return built.files;
}

function bundle(): { files: Built; inputs: string[] } {
  const result = esbuild.buildSync({
    entryPoints: [fileURLToPath(new URL("app.ts", sources))],
    absWorkingDir: fileURLToPath(root),
    bundle: true,
    write: false,
    metafile: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    external: ["node:*"], // the SDK reads files only when asked to, which the console never does
    logLevel: "silent",
  });
  const files: Built = { "app.js": result.outputFiles[0].text };
  for (const [name, path] of Object.entries(assets)) files[name] = readFileSync(new URL(path, root), "utf8");
  const builder = relative(fileURLToPath(root), fileURLToPath(import.meta.url));
  return { files, inputs: [...Object.keys(result.metafile.inputs), ...Object.values(assets), builder] };
}

function save(out: URL, files: Built, inputs: string[]): void {
  mkdirSync(out, { recursive: true });
  // a server starting at the same time reads either the old file or the new one, never half of one
  const write = (name: string, text: string) => {
    const temp = new URL(`${name}.${process.pid}.tmp`, out);
    writeFileSync(temp, text);
    renameSync(temp, new URL(name, out));
  };
  for (const [name, text] of Object.entries(files)) write(name, text);
  write(INPUTS, `${JSON.stringify(inputs, null, 1)}\n`);
}

/** Whether `out` holds every file and none of the files it was built from changed since (a missing one counts as changed). */
export function consoleIsFresh(out: URL = CONSOLE_DIST): boolean {
  try {
    const builtAt = statSync(new URL(INPUTS, out)).mtimeMs;
    if (!Object.keys(served).every((name) => existsSync(new URL(name, out)))) return false;
    const inputs = JSON.parse(readFileSync(new URL(INPUTS, out), "utf8")) as string[];
    return inputs.every((path) => (statSync(new URL(path, root), { throwIfNoEntry: false })?.mtimeMs ?? Infinity) <= builtAt);
  } catch {
    return false;
  }
}

/** The console in `out`, rebuilt first when stale and the sources are here (a checkout, not a compiled install). */
function load(app: FastifyInstance, out: URL): Built {
  if (!COMPILED && !consoleIsFresh(out) && existsSync(new URL("app.ts", sources))) {
    const built = bundle();
    try {
      save(out, built.files, built.inputs);
    } catch (error) {
      // a read-only install still serves what it built; it builds again next start
      app.log.warn(`cannot save the console in ${fileURLToPath(out)}: ${(error as Error).message}`);
    }
    return built.files;
  }
  const files: Built = {};
  for (const name of Object.keys(served)) {
    const file = new URL(name, out);
    if (!existsSync(file)) {
      throw new Error(
        `the console is not built: ${fileURLToPath(file)} is missing (run ${COMPILED ? "make build" : "scripts/build-console.ts"})`,
      );
    }
    files[name] = readFileSync(file, "utf8");
  }
  return files;
}

/** Built or read once per process: the tests build many apps. */
const loaded = new Map<string, Built>();

export function registerConsole(app: FastifyInstance, out: URL = CONSOLE_DIST): void {
  let files = loaded.get(out.href);
  if (!files) {
    files = load(app, out);
    loaded.set(out.href, files);
  }
  for (const [name, [path, type]] of Object.entries(served)) {
    const body = files[name];
    app.get(path, { schema: { hide: true } }, async (_req, reply) => reply.type(type).header("cache-control", "no-cache").send(body));
  }
}

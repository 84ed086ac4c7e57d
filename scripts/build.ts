// `make build`: the server as production runs it, JavaScript for plain `node`, in dist/app/
// (or the directory given). The tree mirrors the checkout's rooms, each in its built form:
//   server/ sandbox/ cli/ sdk/   one .js per .ts, `.ts` imports rewritten to `.js` (esbuild,
//                                file by file: 0.3 s where tsc's emit took 5 s; `make check`
//                                type-checks)
//   sandbox/isolate/prelude.js   the isolate's prelude, bundled (what a worker run from the
//                                sources bundles as it starts)
//   sandbox/python/isolate/      a Python isolate's scripts (env, boot with Pyodide's loader and
//                                glue, shim), bundled; sandbox/python/lib/ (the in-sandbox
//                                library) copied
//   sdk/graders.ts               kept as source: esbuild bundles it into graders that import
//                                gradebox/graders, so a grader compiles to the same script as
//                                under `make run`
//   console/                     the web console, built (what dist/console/ is for `make run`)
//   migrations/                  copied; the server reads them at start
//   package.json                 {"type": "module"}, so the tree runs wherever it is put
// Run with node: node --no-node-snapshot dist/app/server/main.js (package.json's start; the image).

import { cpSync, globSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import * as esbuild from "esbuild";
import { bundlePython } from "../sandbox/python/bundle.ts";
import { bundlePrelude } from "../sandbox/validate/compile.ts";
import { buildConsole } from "../server/console.ts";

const root = resolve(import.meta.dirname, "..");
const out = resolve(process.argv[2] ?? join(root, "dist/app"));
const ROOMS = ["server", "sandbox", "cli", "sdk"];
/** Bundled whole rather than compiled file by file. */
const PRELUDE = "sandbox/isolate/prelude.ts";
/** A Python isolate's scripts (sandbox/python/bundle.ts), bundled whole too. */
const PYTHON_ISOLATE = "sandbox/python/isolate/";

const started = performance.now();
rmSync(out, { recursive: true, force: true });

// Each module stays a module: every import is left as it is (external), relative ones pointing at
// the .js their .ts becomes. A bundle per entry with everything external is esbuild's way to
// rewrite specifiers, which its plain transform does not do.
const entryPoints = ROOMS.flatMap((room) => globSync(`${room}/**/*.ts`, { cwd: root })).filter(
  (file) => file !== PRELUDE && !file.startsWith(PYTHON_ISOLATE) && !file.endsWith(".test.ts") && !file.endsWith(".d.ts"),
);
const compiled = await esbuild.build({
  absWorkingDir: root,
  entryPoints,
  outdir: out,
  outbase: ".",
  bundle: true,
  format: "esm",
  platform: "node",
  // the sources' own target (tsconfig.json); esbuild's node24 table lowers regexes with \p{…}
  target: "es2022",
  tsconfig: join(root, "tsconfig.json"),
  logLevel: "warning",
  plugins: [
    {
      name: "keep-imports",
      setup(build) {
        build.onResolve({ filter: /.*/ }, (args) => {
          if (args.kind === "entry-point") return undefined;
          const path = args.path.startsWith(".") ? args.path.replace(/\.ts$/, ".js") : args.path;
          return { path, external: true };
        });
      },
    },
  ],
});
if (compiled.errors.length > 0) process.exit(1);

writeFileSync(join(out, PRELUDE.replace(/\.ts$/, ".js")), bundlePrelude());
mkdirSync(join(out, PYTHON_ISOLATE), { recursive: true });
for (const [name, text] of Object.entries(bundlePython())) writeFileSync(join(out, PYTHON_ISOLATE, `${name}.js`), text);
// the in-sandbox Python library (not its tests), copied into each interpreter's file system
cpSync(join(root, "sandbox/python/lib"), join(out, "sandbox/python/lib"), {
  recursive: true,
  filter: (from) => !from.includes("/tests") && !from.includes("__pycache__"),
});
cpSync(join(root, "sdk/graders.ts"), join(out, "sdk/graders.ts"));
const consoleFiles = buildConsole(pathToFileURL(join(out, "console/")));
// the list of checkout files it was made from dates a rebuild; the compiled tree never rebuilds
rmSync(join(out, "console/inputs.json"));
cpSync(join(root, "migrations"), join(out, "migrations"), { recursive: true });
writeFileSync(join(out, "package.json"), `${JSON.stringify({ type: "module", private: true }, null, 2)}\n`);

console.log(
  `built ${relative(process.cwd(), out) || "."}/ in ${Math.round(performance.now() - started)} ms: ` +
    `${entryPoints.length} modules, the prelude, the console (${Object.keys(consoleFiles).length} files), the migrations`,
);

// The scripts of a Python isolate: before the prelude, the shell environment (isolate/env.ts)
// and Pyodide's loader and glue with the boot code (isolate/boot.ts); after it, the shim
// (isolate/shim.ts) that is the grader's module. One script each.
// Bundled once per worker process at its first Python grader (about 0.3 s); `make build` writes
// them into the compiled tree beside the prelude, so a production worker only reads them.

import { readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import * as esbuild from "esbuild";

export interface PythonScripts {
  env: string;
  boot: string;
  shim: string;
}

/** Env's names the Pyodide bundle sees lexically, as the parameters of the function around it. */
const SHELL_NAMES = ["WebAssembly", "read", "load", "readbuffer", "os", "performance", "console", "TextEncoder", "TextDecoder", "Error"];

function bundleOne(entry: string): string {
  const result = esbuild.buildSync({
    entryPoints: [new URL(entry, import.meta.url).pathname],
    bundle: true,
    write: false,
    format: "iife",
    platform: "neutral",
    mainFields: ["module", "main"],
    target: "es2022",
    logLevel: "error",
    // the loader imports these only when it finds itself in Node, which it never does here
    external: ["ws", ...builtinModules, ...builtinModules.map((m) => `node:${m}`)],
    // the glue's `import.meta.url` names its own file, read only in Node and the browser
    define: { "import.meta.url": '"file:///pyodide/pyodide.asm.mjs"' },
  });
  return result.outputFiles[0].text;
}

export function bundlePython(): PythonScripts {
  const env = bundleOne("./isolate/env.ts");
  const inner = bundleOne("./isolate/boot.ts");
  const params = SHELL_NAMES.join(", ");
  const args = SHELL_NAMES.map((n) => `__env.${n}`).join(", ");
  const boot = `(function (__env) {\n(function (${params}) {\n${inner}\n})(${args});\n})(globalThis.__gradebox_py_env);\n`;
  return { env, boot, shim: bundleOne("./isolate/shim.ts") };
}

let scripts: PythonScripts | undefined;
/** Read from the compiled tree (`make build`), or bundled from the sources once per process. */
export function loadPythonScripts(): PythonScripts {
  if (scripts) return scripts;
  if (import.meta.url.endsWith(".js")) {
    scripts = {
      env: readFileSync(new URL("./isolate/env.js", import.meta.url), "utf8"),
      boot: readFileSync(new URL("./isolate/boot.js", import.meta.url), "utf8"),
      shim: readFileSync(new URL("./isolate/shim.js", import.meta.url), "utf8"),
    };
  } else {
    scripts = bundlePython();
  }
  return scripts;
}

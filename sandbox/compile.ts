// esbuild: the syntax check on the source as submitted, and the bundle that becomes one
// self-contained script per grader (an IIFE with no imports left in it).

import * as esbuild from "esbuild";
import { type CheckFailure, IMPORT_ALLOW_LIST } from "./checks.ts";

/** One self-contained script: what every bundle the sandbox runs is built as. */
const SCRIPT = { bundle: true, write: false, format: "iife", platform: "neutral", target: "es2022", logLevel: "silent" } as const;

function firstError(errors: esbuild.Message[], check: CheckFailure["check"]): CheckFailure {
  const e = errors[0];
  const where = e?.location;
  return {
    check,
    message: where ? `${e.text} (line ${where.line}, column ${where.column + 1})` : (e?.text ?? "compilation failed"),
    ...(where ? { line: where.line, column: where.column + 1 } : {}),
  };
}

/** Check 1. Parses the source exactly as submitted, so positions are the user's own. */
export async function checkSyntax(source: string): Promise<CheckFailure | undefined> {
  try {
    await esbuild.transform(source, { loader: "ts", target: SCRIPT.target, logLevel: "silent" });
    return undefined;
  } catch (error) {
    const errors = (error as esbuild.TransformFailure).errors;
    if (!errors) throw error;
    return firstError(errors, "syntax");
  }
}

// Allow-listed modules resolve to tiny virtual modules over what the prelude defines; anything
// else is refused here too, even though the structure check has already rejected it.
const virtualModules: Record<string, string> = {
  gradebox: "export const StringThread = globalThis.StringThread;",
};
const libraryFiles: Record<string, string> = {
  "gradebox/graders": new URL("../sdk/graders.ts", import.meta.url).pathname,
};
const allowed = new Set<string>(IMPORT_ALLOW_LIST);

const sandboxedImports: esbuild.Plugin = {
  name: "gradebox-sandboxed-imports",
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === "entry-point") return undefined;
      if (allowed.has(args.path) && args.path in libraryFiles) return { path: libraryFiles[args.path] };
      if (allowed.has(args.path) && args.path in virtualModules) return { path: args.path, namespace: "gradebox-virtual" };
      return { errors: [{ text: `import of "${args.path}" is not allowed in a grader` }] };
    });
    build.onLoad({ filter: /.*/, namespace: "gradebox-virtual" }, (args) => ({
      contents: virtualModules[args.path],
      loader: "js",
    }));
  },
};

/** Bundles the analysed source into one script. */
export async function bundle(code: string): Promise<{ compiled: string } | CheckFailure> {
  try {
    const result = await esbuild.build({
      ...SCRIPT,
      stdin: { contents: code, loader: "ts", sourcefile: "grader.ts" },
      plugins: [sandboxedImports],
    });
    return { compiled: result.outputFiles[0].text };
  } catch (error) {
    const errors = (error as esbuild.BuildFailure).errors;
    if (!errors) throw error;
    return firstError(errors, "structure");
  }
}

/** The prelude, bundled once per worker process. */
export function bundlePrelude(): string {
  const result = esbuild.buildSync({
    ...SCRIPT,
    entryPoints: [new URL("./prelude.ts", import.meta.url).pathname],
  });
  return result.outputFiles[0].text;
}

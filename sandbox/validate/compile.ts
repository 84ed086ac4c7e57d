// esbuild: the syntax check on the source as submitted, the bundle that becomes one
// self-contained script per grader (an IIFE with no imports left in it), and the bundle of the
// isolate's prelude (isolate/prelude.ts), built the same way (ahead of time by `make build`).

import { readFileSync } from "node:fs";
import { decode, encode, type SourceMapSegment } from "@jridgewell/sourcemap-codec";
import * as esbuild from "esbuild";
import type { SourceEdit } from "./analyze.ts";
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
  "gradebox/graders": new URL("../../sdk/graders.ts", import.meta.url).pathname,
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

/** the name of the user's source in the bundle's source map */
const SOURCE_NAME = "grader.ts";
/**
 * A compiled grader is the script, then this comment and its source map as base64 JSON: one
 * string, stored as it is. The engine runs the script alone and keeps the map for errors.
 */
const MAP_COMMENT = "//# sourceMappingURL=data:application/json;base64,";
const MAP_TAIL = /^[A-Za-z0-9+/]*={0,2}\n?$/;

/**
 * The script and its source map (base64 JSON, undefined when it has none: graders compiled
 * before maps were kept) of a compiled grader.
 */
export function splitCompiled(compiled: string): { script: string; map?: string } {
  const at = compiled.lastIndexOf(`\n${MAP_COMMENT}`);
  if (at < 0) return { script: compiled };
  const tail = compiled.slice(at + 1 + MAP_COMMENT.length);
  // the comment is the script's last line, written by bundle() below, never text of the grader's
  if (!MAP_TAIL.test(tail)) return { script: compiled };
  return { script: compiled.slice(0, at + 1), map: tail.trimEnd() };
}

/**
 * The bundle's source map as a map to the source as the user submitted it: segments of the
 * user's code only (the bundled library and the analyser's trailer have none), the entry line's
 * columns shifted back across the analyser's edit, no names and no sources content (the source
 * is stored beside the grader).
 */
function userSourceMap(mapJson: string, edit: SourceEdit): string | undefined {
  const map = JSON.parse(mapJson) as { sources: string[]; mappings: string };
  const user = map.sources.indexOf(SOURCE_NAME);
  if (user < 0) return undefined;
  const lines = decode(map.mappings).map((segments) => {
    const kept: SourceMapSegment[] = [];
    for (const segment of segments) {
      if (segment.length === 1 || segment[1] !== user) continue;
      const [generated, , line, column] = segment;
      if (line >= edit.trailer) continue;
      let original = column;
      if (line === edit.line && column >= edit.column) {
        // inside the inserted text: the statement's start; after it: shifted back
        original = column < edit.column + edit.added ? edit.column : column - edit.added + edit.removed;
      }
      kept.push([generated, 0, line, original]);
    }
    return kept;
  });
  return JSON.stringify({ version: 3, sources: [SOURCE_NAME], names: [], mappings: encode(lines) });
}

const UNEDITED: SourceEdit = { line: 0, column: 0, removed: 0, added: 0, trailer: Number.POSITIVE_INFINITY };

/**
 * Bundles the analysed source into one script, followed by a source map to the source as
 * submitted (see splitCompiled); `edit` says how the analysed source differs from it.
 */
export async function bundle(code: string, edit: SourceEdit = UNEDITED): Promise<{ compiled: string } | CheckFailure> {
  try {
    const result = await esbuild.build({
      ...SCRIPT,
      stdin: { contents: code, loader: "ts", sourcefile: SOURCE_NAME },
      plugins: [sandboxedImports],
      outfile: "grader.js",
      sourcemap: "external",
      sourcesContent: false,
    });
    const script = result.outputFiles.find((f) => f.path.endsWith(".js"))?.text ?? "";
    const mapFile = result.outputFiles.find((f) => f.path.endsWith(".js.map"));
    const map = mapFile ? userSourceMap(mapFile.text, edit) : undefined;
    if (map === undefined) return { compiled: script };
    return { compiled: `${script}${script.endsWith("\n") ? "" : "\n"}${MAP_COMMENT}${Buffer.from(map).toString("base64")}\n` };
  } catch (error) {
    const errors = (error as esbuild.BuildFailure).errors;
    if (!errors) throw error;
    return firstError(errors, "structure");
  }
}

/** The prelude bundled from its source: by `make build` into the compiled tree, or by a worker run from the sources. */
export function bundlePrelude(): string {
  const result = esbuild.buildSync({
    ...SCRIPT,
    entryPoints: [new URL("../isolate/prelude.ts", import.meta.url).pathname],
  });
  return result.outputFiles[0].text;
}

/**
 * The prelude as a worker runs it, read once per worker process. Compiled (`make build`), this
 * file is JavaScript and the prelude comes bundled beside it (isolate/prelude.js), so a worker
 * starts without esbuild; run from the sources, it is bundled here.
 */
export function loadPrelude(): string {
  if (import.meta.url.endsWith(".js")) return readFileSync(new URL("../isolate/prelude.js", import.meta.url), "utf8");
  return bundlePrelude();
}

// Builds the `gradebox` npm package (packages/gradebox): the SDK compiled from sdk/ by the
// TypeScript compiler (ES modules + .d.ts, one file per module, `.ts` imports rewritten to `.js`)
// and the client CLI bundled by esbuild into one file with commander and diff inside, so the
// package has no runtime dependencies. `make package` runs it, then `npm pack`.

import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as esbuild from "esbuild";
import ts from "typescript";

const root = new URL("../", import.meta.url).pathname;
const pkg = `${root}packages/gradebox/`;
const dist = `${pkg}dist/`;

rmSync(dist, { recursive: true, force: true });

// every SDK module the entry points reach (index, graders, and node-browser for the "browser" field)
const entries = ["index.ts", "graders.ts", "node-browser.ts"].map((f) => `${root}sdk/${f}`);
const program = ts.createProgram(entries, {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  declaration: true,
  rewriteRelativeImportExtensions: true,
  verbatimModuleSyntax: true,
  skipLibCheck: true,
  types: ["node"],
  lib: ["lib.es2023.d.ts", "lib.dom.d.ts"],
  rootDir: `${root}sdk`,
  outDir: dist,
  removeComments: false,
  newLine: ts.NewLineKind.LineFeed,
});
const emitted = program.emit();
const diagnostics = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics];
if (diagnostics.length > 0 || emitted.emitSkipped) {
  const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => root, getNewLine: () => "\n" };
  console.error(ts.formatDiagnosticsWithColorAndContext(diagnostics, host));
  process.exit(1);
}

// the declarations keep the sources' `./x.ts` specifiers (the compiler rewrites them only in .js):
// consumers resolving under node16 need `./x.js`
for (const file of readdirSync(dist).filter((f) => f.endsWith(".d.ts"))) {
  const text = readFileSync(dist + file, "utf8");
  writeFileSync(dist + file, text.replace(/((?:from|import)\s*\(?\s*)(["'])(\.\.?\/[^"']+)\.ts\2/g, "$1$2$3.js$2"));
}

// the client CLI: serve and keys come with the server, not this package
await esbuild.build({
  entryPoints: [`${root}cli/client-main.ts`],
  outfile: `${dist}cli.js`,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  banner: { js: "#!/usr/bin/env node" },
  logLevel: "warning",
});
chmodSync(`${dist}cli.js`, 0o755);

console.log(`built ${pkg}: ${readdirSync(dist).length} files in dist/`);

// Local imports in a TypeScript grader file, bundled on the client so that the server still gets
// one self-contained source its checks accept (they allow imports of gradebox and gradebox/graders
// only). Node only: node.ts imports it when a file is read, and it loads esbuild on first use.
//
// The grader file itself is sent as written: its local import declarations are replaced, on their
// own lines, by constants read from one object, and that object's code (every local module it
// reaches, bundled by esbuild into one line) stands where the first of them was. So every line of
// the user's file keeps its number (errors and carets point into it), its types stay (the
// signature check reads them), and `get` shows the file. Local files must lie inside the project
// directory (the current directory by default); node built-ins and packages other than gradebox's
// own are refused, as the sandbox would.

import { GraderFileError } from "./grader-files.ts";

/** The object the bundled local modules are read from; `m0`… are their namespaces, in the order they are imported. */
const LOCALS = "__gradebox_locals";
/** The modules a grader may import, and the name their namespace gets when a local module uses them. */
const GRADEBOX_MODULES: Record<string, string> = { gradebox: "__gradebox_module_sdk", "gradebox/graders": "__gradebox_module_graders" };

const isRelative = (specifier: string) => /^\.{1,2}(\/|$)/.test(specifier) || specifier.startsWith("/");

// an import declaration at the start of a line: `import X, { a as b } from "./x"`, `import * as n from "./x"`, `import "./x"`
const IMPORT_DECL = /^[ \t]*import\s*(?:([^"';]*?)\s*from\s*)?(["'])([^"'\n]+)\2[ \t]*;?/gm;
// forms of a local import the rewrite does not take
const OTHER_LOCAL_USE =
  /^[ \t]*export\s[^"';]*?from\s*(["'])(\.{0,2}\/[^"'\n]*)\1|\b(?:require|import)\s*\(\s*(["'])(\.{0,2}\/[^"'\n]*)\3/m;

/** What one import declaration binds: `const …` statements over the namespace `ns`, or undefined for a type-only one. */
function bindings(clause: string, ns: string): string | undefined {
  const text = clause.trim();
  if (/^type\s/.test(text)) return undefined;
  const m = /^([A-Za-z_$][\w$]*)?\s*,?\s*(?:\*\s*as\s+([A-Za-z_$][\w$]*)|\{([\s\S]*)\})?$/.exec(text);
  if (!m)
    throw new GraderFileError("LOCAL_IMPORT_FORM", `cannot read the import clause \`${text}\`: write it as \`import { a, b } from "./x"\``);
  const [, defaultName, namespace, named] = m;
  const out: string[] = [];
  if (defaultName) out.push(`const ${defaultName} = ${ns}.default;`);
  if (namespace) out.push(`const ${namespace} = ${ns};`);
  const elements = (named ?? "")
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e && !/^type\s/.test(e))
    .map((e) => {
      const [name, alias] = e.split(/\s+as\s+/);
      return alias ? `${name}: ${alias}` : name;
    });
  if (elements.length > 0) out.push(`const { ${elements.join(", ")} } = ${ns};`);
  return out.join(" ");
}

/** Whether `path` is `root` or inside it (both real paths). */
const inside = (root: string, path: string, sep: string) => path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);

type Esbuild = typeof import("esbuild");

/** Not a literal: a bundler that meets this module (the console's, the CLI package's) leaves esbuild out, to be found where it runs. */
const ESBUILD = "esbuild";

async function loadEsbuild(): Promise<Esbuild> {
  try {
    return (await import(ESBUILD)) as Esbuild;
  } catch {
    throw new GraderFileError(
      "ESBUILD_MISSING",
      "bundling a grader's local imports needs esbuild: install it in the project (npm install --save-dev esbuild)",
    );
  }
}

/**
 * The grader file's text with its local imports bundled in (see the top of this file), and the
 * local files it took (relative to the root). A file without local imports comes back as it is.
 */
export async function bundleLocalImports(
  path: string,
  text: string,
  root: string = globalThis.process.cwd(),
): Promise<{ source: string; files: string[] }> {
  const local = [...text.matchAll(IMPORT_DECL)].filter((m) => isRelative(m[3]));
  const valueImports = local.filter((m) => m[1] === undefined || bindings(m[1], "") !== undefined);
  const stray = OTHER_LOCAL_USE.exec(text);
  if (stray) {
    throw new GraderFileError(
      "LOCAL_IMPORT_FORM",
      `${path}: a local module is used by \`${stray[0].trim()}\`: import it with an import declaration, e.g. \`import { a } from "${stray[2] ?? stray[4]}"\``,
    );
  }
  if (valueImports.length === 0) return { source: text, files: [] };

  // imported here, not at the top: a browser bundle of the SDK (the console's) reaches this module and must hold no static Node import
  const [{ realpathSync }, { builtinModules }, { dirname, relative, resolve, sep }] = await Promise.all([
    import("node:fs"),
    import("node:module"),
    import("node:path"),
  ]);
  const realRoot = realpathSync(resolve(root));
  const entryDir = dirname(resolve(path));
  const specifiers = [...new Set(valueImports.map((m) => m[3]))];
  const used = new Set<string>();
  const esbuild = await loadEsbuild();
  const refuse = (text: string) => ({ errors: [{ text }] });
  let built: Awaited<ReturnType<Esbuild["build"]>>;
  try {
    built = await esbuild.build({
      stdin: {
        contents: specifiers.map((s, i) => `export * as m${i} from ${JSON.stringify(s)};`).join("\n"),
        resolveDir: entryDir,
        sourcefile: path,
        loader: "ts",
      },
      absWorkingDir: realRoot,
      bundle: true,
      write: false,
      metafile: true,
      format: "iife",
      globalName: LOCALS,
      platform: "neutral",
      target: "es2022",
      minifyWhitespace: true,
      legalComments: "none",
      logLevel: "silent",
      plugins: [
        {
          name: "gradebox-local-imports",
          setup(build) {
            build.onResolve({ filter: /.*/ }, (args) => {
              if (args.kind === "entry-point" || isRelative(args.path)) return undefined;
              if (args.path in GRADEBOX_MODULES) return { path: args.path, namespace: "gradebox-module" };
              const name = args.path.replace(/^node:/, "");
              if (args.path.startsWith("node:") || builtinModules.includes(name)) {
                return refuse(
                  `"${args.path}" is a Node built-in module, which a grader cannot use: graders run in a sandbox without Node's modules`,
                );
              }
              return refuse(
                `"${args.path}" is a package: a grader may import "gradebox", "gradebox/graders" and files inside the project directory ${realRoot}, nothing else (graders run in a sandbox without packages)`,
              );
            });
            build.onLoad({ filter: /.*/, namespace: "gradebox-module" }, (args) => {
              used.add(args.path);
              return { contents: `module.exports = ${GRADEBOX_MODULES[args.path]};`, loader: "js" };
            });
            build.onLoad({ filter: /.*/ }, (args) => {
              if (inside(realRoot, realpathSync(args.path), sep)) return undefined;
              return refuse(
                `${args.path} is outside the project directory ${realRoot}: a grader may import files inside it only (run gradebox from the directory that holds them all)`,
              );
            });
          },
        },
      ],
    });
  } catch (error) {
    const failure = error as { errors?: Array<{ text: string; location?: { file: string; line: number; column: number } | null }> };
    if (!failure.errors?.length) throw error;
    const { text: message, location } = failure.errors[0];
    const where = location ? `${location.file}:${location.line}:${location.column + 1}: ` : "";
    const code = /Node built-in/.test(message)
      ? "NODE_BUILTIN_IMPORT"
      : /is a package/.test(message)
        ? "PACKAGE_IMPORT"
        : /outside the project directory/.test(message)
          ? "LOCAL_IMPORT_OUTSIDE_PROJECT"
          : "LOCAL_IMPORT_FAILED";
    throw new GraderFileError(code, `${where}${message}`);
  }

  const bundled = (built.outputFiles ?? [])[0].text.trimEnd();
  const head =
    Object.entries(GRADEBOX_MODULES)
      .filter(([module]) => used.has(module))
      .map(([module, name]) => `import * as ${name} from ${JSON.stringify(module)};`)
      .join("") + bundled;
  let first = true;
  const source = text.replace(IMPORT_DECL, (whole, clause: string | undefined, _q, specifier: string) => {
    if (!isRelative(specifier)) return whole;
    const binding = clause === undefined ? "" : bindings(clause, `${LOCALS}.m${specifiers.indexOf(specifier)}`);
    if (binding === undefined) return whole; // type-only: erased by the server's compiler
    const breaks = "\n".repeat(whole.split("\n").length - 1);
    const replaced = `${first ? head : ""}${binding}${breaks}`;
    first = false;
    return replaced;
  });
  // the inputs are relative to absWorkingDir: the root
  const entry = relative(realRoot, resolve(path));
  const files = Object.keys(built.metafile?.inputs ?? {}).filter((f) => !f.includes(":") && !f.startsWith("<") && f !== entry);
  return { source, files };
}

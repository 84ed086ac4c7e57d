// sandbox/ is arranged by where code runs (docs/DESIGN.md): isolate/ is bundled into every
// isolate, worker/ runs in the worker processes, host/ in the server. These tests hold the
// arrangement: what isolate/ reaches bundles for a bare V8 context (platform "neutral", no Node
// module, no global an isolate lacks), and neither side of the process boundary imports the
// other's room.

import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { builtinModules } from "node:module";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import ivm from "isolated-vm";

const root = fileURLToPath(new URL("..", import.meta.url));
const path = (p: string) => fileURLToPath(new URL(`../${p}`, import.meta.url));
const ISOLATE = "sandbox/isolate";

/** Globals Node has and an isolate's fresh context lacks (process, Buffer, setTimeout, fetch…), and Node's module-scope names. */
function nodeOnlyGlobals(): string[] {
  const isolate = new ivm.Isolate({ memoryLimit: 16 });
  try {
    const names = isolate.createContextSync().evalSync("Object.getOwnPropertyNames(globalThis).join(',')") as string;
    const inIsolate = new Set(names.split(","));
    const node = Object.getOwnPropertyNames(globalThis).filter((n) => !inIsolate.has(n));
    return [...node, "require", "module", "exports", "__dirname", "__filename"].filter((n) => /^[A-Za-z_$][\w$]*$/.test(n));
  } finally {
    isolate.dispose();
  }
}

const MARK = "__gradebox_node_global__";

/**
 * Bundles one entry for a bare V8 context. Node's modules are left external so they show up as
 * imports rather than as resolution errors, and every Node-only global is replaced (esbuild's
 * define touches free references only, never a local of the same name) by a marked name.
 */
async function neutralBundle(entry: string, globals: string[]) {
  const result = await esbuild.build({
    entryPoints: [path(entry)],
    absWorkingDir: root,
    bundle: true,
    write: false,
    platform: "neutral",
    format: "esm",
    target: "es2022",
    metafile: true,
    logLevel: "silent",
    external: [...builtinModules, ...builtinModules.map((m) => `node:${m}`)],
    define: Object.fromEntries(globals.map((g) => [g, `${MARK}${g}`])),
  });
  const text = result.outputFiles[0].text;
  const imports = Object.entries(result.metafile.inputs).flatMap(([file, input]) =>
    input.imports.filter((i) => i.external || i.path.startsWith("node:")).map((i) => `${file} imports ${i.path}`),
  );
  const used = [...new Set([...text.matchAll(new RegExp(`${MARK}([\\w$]+)`, "g"))].map((m) => m[1]))];
  return { imports, used, inputs: Object.keys(result.metafile.inputs) };
}

/** Every file of this repository a bundle of `entry` for Node reaches (packages left out), relative to the root. */
async function closure(entry: string): Promise<string[]> {
  const result = await esbuild.build({
    entryPoints: [path(entry)],
    absWorkingDir: root,
    bundle: true,
    write: false,
    platform: "node",
    format: "esm",
    packages: "external",
    metafile: true,
    logLevel: "silent",
  });
  return Object.keys(result.metafile.inputs);
}

describe("isolate/ runs in a bare V8 context", () => {
  const entries = readdirSync(path(ISOLATE))
    .filter((f) => f.endsWith(".ts"))
    .map((f) => `${ISOLATE}/${f}`);
  const globals = nodeOnlyGlobals();

  test("the check knows the globals an isolate lacks", () => {
    for (const name of ["process", "Buffer", "require", "setTimeout", "fetch", "TextEncoder"]) assert.ok(globals.includes(name), name);
    for (const name of ["JSON", "Math", "Float64Array", "Intl"]) assert.ok(!globals.includes(name), name);
  });

  for (const entry of entries) {
    test(`${entry} bundles platform-neutral: no Node module, no Node global`, async () => {
      const { imports, used } = await neutralBundle(entry, globals);
      assert.deepEqual(imports, [], "Node modules imported");
      assert.deepEqual(used, [], "globals an isolate does not have");
    });
  }

  test("the check fails on a Node module and on a Node global", async () => {
    // the same bundle, of a file that uses both: the assertions above would fail on it
    const probe = await esbuild.build({
      stdin: {
        contents: 'import { readFileSync } from "node:fs";\nexport const f = () => [readFileSync, process.pid, Buffer];\n',
        loader: "ts",
      },
      bundle: true,
      write: false,
      platform: "neutral",
      format: "esm",
      metafile: true,
      logLevel: "silent",
      external: ["node:fs"],
      define: Object.fromEntries(globals.map((g) => [g, `${MARK}${g}`])),
    });
    const imports = Object.values(probe.metafile.inputs).flatMap((i) => i.imports.filter((x) => x.external));
    assert.deepEqual(
      imports.map((i) => i.path),
      ["node:fs"],
    );
    assert.match(probe.outputFiles[0].text, new RegExp(`${MARK}process`));
    assert.match(probe.outputFiles[0].text, new RegExp(`${MARK}Buffer`));
  });

  test("the prelude's bundle reaches only isolate/, protocol/, the vocabulary and the SDK's thread", async () => {
    const { inputs } = await neutralBundle(`${ISOLATE}/prelude.ts`, globals);
    const outside = inputs.filter(
      (p) => !/^sandbox\/(isolate|protocol)\//.test(p) && p !== "sandbox/validate/checks.ts" && !/^sdk\/(thread|errors)\.ts$/.test(p),
    );
    assert.deepEqual(outside, []);
  });
});

describe("the process boundary", () => {
  test("the server never loads the worker's or the isolate's code: it forks the worker by path", async () => {
    const files = await closure("server/main.ts");
    assert.ok(files.includes("sandbox/host/pool.ts"), "the walk reaches the pool");
    assert.deepEqual(
      files.filter((p) => /^sandbox\/(worker|isolate)\//.test(p)),
      [],
    );
  });

  test("the worker process never loads the host's code", async () => {
    const files = await closure("sandbox/worker/worker.ts");
    assert.ok(files.includes("sandbox/worker/engine.ts"), "the walk reaches the engine");
    assert.deepEqual(
      files.filter((p) => p.startsWith("sandbox/host/") || p.startsWith("server/")),
      [],
    );
  });
});

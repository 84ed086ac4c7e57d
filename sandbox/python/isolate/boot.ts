// Trusted code that starts the interpreter inside a Python isolate: Pyodide's loader and glue
// are bundled with it (python/bundle.ts) and see env.ts's shell through lexical names. The host
// calls `start` and polls `state` until it settles: the loader is asynchronous, and inside
// isolated-vm its promises settle only as the host's calls drain the microtasks.
//
// A template boots from nothing, imports what graders use and gives its memory as a snapshot;
// every grader's isolate starts from that snapshot. Either way the interpreter's Python files
// (the gradebox package) are written into its file system as it starts: the file system lives
// in JavaScript, outside the snapshot.

import createPyodideModule from "pyodide/pyodide.asm.mjs";
import { loadPyodide } from "pyodide/pyodide.mjs";

interface BootOptions {
  lock: string;
  /** [path under site-packages, text] */
  files: [string, string][];
}

type Pyodide = Awaited<ReturnType<typeof loadPyodide>>;

const g = globalThis as Record<string, unknown>;
let pyodide: Pyodide | undefined;
let failure = "";
/** "", "booting", "ready" or "failed" */
let state = "";

/** `snapshot`: the template's memory (a grader's isolate); absent, the interpreter boots from nothing to make one */
function start(options: BootOptions, snapshot?: ArrayBuffer): void {
  state = "booting";
  loadPyodide({
    indexURL: "/pyodide/",
    createPyodideModule,
    lockFileContents: options.lock,
    // the `js` module is this empty object: grader code gets nothing from it it could not build
    jsglobals: Object.create(null),
    env: { HOME: "/home/grader", PYTHONDONTWRITEBYTECODE: "1" },
    stdout: () => {},
    stderr: () => {},
    checkAPIVersion: true,
    fsInit: async (FS: { mkdirTree(p: string): void; writeFile(p: string, t: string): void }, info: { sitePackages: string }) => {
      for (const [path, text] of options.files) {
        const full = `${info.sitePackages}/${path}`;
        FS.mkdirTree(full.slice(0, full.lastIndexOf("/")));
        FS.writeFile(full, text);
      }
    },
    ...(snapshot ? { _loadSnapshot: new Uint8Array(snapshot) } : { _makeSnapshot: true }),
  } as Parameters<typeof loadPyodide>[0]).then(
    (py: Pyodide) => {
      pyodide = py;
      state = "ready";
    },
    (error: unknown) => {
      failure = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      state = "failed";
    },
  );
}

Object.defineProperty(g, "__gradebox_py_boot", {
  value: {
    start,
    state: () => (state === "failed" ? `failed: ${failure}` : state),
    pyodide: () => pyodide,
  },
  configurable: true,
});

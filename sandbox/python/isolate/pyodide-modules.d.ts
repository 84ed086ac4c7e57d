// The two files of the pinned Pyodide package the boot bundle imports (the package types only its
// main entry).
declare module "pyodide/pyodide.mjs" {
  export { loadPyodide } from "pyodide";
}
declare module "pyodide/pyodide.asm.mjs" {
  const createPyodideModule: (settings: unknown) => Promise<unknown>;
  export default createPyodideModule;
}

// The SDK's Node-only parts, imported dynamically (by transport.ts and client.ts) so that a browser
// never loads node:http or node:fs: the package's "browser" field maps this file to node-browser.ts.

import type { Transport, TransportResponse } from "./transport.ts";

export async function readTextFile(path: string): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  return readFile(path, "utf8");
}

/**
 * A grader file as the server gets it: a TypeScript file's local imports bundled in (bundle.ts;
 * `root` is the project directory they must lie in, default the current one), and with
 * `exportName`, that named export as its entry point. A Python file is read as it is.
 */
export async function readGraderFile(
  path: string,
  opts: { python?: boolean; exportName?: string; root?: string } = {},
): Promise<{ source: string; files: string[] }> {
  const text = await readTextFile(path);
  if (opts.python) return { source: text, files: [] };
  const { bundleLocalImports } = await import("./bundle.ts");
  const { withEntry } = await import("./grader-files.ts");
  const bundled = await bundleLocalImports(path, text, opts.root);
  return opts.exportName && opts.exportName !== "default" ? { ...bundled, source: withEntry(bundled.source, opts.exportName) } : bundled;
}

type NodeHttp = typeof import("node:http");
let node: Promise<{ request(url: URL): NodeHttp["request"]; agent(url: URL): import("node:http").Agent }> | undefined;

async function loadNode() {
  const [http, https] = await Promise.all([import("node:http"), import("node:https")]);
  // idle keep-alive sockets do not keep the process alive
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  const secure = (url: URL) => url.protocol === "https:";
  return {
    request: (url: URL) => (secure(url) ? https.request : http.request) as NodeHttp["request"],
    agent: (url: URL) => (secure(url) ? agents.https : agents.http),
  };
}

export const nodeTransport: Transport = async (url, { method, headers, body, signal }) => {
  node ??= loadNode();
  const { request, agent } = await node;
  return new Promise<TransportResponse>((resolve, reject) => {
    if (signal.aborted) return reject(new Error("the request was aborted"));
    // as fetch does: a length for every request that may carry a body, 0 when it carries none
    const hasBody = body !== undefined || (method !== "GET" && method !== "HEAD");
    // encoded once: its length is the header, the bytes are what is sent
    const bytes = hasBody ? Buffer.from(body ?? "") : undefined;
    const sendHeaders = bytes ? { ...headers, "content-length": String(bytes.length) } : headers;
    const req = request(url)(url, { method, headers: sendHeaders, agent: agent(url) }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", fail);
      res.on("close", () => {
        if (!res.complete) return fail(new Error("the connection closed before the response ended"));
        signal.removeEventListener("abort", abort);
        const status = res.statusCode ?? 0;
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({
          ok: status >= 200 && status < 300,
          status,
          headers: {
            get: (name) => {
              const value = res.headers[name.toLowerCase()];
              return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
            },
          },
          text: async () => text,
        });
      });
    });
    function fail(error: Error) {
      signal.removeEventListener("abort", abort);
      reject(error);
    }
    function abort() {
      req.destroy(new Error("the request was aborted"));
    }
    signal.addEventListener("abort", abort, { once: true });
    req.on("error", fail);
    req.end(bytes);
  });
};

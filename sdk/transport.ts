// How the client sends a request. In Node the default is node:http with a keep-alive agent: on
// loopback a single grade comes back 0.15–0.65 ms sooner at p50 than through the global fetch
// (undici) on the development machine, a large share of a ~1–2 ms call. Elsewhere (the browser
// console) it is the global fetch, and a fetch passed to the client always wins. The Node transport lives in node.ts, imported
// only when it runs: a browser bundle of the package gets node-browser.ts in its place (package.json "browser").

/** What the client reads of a response: a fetch Response has it, and so does the Node transport's. */
export interface TransportResponse {
  ok: boolean;
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

export interface TransportRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

export type Transport = (url: URL, request: TransportRequest) => Promise<TransportResponse>;

const inNode = (): boolean => typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === "string";

export function defaultTransport(fetchImpl?: typeof fetch): Transport {
  if (fetchImpl) return (url, request) => fetchImpl(url, request);
  if (inNode()) {
    const node = import("./node.ts");
    return async (url, request) => (await node).nodeTransport(url, request);
  }
  return (url, request) => globalThis.fetch(url, request);
}

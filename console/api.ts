// The connection to the server: whose the API key is, and the SDK client made from it. Every
// other call goes through that client. The key lives in sessionStorage only.

import { Gradebox } from "../sdk/index.ts";

const KEY = "gradebox.apiKey";

/** The key this tab connected with before a reload, if any. */
export function savedKey(): string | null {
  return sessionStorage.getItem(KEY);
}

/** Asks the server whose `key` is; on success keeps the key for this tab and returns a client for its project. */
export async function connect(key: string): Promise<{ client: Gradebox; project: string }> {
  const res = await fetch("/v1/me", { headers: { authorization: `Bearer ${key}` } }).catch((error: Error) => {
    throw new Error(`cannot reach Gradebox at ${location.origin}: ${error.message}`);
  });
  if (!res.ok) throw new Error(res.status === 401 ? "that API key is not valid or has been revoked" : `the server answered ${res.status}`);
  const { project } = (await res.json()) as { project: string };
  const client = new Gradebox({ baseURL: location.origin, apiKey: key, project, maxRetries: 0 });
  sessionStorage.setItem(KEY, key);
  return { client, project };
}

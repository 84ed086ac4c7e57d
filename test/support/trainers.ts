// Request builders copied in spirit from the trainers' own clients, so the routes are driven with
// exactly the JSON those clients send (their packages need GPUs and cannot be installed here).

/**
 * Python's json.dumps with its defaults, as aiohttp's `json=` sends a body: ", " and ": "
 * separators, and ensure_ascii (every character outside printable ASCII as \uXXXX).
 */
export function pythonJsonDumps(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(", ")}]`;
  if (typeof value === "object") {
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${pythonJsonDumps(k)}: ${pythonJsonDumps(v)}`)
      .join(", ")}}`;
  }
  if (typeof value === "string") {
    return JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  }
  return JSON.stringify(value);
}

export interface Attempt {
  url: string;
  body: string;
  status?: number;
}

/**
 * OpenRLHF's SingleTurnAgentExecutor._fetch_rewards_via_http (openrlhf/utils/agent.py): the
 * comma-separated --reward.remote_url list, the samples sharded across its URLs (ceil(n / urls)
 * each, so later URLs may get empty lists), one POST per URL with aiohttp's `json=`, and on any
 * error (raise_for_status: 4xx included) up to 5 tries `sleepMs` apart (OpenRLHF: 1 s), then
 * RuntimeError. Answers the parsed answers, one per URL; `attempts` records every try.
 */
export async function openRlhfFetchRewards(
  remoteUrl: string,
  queries: string[],
  prompts: string[],
  labels: unknown[],
  { sleepMs = 1000, attempts = [] as Attempt[] } = {},
): Promise<unknown[]> {
  const endpoints = remoteUrl.split(",");
  const batchSize = Math.ceil(queries.length / endpoints.length);
  return Promise.all(
    endpoints.map(async (url, i) => {
      const start = i * batchSize;
      const end = Math.min((i + 1) * batchSize, queries.length);
      const body = pythonJsonDumps({
        query: queries.slice(start, end),
        prompts: prompts.slice(start, end),
        labels: labels.slice(start, end),
      });
      for (let tries = 0; tries < 5; tries++) {
        const attempt: Attempt = { url, body };
        attempts.push(attempt);
        try {
          const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
          attempt.status = res.status;
          if (res.status >= 400) throw new Error(`${res.status}: ${await res.text()}`);
          return await res.json();
        } catch {
          await new Promise((r) => setTimeout(r, sleepMs));
        }
      }
      throw new Error("Request error for 5 times, returning None. Please check the API server.");
    }),
  );
}

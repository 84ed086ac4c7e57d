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

/**
 * verl's SandboxFusion client (verl/utils/reward_score/sandbox_fusion/utils.py, call_sandbox_api):
 * json.dumps of {compile_timeout, run_timeout, code, stdin, memory_limit_MB, language, files: {},
 * fetch_files: []} POSTed to `sandbox_fusion_url` as it is, no Authorization header; a 504 is
 * retried (max_retries 3, `delayMs` × attempt apart: verl's INITIAL_RETRY_DELAY is 1 s), any other
 * error or non-JSON answer ends it. Answers [response_json, error] as verl does: exactly one is null.
 */
export async function verlCallSandboxApi(
  url: string,
  {
    code,
    stdin,
    timeout = 10,
    memoryLimitMb = 1024,
    language = "python",
  }: {
    code: string;
    stdin: string | null;
    timeout?: number;
    memoryLimitMb?: number;
    language?: string;
  },
  { delayMs = 1000, attempts = [] as Attempt[], maxRetries = 3 } = {},
): Promise<[unknown, string | null]> {
  const body = pythonJsonDumps({
    compile_timeout: timeout,
    run_timeout: timeout,
    code,
    stdin,
    memory_limit_MB: memoryLimitMb,
    language,
    files: {},
    fetch_files: [],
  });
  let lastError: string | null = null;
  for (let attempt = 0; attempt < maxRetries; attempt++) {
    const record: Attempt = { url, body };
    attempts.push(record);
    let res: Response;
    try {
      res = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" }, body });
    } catch (error) {
      return [null, `API Call Failed: API Request Error: ${String(error)}`];
    }
    record.status = res.status;
    if (res.status === 504) {
      lastError = `API Request Error: Gateway Timeout (504) on attempt ${attempt + 1}/${maxRetries}`;
      if (attempt < maxRetries - 1) await new Promise((r) => setTimeout(r, delayMs * (attempt + 1)));
      continue;
    }
    if (res.status >= 400) return [null, `API Call Failed: API Request Error: ${res.status}`];
    try {
      return [await res.json(), null];
    } catch (error) {
      return [null, `API Call Failed: API Response JSON Decode Error: ${String(error)}`];
    }
  }
  return [null, `API Call Failed: ${lastError}`];
}

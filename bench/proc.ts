// What the bench rows read of the processes they measure, from /proc: CPU time, children, peak memory.

import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** utime + stime of a /proc/…/stat line, in µs (clock ticks of 10 ms) */
const statCpuUs = (stat: string): number => {
  const fields = stat.split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
};

/** CPU time (user + system, all threads) a process has used so far, in µs; 10 ms resolution; 0 once it is gone. */
export function cpuUs(pid: number): number {
  try {
    return statCpuUs(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return 0;
  }
}

/** CPU time each thread of a process has used so far, in µs, by thread id. */
export function threadCpuUs(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(Number(tid), statCpuUs(readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8")));
    } catch {} // a thread that ended meanwhile
  }
  return out;
}

/** pgrep exits 1 when there are none: spawnSync, not execFileSync, makes that an empty list. */
export const childPids = (parent: number): number[] =>
  spawnSync("pgrep", ["-P", String(parent)], { encoding: "utf8" })
    .stdout.trim()
    .split("\n")
    .filter(Boolean)
    .map(Number);

/** Every process below `parent`: children, their children… */
export const descendantPids = (parent: number): number[] => childPids(parent).flatMap((pid) => [pid, ...descendantPids(pid)]);

/** A field of /proc/<pid>/status in kB (VmHWM: the peak resident set; VmRSS: the current one); 0 when absent. */
export const statusKb = (pid: number, field: "VmHWM" | "VmRSS"): number =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);

/** The sandbox worker processes among a process's children (not esbuild's service process). */
export const sandboxWorkers = (parent: number): number[] =>
  childPids(parent).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("worker.ts"));

/** What a process of a Gradebox server is: its API process, a grading or the validation worker, esbuild's service. */
export function serverRole(pid: number, apiPid: number): "api" | "grading worker" | "validation worker" | "esbuild" | "other" {
  if (pid === apiPid) return "api";
  try {
    if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("esbuild")) return "esbuild";
    const env = readFileSync(`/proc/${pid}/environ`, "utf8");
    if (env.includes("GRADEBOX_SANDBOX_ROLE=grade")) return "grading worker";
    if (env.includes("GRADEBOX_SANDBOX_ROLE=validate")) return "validation worker";
  } catch {} // gone meanwhile
  return "other";
}

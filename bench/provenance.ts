// Where a benchmark ran: the commit and the machine, printed with every table and saved with it.

import { execFileSync } from "node:child_process";
import { cpus } from "node:os";

export function provenance(): { commit: string; machine: string } {
  let commit = "unknown";
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"]).toString().trim();
  } catch {}
  return { commit, machine: `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}` };
}

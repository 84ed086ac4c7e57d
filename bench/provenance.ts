// Where a benchmark ran: the commit and the machine, printed with every table and saved with it.

import { execFileSync } from "node:child_process";
import { cpus } from "node:os";

export function provenance(): { commit: string; machine: string } {
  let commit = "unknown";
  try {
    // "-dirty" when the working tree differs from the commit: the figures are then not that commit's
    commit = execFileSync("git", ["describe", "--always", "--dirty", "--abbrev=7"]).toString().trim();
  } catch {}
  return { commit, machine: `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}` };
}

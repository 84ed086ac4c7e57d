// A stored grader as the API shows it: never its script or row ids; its code, parts or
// definition only in the detail view.

import type { z } from "zod";
import type { Grader, GraderDetail, UpdateResult } from "../schemas.ts";
import type { Updated } from "../services/versions.ts";
import type { GraderRow } from "../store/graders.ts";

export function summary(row: GraderRow): z.infer<typeof Grader> {
  // everything but the code, the parts, the judge's definition and the row ids
  const {
    id: _id,
    source: _source,
    compiled: _compiled,
    parts: _parts,
    judge: _judge,
    modelId: _modelId,
    endpoint: _endpoint,
    code: _code,
    mode,
    ...rest
  } = row;
  return { ...rest, ...(mode ? { mode } : {}) };
}

export function detail(row: GraderRow): z.infer<typeof GraderDetail> {
  if (row.kind === "judge") return { ...summary(row), judge: row.judge };
  if (row.kind === "endpoint") return { ...summary(row), endpoint: row.endpoint };
  if (row.kind === "code") return { ...summary(row), code: row.code };
  if (row.kind === "combined") {
    return {
      ...summary(row),
      parts: (row.parts ?? []).map(({ graderKey, name, weight, version, pinned }) => ({ graderKey, name, weight, version, pinned })),
    };
  }
  return { ...summary(row), source: row.source };
}

/** An update's or a restore's answer: the grader (the current one for a dry run) and the samples report. */
export function updated({ row, dryRun, unchanged, report }: Updated): z.infer<typeof UpdateResult> {
  return { ...detail(row), ...(dryRun ? { dryRun } : {}), ...(unchanged ? { unchanged } : {}), report };
}

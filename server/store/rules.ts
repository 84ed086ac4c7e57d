// What the registry refuses whichever domain writes: a taken key, a locked grader, a new source
// for a grader that cannot take one. Its own module so that graders.ts and versions.ts both
// check them without importing each other in a circle.

import { AppError } from "../errors.ts";
import type { GraderRow } from "./graders.ts";

export const graderExists = (project: string, key: string) =>
  new AppError("GRADER_EXISTS", `grader "${key}" already exists in project "${project}"; delete it first or pick another key`);

export const lockedError = (key: string, doing: string) =>
  new AppError("GRADER_LOCKED", `grader "${key}" is locked; unlock it (PUT …/lock {"locked": false}) before ${doing} it`);

/** Only an unlocked function grader takes a new source. */
export function assertUpdatable(row: GraderRow): void {
  if (row.locked) throw lockedError(row.key, "updating");
  if (row.kind !== "function") {
    throw new AppError("INVALID_REQUEST", `grader "${row.key}" is a ${row.kind} grader; only function graders take a new source`);
  }
}

// The Gradebox SDK: `import { Gradebox, StringThread } from "gradebox"`.

export {
  type ClientOptions,
  type GradeBatchParams,
  Gradebox,
  GraderList,
  Graders,
  Keys,
  Models,
  type RequestOptions,
  Secrets,
} from "./client.ts";
export * from "./errors.ts";
export { GraderFileError, keyFromFile, keyFromName, namedGraders } from "./grader-files.ts";
export * from "./graders.ts";
export { functionSource, languageOfFile } from "./source.ts";
export { componentsOf, groupIndexes, histogram, type Outcomeish, type SummaryOptions, summarize, textHistogram } from "./summary.ts";
export { type Metadata, ROLES, type Role, StringThread, type Turn, type WireThread, type WireTurn } from "./thread.ts";
export {
  ACCEPTED_FORMATS,
  FORMAT_NAMES,
  readThreadLine,
  readThreadText,
  THREAD_FORMATS,
  type ThreadFormat,
} from "./thread-formats.ts";
export type * from "./types.ts";
export { VERSION } from "./version.ts";

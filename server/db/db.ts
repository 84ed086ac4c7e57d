// The registry's database, whichever it is: SQLite (embedded, the default) or PostgreSQL
// (GRADEBOX_DB=postgres://…, shared by any number of nodes). The store writes its SQL once, with
// `?` placeholders, in the subset both dialects share; an adapter runs it.

export type Params = readonly unknown[];

export interface Queryable {
  all<T>(sql: string, params?: Params): Promise<T[]>;
  get<T>(sql: string, params?: Params): Promise<T | undefined>;
  /** the number of rows changed */
  run(sql: string, params?: Params): Promise<number>;
}

/**
 * What changed, as every node hears it: a grader (or model) of a project, or the API keys;
 * `reset` when changes may have been missed (PostgreSQL's listening connection dropped or came back).
 */
export type Change = { kind: "graders"; project: string } | { kind: "keys" } | { kind: "reset" };

export interface Db extends Queryable {
  readonly dialect: "sqlite" | "postgres";
  /** the database as logs may show it (a path, or the URL without its password) */
  readonly label: string;
  /** statements run since start: the hot-path test counts them */
  readonly queries: number;
  /** runs `fn` in one transaction; `publish` announces changes to every node once it commits (and, with several nodes, resolves once they have all heard) */
  tx<T>(fn: (q: Queryable, publish: (change: Change) => void) => Promise<T>): Promise<T>;
  /** `listener` hears every committed change, this node's and (PostgreSQL) every other node's */
  subscribe(listener: (change: Change) => void): void;
  /** false while changes from other nodes might be missed (PostgreSQL's listening connection is down) */
  readonly listening: boolean;
  /**
   * SQLite: whether another process (`gradebox keys revoke`) committed to the file since the last
   * call; it cannot be heard otherwise. Absent where every change is heard (PostgreSQL).
   */
  changedElsewhere?(): boolean;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "23505";
}

export const isPostgresUrl = (db: string) => /^postgres(ql)?:\/\//.test(db);

/** `?` placeholders as PostgreSQL's `$1, $2…` (the store's SQL has no `?` inside literals). */
export function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

// StringThread: the one implementation shared by the SDK (local use and tests) and the sandbox
// prelude (bundled into every isolate). Dependency-free on purpose: it runs inside isolated-vm.

/** The roles Gradebox names itself; any other role string (see isRole) travels as it is. */
export const ROLES = ["system", "user", "assistant", "tool", "document"] as const;
export type KnownRole = (typeof ROLES)[number];
/**
 * Who speaks: one of ROLES, or any other role a conversation carries (OpenAI's `developer`, a
 * tool-calling `ipython`, …), kept verbatim. No accessor aliases one role to another: a
 * `developer` turn is never read as `system`.
 */
export type Role = string;
/** A role has at most this many characters. */
export const MAX_ROLE_LENGTH = 64;
/**
 * A role's text: 1 to 64 characters of the Basic Multilingual Plane, none a control character
 * (so a length means the same in every language, and a role never breaks a log line or a prompt).
 */
export const ROLE_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f\\ud800-\\udfff]{1,64}$";
const ROLE_RE = new RegExp(ROLE_PATTERN);
/** Whether `value` may be a turn's role: a known role, or any text within ROLE_PATTERN. */
export const isRole = (value: unknown): value is Role =>
  typeof value === "string" && (ROLES.includes(value as KnownRole) || ROLE_RE.test(value));
/** Why `value` is not a role (for error messages). */
export const ROLE_RULE = `a role is 1 to ${MAX_ROLE_LENGTH} characters without control characters (e.g. ${ROLES.join(", ")}, developer)`;
export type Turn = [role: Role, content: string];
export interface WireTurn {
  role: Role;
  content: string;
}
export type Metadata = Record<string, unknown>;
/** The thread as it travels over HTTP: `{turns: [{role, content}], metadata?}`. */
export interface WireThread {
  turns: WireTurn[];
  metadata?: Metadata;
}

/** Only adoptThread holds it: the sandbox builds turns it already checked, and skips the copy. */
const ADOPT = Symbol("adopt");

export class StringThread {
  readonly #turns: Turn[];
  readonly metadata: Metadata;

  constructor(turns: ReadonlyArray<Turn | WireTurn> = [], metadata: Metadata = {}, adopt?: typeof ADOPT) {
    this.metadata = metadata ?? {};
    if (adopt === ADOPT) {
      this.#turns = turns as Turn[];
      return;
    }
    if (!Array.isArray(turns)) throw new TypeError("StringThread: turns must be an array");
    this.#turns = turns.map((turn, i) => {
      const [role, content] = Array.isArray(turn) ? turn : [turn?.role, turn?.content];
      if (!isRole(role)) throw new TypeError(`StringThread: turn ${i} has role ${JSON.stringify(role)}; ${ROLE_RULE}`);
      if (typeof content !== "string") throw new TypeError(`StringThread: turn ${i} content must be a string`);
      return [role, content];
    });
  }

  /** Content of the last turn if it is an assistant turn, else null. */
  completion(): string | null {
    const last = this.#turns.at(-1);
    return last && last[0] === "assistant" ? last[1] : null;
  }

  /** Every turn as a [role, content] tuple (copies: mutating them does not change the thread). */
  getTurns(): Turn[] {
    return this.#turns.map(([role, content]) => [role, content]);
  }

  /** Every turn except a final assistant turn (the prompt the completion answered). */
  messages(): Turn[] {
    const turns = this.getTurns();
    return turns.at(-1)?.[0] === "assistant" ? turns.slice(0, -1) : turns;
  }

  /** Content of the last turn, whatever its role; null for an empty thread. */
  lastContent(): string | null {
    return this.#turns.at(-1)?.[1] ?? null;
  }

  toJSON(): WireThread {
    return { turns: this.#turns.map(([role, content]) => ({ role, content })), metadata: this.metadata };
  }
}

/** A thread over turns the caller built and owns: well-formed [role, content] tuples, not shared. */
export function adoptThread(turns: Turn[], metadata: Metadata): StringThread {
  return new StringThread(turns, metadata, ADOPT);
}

// StringThread: the one implementation shared by the SDK (local use and tests) and the sandbox
// prelude (bundled into every isolate). Dependency-free on purpose: it runs inside isolated-vm.

export const ROLES = ["system", "user", "assistant", "tool", "document"] as const;
export type Role = (typeof ROLES)[number];
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
      if (!ROLES.includes(role as Role)) {
        throw new TypeError(`StringThread: turn ${i} has role ${JSON.stringify(role)}; expected one of ${ROLES.join(", ")}`);
      }
      if (typeof content !== "string") throw new TypeError(`StringThread: turn ${i} content must be a string`);
      return [role as Role, content];
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

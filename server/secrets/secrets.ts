// Secrets belong to a project. A model's API key or an endpoint's header names either one of
// the project's own secrets (stored through /v1/projects/{p}/secrets, sealed by SecretBox) or a
// server environment secret (GRADEBOX_SECRET_*) that the operator granted to that project. A
// secret is sent only to the host it is bound to, as a cookie to its domain: the first model or
// endpoint that uses it binds it, and another host needs the value set again. Naming a secret
// the project cannot use answers the same whether or not it exists anywhere else.

import { z } from "zod";
import type { Db, Queryable } from "../db/db.ts";
import { AppError } from "../errors.ts";
import type { ProjectQuotas } from "../store/quotas.ts";
import type { SecretBox } from "./box.ts";

export const SECRET_ENV_PREFIX = "GRADEBOX_SECRET_";
/** A server environment variable a project may name: the operator decides what to expose under this prefix. */
export const SecretEnvName = z
  .string()
  .regex(
    /^GRADEBOX_SECRET_[A-Z0-9_]{1,100}$/,
    `must name a server environment variable starting with ${SECRET_ENV_PREFIX} (upper-case letters, digits, '_'): only those are handed to outbound calls`,
  );
/** A project secret's name. */
export const SecretName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
    "a secret name is letters, digits, '.', '_' or '-' (at most 128, starting with a letter or digit)",
  )
  .describe("a project secret's name");
export const MAX_SECRET_BYTES = 8192;

/** A project secret, or a server environment secret granted to the project. */
export type SecretRef = { secret: string } | { env: string };
export const describeRef = (ref: SecretRef) => ("secret" in ref ? `secret "${ref.secret}"` : `server secret ${ref.env}`);

/** A project secret as the API shows it: never its value. */
export const Secret = z
  .object({
    name: SecretName,
    host: z
      .string()
      .nullable()
      .describe("the host the value is sent to (bound by the first model or endpoint that uses it); null: not yet bound"),
    createdAt: z.string().describe("ISO 8601"),
    updatedAt: z.string().describe("ISO 8601: when the value was last set"),
  })
  .describe("a project secret (its value is never shown)")
  .meta({ id: "Secret" });
export type SecretInfo = z.infer<typeof Secret>;

/** A secret that cannot be sent on a call: the item fails as the target's outage would, with this message. */
export class SecretUnavailable extends Error {
  override name = "SecretUnavailable";
}

/** GRADEBOX_SECRET_GRANTS: `NAME=project,project;NAME=*` (a `*` grants it to every project). */
export function parseGrants(text: string): Map<string, Set<string>> {
  const grants = new Map<string, Set<string>>();
  for (const entry of text
    .split(";")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = entry.indexOf("=");
    const name = eq < 0 ? entry : entry.slice(0, eq).trim();
    if (!SecretEnvName.safeParse(name).success) throw new Error(`GRADEBOX_SECRET_GRANTS: "${name}" is not a GRADEBOX_SECRET_… name`);
    const projects = (eq < 0 ? "" : entry.slice(eq + 1))
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    if (projects.length === 0) throw new Error(`GRADEBOX_SECRET_GRANTS: ${name} names no project (NAME=project,project or NAME=*)`);
    grants.set(name, new Set([...(grants.get(name) ?? []), ...projects]));
  }
  return grants;
}

/** The host a URL's secrets are bound to: its host name, lower case (ports and paths do not matter, as for cookies). */
export const hostOf = (url: string) => new URL(url).hostname.toLowerCase();

interface Grant {
  host: string | null;
  migrated: number;
}

interface Row {
  name: string;
  value: string;
  host: string | null;
  created_at: string;
  updated_at: string;
}

const SQL = {
  get: "SELECT * FROM secrets WHERE project = ? AND name = ?",
  list: "SELECT name, host, created_at, updated_at FROM secrets WHERE project = ? ORDER BY name",
  insert: "INSERT INTO secrets (project, name, value, host, created_at, updated_at) VALUES (?, ?, ?, NULL, ?, ?)",
  update: "UPDATE secrets SET value = ?, host = NULL, updated_at = ? WHERE project = ? AND name = ?",
  bind: "UPDATE secrets SET host = ? WHERE project = ? AND name = ? AND host IS NULL",
  delete: "DELETE FROM secrets WHERE project = ? AND name = ?",
  grant: "SELECT host, migrated FROM server_secret_grants WHERE project = ? AND name = ?",
  addGrant: "INSERT INTO server_secret_grants (project, name, host, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
  bindGrant: "UPDATE server_secret_grants SET host = ? WHERE project = ? AND name = ? AND host IS NULL",
  unbind: "UPDATE secrets SET host = NULL WHERE project = ? AND name = ? AND host = ?",
  unbindGrant: "UPDATE server_secret_grants SET host = NULL WHERE project = ? AND name = ? AND host = ?",
  modelUsers: "SELECT key FROM models WHERE project = ? AND api_key_secret = ?",
  endpointConfigs: "SELECT key, config FROM graders WHERE project = ? AND kind = 'endpoint'",
};

const changed = (project: string) => ({ kind: "graders" as const, project });
const info = (r: Omit<Row, "value">): SecretInfo => ({ name: r.name, host: r.host, createdAt: r.created_at, updatedAt: r.updated_at });

export class Secrets {
  /** what calls read: `project␀secret|env␀name` -> value and bound host (dropped by every change of the project) */
  private readonly cache = new Map<string, Promise<{ value: string; host: string | null } | undefined>>();

  constructor(
    private readonly db: Db,
    /** undefined: no key configured, so project secrets cannot be stored (server ones still work) */
    private readonly box: SecretBox | undefined,
    private readonly grants: Map<string, Set<string>>,
    /** a new secret past the project's quota is refused */
    private readonly quotas: ProjectQuotas,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    db.subscribe((change) => {
      if (change.kind === "graders") this.forget(change.project);
      else if (change.kind === "reset") this.cache.clear();
    });
  }

  private forget(project: string): void {
    for (const key of this.cache.keys()) if (key.startsWith(`${project}\0`)) this.cache.delete(key);
  }

  private sealer(): SecretBox {
    if (!this.box) {
      throw new AppError(
        "SECRETS_NOT_CONFIGURED",
        "this server has no secrets key: its operator must set GRADEBOX_SECRETS_KEY (32 bytes, hex or base64; the same on every node)",
      );
    }
    return this.box;
  }

  async put(project: string, name: string, value: string): Promise<{ secret: SecretInfo; created: boolean }> {
    const box = this.sealer();
    const sealed = box.seal(project, name, value);
    const now = new Date().toISOString();
    const created = await this.db.tx(async (q, publish) => {
      await this.quotas.lock(q, project);
      const updated = await q.run(SQL.update, [sealed, now, project, name]);
      if (updated === 0) {
        await this.quotas.checkOne(q, project, "secrets");
        await q.run(SQL.insert, [project, name, sealed, now, now]);
      }
      publish(changed(project));
      return updated === 0;
    });
    const row = await this.db.get<Row>(SQL.get, [project, name]);
    return { secret: info(row as Row), created };
  }

  async list(project: string): Promise<SecretInfo[]> {
    return (await this.db.all<Omit<Row, "value">>(SQL.list, [project])).map(info);
  }

  async get(project: string, name: string): Promise<SecretInfo> {
    const row = await this.db.get<Row>(SQL.get, [project, name]);
    if (!row) throw notFound(project, name);
    return info(row);
  }

  /** Deletes a secret no model or endpoint of the project names. */
  delete(project: string, name: string): Promise<void> {
    return this.db.tx(async (q, publish) => {
      if (!(await q.get<Row>(SQL.get, [project, name]))) throw notFound(project, name);
      const users = await this.users(q, project, name);
      if (users.length > 0) {
        throw new AppError("SECRET_IN_USE", `secret "${name}" is used by ${users.join(", ")}; delete those first`, { usedBy: users });
      }
      await q.run(SQL.delete, [project, name]);
      publish(changed(project));
    });
  }

  private async users(q: Queryable, project: string, name: string): Promise<string[]> {
    const models = (await q.all<{ key: string }>(SQL.modelUsers, [project, name])).map((r) => `model "${r.key}"`);
    const endpoints = (await q.all<{ key: string; config: string | null }>(SQL.endpointConfigs, [project]))
      .filter((r) =>
        Object.values((JSON.parse(r.config ?? "{}") as { headersSecret?: Record<string, string> }).headersSecret ?? {}).includes(name),
      )
      .map((r) => `grader "${r.key}"`);
    return [...models, ...endpoints];
  }

  /**
   * At registration: the project may use `ref`, and its value may go to `host` (binding it there
   * when it is bound nowhere yet). Throws the error the route answers; answers whether this call
   * bound it.
   */
  private async bind(project: string, ref: SecretRef, host: string): Promise<boolean> {
    const found = await this.bindOrRead(project, ref, host);
    if (found === undefined) {
      if ("secret" in ref) throw notFound(project, ref.secret);
      throw new AppError("INVALID_REQUEST", unavailableEnv(project, ref.env));
    }
    if (found.host !== host) {
      throw new AppError(
        "SECRET_HOST_MISMATCH",
        `${describeRef(ref)} is bound to host ${found.host}, so it is not sent to ${host}; ` +
          ("secret" in ref
            ? `set it again (PUT /v1/projects/${project}/secrets/${ref.secret}) to use it with ${host}`
            : "ask the operator to grant it again"),
        { boundHost: found.host },
      );
    }
    return found.bound;
  }

  /**
   * At registration, for every secret an endpoint's headers or a model's key name (see bind). The
   * answer undoes the bindings this call made, for a registration that then failed (a mistyped URL
   * must not cost the user setting the secret again); one bound before stays.
   */
  async bindAll(project: string, refs: SecretRef[], url: string): Promise<() => Promise<void>> {
    const host = hostOf(url);
    const made: SecretRef[] = [];
    const undo = async () => {
      if (made.length === 0) return;
      await this.db.tx(async (q, publish) => {
        for (const ref of made) {
          if ("secret" in ref) await q.run(SQL.unbind, [project, ref.secret, host]);
          else await q.run(SQL.unbindGrant, [project, ref.env, host]);
        }
        publish(changed(project));
      });
    };
    try {
      for (const ref of refs) if (await this.bind(project, ref, host)) made.push(ref);
    } catch (error) {
      await undo();
      throw error;
    }
    return undo;
  }

  /** At call time: an endpoint's secret headers for a request to its URL. */
  async headers(project: string, spec: { url: string; headersEnv?: Record<string, string>; headersSecret?: Record<string, string> }) {
    const headers: Record<string, string> = {};
    for (const [header, ref] of headerRefs(spec)) headers[header] = await this.value(project, ref, hostOf(spec.url));
    return headers;
  }

  /** At call time: a model's API key, if it names one. */
  async apiKey(model: { project: string; baseURL: string; apiKeyEnv?: string; apiKeySecret?: string }): Promise<string | undefined> {
    const ref = apiKeyRef(model);
    return ref && this.value(model.project, ref, hostOf(model.baseURL));
  }

  /** At call time: the value to send to `host`; SecretUnavailable when the project may not send it there. */
  async value(project: string, ref: SecretRef, host: string): Promise<string> {
    const key = "secret" in ref ? `${project}\0secret\0${ref.secret}` : `${project}\0env\0${ref.env}`;
    let entry = this.cache.get(key);
    if (!entry) {
      entry = this.load(project, ref);
      this.cache.set(key, entry);
      entry.catch(() => this.cache.delete(key));
    }
    let found = await entry;
    if (found && found.host === null) {
      // set again since it was bound: the first call binds it, as registration would
      this.cache.delete(key);
      await this.bindOrRead(project, ref, host);
      found = await this.load(project, ref);
    }
    if (!found) {
      throw new SecretUnavailable(
        "secret" in ref ? `${describeRef(ref)} no longer exists in project "${project}"; set it again` : unavailableEnv(project, ref.env),
      );
    }
    if (found.host !== host)
      throw new SecretUnavailable(`${describeRef(ref)} is bound to host ${found.host}, not ${host}; it was not sent`);
    return found.value;
  }

  private async load(project: string, ref: SecretRef): Promise<{ value: string; host: string | null } | undefined> {
    if ("secret" in ref) {
      const row = await this.db.get<Row>(SQL.get, [project, ref.secret]);
      if (!row) return undefined;
      const value = this.box?.open(project, ref.secret, row.value);
      if (value === undefined) throw new SecretUnavailable(`${describeRef(ref)} cannot be read with this server's GRADEBOX_SECRETS_KEY`);
      return { value, host: row.host };
    }
    const grant = await this.db.get<Grant>(SQL.grant, [project, ref.env]);
    const value = this.env[ref.env];
    if (!value || !this.granted(project, ref.env, grant)) return undefined;
    return { value, host: grant?.host ?? null };
  }

  /** A server secret is the project's while the operator grants it, or since migration 0009 granted it. */
  private granted(project: string, name: string, row: Grant | undefined): boolean {
    if (row?.migrated) return true;
    const projects = this.grants.get(name);
    return projects !== undefined && (projects.has(project) || projects.has("*"));
  }

  /** Binds `ref` to `host` when it is bound nowhere; its bound host afterwards and whether this call bound it, or undefined when the project cannot use it. */
  private async bindOrRead(project: string, ref: SecretRef, host: string): Promise<{ host: string; bound: boolean } | undefined> {
    return this.db.tx(async (q, publish) => {
      if ("secret" in ref) {
        const row = await q.get<Row>(SQL.get, [project, ref.secret]);
        if (!row) return undefined;
        if (row.host !== null) return { host: row.host, bound: false };
        // another node may have bound it since the read
        if ((await q.run(SQL.bind, [host, project, ref.secret])) === 0) {
          const again = (await q.get<Row>(SQL.get, [project, ref.secret]))?.host;
          return again ? { host: again, bound: false } : undefined;
        }
      } else {
        if (!this.env[ref.env]) return undefined;
        const grant = await q.get<Grant>(SQL.grant, [project, ref.env]);
        if (!this.granted(project, ref.env, grant)) return undefined;
        if (grant?.host) return { host: grant.host, bound: false };
        const written = grant
          ? await q.run(SQL.bindGrant, [host, project, ref.env])
          : await q.run(SQL.addGrant, [project, ref.env, host, new Date().toISOString()]);
        if (written === 0) {
          const again = (await q.get<Grant>(SQL.grant, [project, ref.env]))?.host;
          return again ? { host: again, bound: false } : undefined;
        }
      }
      publish(changed(project));
      return { host, bound: true };
    });
  }
}

const notFound = (project: string, name: string) =>
  new AppError(
    "SECRET_NOT_FOUND",
    `project "${project}" has no secret "${name}"; set it first (PUT /v1/projects/${project}/secrets/${name})`,
  );

// the same words whether the variable is unset, set for other projects, or not granted: a name tells nothing
const unavailableEnv = (project: string, name: string) =>
  `no server secret ${name} is available to project "${project}"; ask the operator to set it and grant it to this project (GRADEBOX_SECRET_GRANTS), or store your own (PUT /v1/projects/${project}/secrets/{name})`;

/** What an endpoint's headers name, header by header. */
export function headerRefs(spec: {
  headersEnv?: Record<string, string>;
  headersSecret?: Record<string, string>;
}): Array<[string, SecretRef]> {
  return [
    ...Object.entries(spec.headersEnv ?? {}).map(([h, env]): [string, SecretRef] => [h, { env }]),
    ...Object.entries(spec.headersSecret ?? {}).map(([h, secret]): [string, SecretRef] => [h, { secret }]),
  ];
}

/** What a model's API key names, if anything. */
export function apiKeyRef(model: { apiKeyEnv?: string; apiKeySecret?: string }): SecretRef | undefined {
  return model.apiKeySecret ? { secret: model.apiKeySecret } : model.apiKeyEnv ? { env: model.apiKeyEnv } : undefined;
}

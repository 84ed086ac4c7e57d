-- Secrets belong to a project. `secrets` holds the values a project stores through the API
-- (AES-256-GCM under the operator's key; never returned), with the host each may be sent to:
-- bound by the first model or endpoint that uses it, cleared when the value is set again.
-- `server_secret_grants` says which project may use which server environment secret
-- (GRADEBOX_SECRET_*) and the host it is bound to. The operator grants with
-- GRADEBOX_SECRET_GRANTS (a row records the host at first use); the rows below keep every
-- registration made before this migration working for the project that made it.
CREATE TABLE secrets (
  project    TEXT NOT NULL,
  name       TEXT NOT NULL,
  value      TEXT NOT NULL,
  host       TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (project, name)
) STRICT;

CREATE TABLE server_secret_grants (
  project    TEXT NOT NULL,
  name       TEXT NOT NULL,
  host       TEXT,
  -- 1: written by this migration, a grant in itself; 0: a binding of the operator's grant, which
  -- lasts only as long as GRADEBOX_SECRET_GRANTS names the project
  migrated   INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  PRIMARY KEY (project, name)
) STRICT;

ALTER TABLE models ADD COLUMN api_key_secret TEXT;

INSERT OR IGNORE INTO server_secret_grants (project, name, host, migrated, created_at)
  SELECT project, api_key_env, NULL, 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now') FROM models WHERE api_key_env IS NOT NULL;
INSERT OR IGNORE INTO server_secret_grants (project, name, host, migrated, created_at)
  SELECT g.project, h.value, NULL, 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  FROM graders g, json_each(g.config, '$.headersEnv') h
  WHERE g.kind = 'endpoint' AND json_type(g.config, '$.headersEnv') = 'object';

-- Secrets belong to a project: see ../0009_secrets.sql.
CREATE TABLE secrets (
  project    TEXT NOT NULL,
  name       TEXT NOT NULL,
  value      TEXT NOT NULL,
  host       TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (project, name)
);

CREATE TABLE server_secret_grants (
  project    TEXT NOT NULL,
  name       TEXT NOT NULL,
  host       TEXT,
  -- 1: written by this migration, a grant in itself; 0: a binding of the operator's grant, which
  -- lasts only as long as GRADEBOX_SECRET_GRANTS names the project
  migrated   INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  PRIMARY KEY (project, name)
);

ALTER TABLE models ADD COLUMN api_key_secret TEXT;

INSERT INTO server_secret_grants (project, name, host, migrated, created_at)
  SELECT project, api_key_env, NULL, 1, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
  FROM models WHERE api_key_env IS NOT NULL
  ON CONFLICT DO NOTHING;
INSERT INTO server_secret_grants (project, name, host, migrated, created_at)
  SELECT g.project, h.value, NULL, 1, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
  FROM graders g, json_each_text((g.config::json) -> 'headersEnv') h
  WHERE g.kind = 'endpoint' AND json_typeof((g.config::json) -> 'headersEnv') = 'object'
  ON CONFLICT DO NOTHING;

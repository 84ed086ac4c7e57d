-- Tenants: an API key belongs to one project and is stored only as a SHA-256 hash.
CREATE TABLE projects (
  name       TEXT PRIMARY KEY,
  created_at TEXT NOT NULL
);

CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,            -- shown in listings, used to revoke
  project    TEXT NOT NULL REFERENCES projects (name),
  prefix     TEXT NOT NULL,               -- the first characters of the key, to recognise it
  hash       TEXT NOT NULL UNIQUE,        -- sha256(key), hex
  label      TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  revoked_at TEXT
);
CREATE INDEX api_keys_by_project ON api_keys (project);

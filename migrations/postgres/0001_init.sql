-- PostgreSQL: the same schema as ../0001_init.sql (the numbering is shared; TEXT timestamps are ISO 8601, as in SQLite).
-- Function graders, one row per (project, key).
CREATE TABLE graders (
  id            TEXT PRIMARY KEY,
  project       TEXT NOT NULL,
  key           TEXT NOT NULL,
  kind          TEXT NOT NULL DEFAULT 'function',
  description   TEXT NOT NULL DEFAULT '',
  source        TEXT NOT NULL,          -- as submitted
  compiled      TEXT NOT NULL,          -- the self-contained script the sandbox runs
  source_sha256 TEXT NOT NULL,
  locked        INTEGER NOT NULL DEFAULT 0 CHECK (locked IN (0, 1)),
  warnings      TEXT NOT NULL DEFAULT '[]',  -- JSON array of strings
  created_at    TEXT NOT NULL,
  updated_at    TEXT NOT NULL,
  UNIQUE (project, key)
);

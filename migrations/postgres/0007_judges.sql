-- Judge graders: a project registers the OpenAI-compatible models its judges may call (no
-- secret is stored: api_key_env names a server environment variable), and a grader of kind
-- 'judge' keeps its definition as JSON in config and refers to its model. A model cannot be
-- deleted while a grader refers to it.
CREATE TABLE models (
  id              TEXT PRIMARY KEY,
  project         TEXT NOT NULL,
  key             TEXT NOT NULL,
  base_url        TEXT NOT NULL,
  model           TEXT NOT NULL,
  api_key_env     TEXT,
  max_concurrency INTEGER NOT NULL,
  timeout_ms      INTEGER NOT NULL,
  created_at      TEXT NOT NULL,
  UNIQUE (project, key)
);

ALTER TABLE graders ADD COLUMN config TEXT;
ALTER TABLE graders ADD COLUMN model_id TEXT REFERENCES models (id);
CREATE INDEX graders_by_model ON graders (model_id);

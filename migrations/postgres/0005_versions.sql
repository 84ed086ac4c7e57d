-- Versions: every change to a grader stores a new numbered version and makes it current. The
-- graders row keeps the current version's source and compiled script (the hot path reads one
-- row); grader_versions keeps every version. Existing graders become version 1, losing nothing.
ALTER TABLE graders ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

CREATE TABLE grader_versions (
  grader_id     TEXT NOT NULL REFERENCES graders (id) ON DELETE CASCADE,
  version       INTEGER NOT NULL,
  description   TEXT NOT NULL,
  source        TEXT NOT NULL,
  compiled      TEXT NOT NULL,
  source_sha256 TEXT NOT NULL,
  warnings      TEXT NOT NULL,
  created_at    TEXT NOT NULL,
  PRIMARY KEY (grader_id, version)
);

INSERT INTO grader_versions (grader_id, version, description, source, compiled, source_sha256, warnings, created_at)
  SELECT id, 1, description, source, compiled, source_sha256, warnings, created_at FROM graders WHERE kind = 'function';

-- A combined grader's part follows the part's current version, or stays on a pinned one.
ALTER TABLE grader_parts ADD COLUMN part_version INTEGER;

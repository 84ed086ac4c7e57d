-- Grade tokens: grade-only credentials that can sit in a URL, for trainers that send no
-- Authorization header (OpenRLHF's --reward.remote_url, NeMo Gym's resources servers). Each is
-- bound to one grader of one project and to grading only; stored as a SHA-256 hash like an API
-- key. `options` is the token's JSON settings (how a trainer's request becomes threads); the
-- server checks it, as it checks api_keys.role.
CREATE TABLE grade_tokens (
  id         TEXT PRIMARY KEY,            -- shown in listings, used to revoke
  project    TEXT NOT NULL REFERENCES projects (name),
  grader_key TEXT NOT NULL,               -- the grader it grades with (by key: a re-created grader keeps its tokens)
  prefix     TEXT NOT NULL,               -- the first characters of the token, to recognise it
  hash       TEXT NOT NULL UNIQUE,        -- sha256(token), hex
  label      TEXT NOT NULL DEFAULT '',
  options    TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  revoked_at TEXT
);
CREATE INDEX grade_tokens_by_grader ON grade_tokens (project, grader_key);

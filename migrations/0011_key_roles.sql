-- Roles of API keys: an admin key may also manage its project's keys over HTTP; a grader key may
-- do everything else. The first key of each project is its admin (as a new project's first key
-- is), every later one a grader key. The server checks the value (no CHECK constraint: a role
-- added later needs no table rebuild on SQLite).
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'grader';
UPDATE api_keys SET role = 'admin'
  WHERE id IN (SELECT k.id FROM api_keys k
               WHERE NOT EXISTS (SELECT 1 FROM api_keys o
                                 WHERE o.project = k.project AND (o.created_at < k.created_at OR (o.created_at = k.created_at AND o.id < k.id))));

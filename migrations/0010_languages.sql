-- Languages: a function grader's source is TypeScript/JavaScript or Python, and each version
-- records its own (an update may change it). The graders row keeps the current version's, as it
-- keeps its source and script, so grading reads one row. Every grader stored before is TypeScript.
-- The server checks the value (server/schemas.ts, LANGUAGES): no CHECK constraint, so a language
-- added later needs no table rebuild on SQLite.
ALTER TABLE graders ADD COLUMN language TEXT NOT NULL DEFAULT 'typescript';
ALTER TABLE grader_versions ADD COLUMN language TEXT NOT NULL DEFAULT 'typescript';

-- Quotas: what one project stores is counted from the rows themselves. `bytes` is a row's UTF-8
-- size as written (a version's source, compiled script, samples, description and warnings; a
-- judge's, endpoint's, code or combined grader's definition and description), so a project's use
-- is a sum over its rows, right after any delete (a deleted grader's versions go with it). Rows
-- stored before are measured here.
ALTER TABLE grader_versions ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE graders ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
UPDATE grader_versions SET bytes = length(CAST(source AS BLOB)) + length(CAST(compiled AS BLOB)) + length(CAST(samples AS BLOB))
                                 + length(CAST(description AS BLOB)) + length(CAST(warnings AS BLOB));
UPDATE graders SET bytes = length(CAST(coalesce(config, '') AS BLOB)) + length(CAST(description AS BLOB)) WHERE kind <> 'function';

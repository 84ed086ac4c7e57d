-- Sample threads a grader carries, per version: test_run grades them instead of the built-in
-- sample thread, and an update reports how each one's score changes. JSON array of
-- {thread, expected?}.
ALTER TABLE grader_versions ADD COLUMN samples TEXT NOT NULL DEFAULT '[]';

-- Graders that take their sandbox worker down (crash, V8 abort, hang past the watchdog) three
-- times within ten minutes are quarantined until released or deleted.
ALTER TABLE graders ADD COLUMN quarantined_at TEXT;

CREATE TABLE grader_faults (
  grader_id TEXT NOT NULL REFERENCES graders (id) ON DELETE CASCADE,
  at        TEXT NOT NULL,
  reason    TEXT NOT NULL
);
CREATE INDEX grader_faults_by_grader ON grader_faults (grader_id, at);

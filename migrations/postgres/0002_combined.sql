-- Combined graders: a grader of kind 'combined' scores with its parts (function graders of the
-- same project) and a mode. A part cannot be deleted while a combined grader uses it.
ALTER TABLE graders ADD COLUMN mode TEXT CHECK (mode IS NULL OR mode IN ('weighted', 'any', 'all'));

CREATE TABLE grader_parts (
  combined_id TEXT NOT NULL REFERENCES graders (id) ON DELETE CASCADE,
  position    INTEGER NOT NULL,
  part_id     TEXT NOT NULL REFERENCES graders (id),
  name        TEXT NOT NULL,
  weight      DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (combined_id, position)
);
CREATE INDEX grader_parts_by_part ON grader_parts (part_id);

-- The bytes of a run's FILE artifacts (the delivered diff as a patch). The artifact itself (type, data)
-- stays in runs.artifacts like every other artifact; this row holds what GET …/download answers.
CREATE TABLE artifact_files (
  uid TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  team_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  content_type TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  content BLOB NOT NULL
);

CREATE INDEX artifact_files_run ON artifact_files (run_id);

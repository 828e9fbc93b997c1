-- The bytes of a run's FILE artifacts (the delivered diff as a patch). The artifact itself (type, data)
-- stays in runs.artifacts like every other artifact; this row holds what GET …/download answers.
CREATE TABLE artifact_files (
  uid text COLLATE "C" PRIMARY KEY,
  run_id text COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  team_id text COLLATE "C" NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  content_type text NOT NULL,
  size_bytes bigint NOT NULL,
  content bytea NOT NULL
);

CREATE INDEX artifact_files_run ON artifact_files (run_id);

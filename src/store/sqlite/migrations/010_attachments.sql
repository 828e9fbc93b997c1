-- Image attachments of runs (docs/api.md). The bytes live once per SHA-256 in
-- attachment_blobs, however many runs or follow-ups send the same image; each attachment row names its
-- run and, when it came with a follow-up rather than the create, that follow-up.
CREATE TABLE attachment_blobs (
  sha256 TEXT PRIMARY KEY,
  size_bytes INTEGER NOT NULL,
  content BLOB NOT NULL
);

CREATE TABLE run_attachments (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  team_id TEXT NOT NULL,
  followup_id TEXT REFERENCES followups (id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  file_name TEXT NOT NULL,
  mime_type TEXT NOT NULL,
  sha256 TEXT NOT NULL REFERENCES attachment_blobs (sha256),
  created_at TEXT NOT NULL
);

CREATE INDEX run_attachments_run ON run_attachments (run_id, created_at, position);

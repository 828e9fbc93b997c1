-- Image attachments of runs (docs/api.md). The bytes live once per SHA-256 in
-- attachment_blobs, however many runs or follow-ups send the same image; each attachment row names its
-- run and, when it came with a follow-up rather than the create, that follow-up.
CREATE TABLE attachment_blobs (
  sha256 text COLLATE "C" PRIMARY KEY,
  size_bytes bigint NOT NULL,
  content bytea NOT NULL
);

CREATE TABLE run_attachments (
  id text COLLATE "C" PRIMARY KEY,
  run_id text COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  team_id text COLLATE "C" NOT NULL,
  followup_id text COLLATE "C" REFERENCES followups (id) ON DELETE CASCADE,
  position integer NOT NULL,
  file_name text NOT NULL,
  mime_type text NOT NULL,
  sha256 text COLLATE "C" NOT NULL REFERENCES attachment_blobs (sha256),
  created_at text COLLATE "C" NOT NULL
);

CREATE INDEX run_attachments_run ON run_attachments (run_id, created_at, position);

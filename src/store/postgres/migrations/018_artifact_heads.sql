-- The start of each FILE artifact (the first 262144 bytes: ARTIFACT_HEAD_BYTES in store.ts), kept apart
-- from its content so that a page showing the start of a 30 MB patch reads 256 KiB, not 30 MB.
CREATE TABLE artifact_heads (
  uid text COLLATE "C" PRIMARY KEY REFERENCES artifact_files (uid) ON DELETE CASCADE,
  head bytea NOT NULL
);

INSERT INTO artifact_heads (uid, head) SELECT uid, substring(content FROM 1 FOR 262144) FROM artifact_files;

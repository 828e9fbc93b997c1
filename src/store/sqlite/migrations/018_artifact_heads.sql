-- The start of each FILE artifact (the first 262144 bytes: ARTIFACT_HEAD_BYTES in store.ts), kept apart
-- from its content so that a page showing the start of a 30 MB patch reads 256 KiB, not 30 MB: in SQLite a
-- column stored after a large BLOB, or a substr() of it, walks the BLOB's whole overflow chain.
CREATE TABLE artifact_heads (
  uid TEXT PRIMARY KEY REFERENCES artifact_files (uid) ON DELETE CASCADE,
  head BLOB NOT NULL
);

INSERT INTO artifact_heads (uid, head) SELECT uid, substr(content, 1, 262144) FROM artifact_files;

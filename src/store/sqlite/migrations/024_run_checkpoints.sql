-- Checkpoints of runs (docs/runtime.md#checkpoints): the latest one of each run, from which another
-- worker continues it. Written only by the worker that holds the run (a fenced upsert), replaced by each
-- later checkpoint, and dropped with the run's workspace by retention.
CREATE TABLE run_checkpoints (
  run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  -- The run's execution when it was taken.
  execution INTEGER NOT NULL,
  taken_at TEXT NOT NULL,
  worker_id TEXT NOT NULL,
  -- Bytes the checkpoint took: the snapshot below plus the git bundle pushed for the hidden ref.
  size_bytes INTEGER NOT NULL,
  -- For a run with a repository: the commit of refs/dispatch/checkpoints/<run> on its remote, which
  -- holds the workspace; NULL when the workspace is in the snapshot.
  ref_sha TEXT,
  -- A gzip'd tar of what is not in the ref: the agent's area (and the workspace when there is no ref).
  snapshot BLOB NOT NULL
) WITHOUT ROWID;

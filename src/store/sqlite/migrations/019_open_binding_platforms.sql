-- A thread binding's platform is whichever surface registered it (a surface is a folder; Slack and GitHub
-- are two of them), not a fixed list: the table is rebuilt without its CHECK, as SQLite alters constraints.
CREATE TABLE thread_bindings_open (
  run_id TEXT PRIMARY KEY,
  platform TEXT NOT NULL,
  workspace TEXT NOT NULL,
  channel TEXT NOT NULL,
  thread TEXT,
  trigger_ref TEXT,
  requester TEXT NOT NULL,
  created_at TEXT NOT NULL
);
INSERT INTO thread_bindings_open (run_id, platform, workspace, channel, thread, trigger_ref, requester, created_at)
  SELECT run_id, platform, workspace, channel, thread, trigger_ref, requester, created_at FROM thread_bindings;
DROP TABLE thread_bindings;
ALTER TABLE thread_bindings_open RENAME TO thread_bindings;
CREATE INDEX thread_bindings_thread ON thread_bindings (platform, workspace, channel, thread, created_at);

-- Inbound deliveries already handled (Slack event ids, command fingerprints, GitHub delivery ids), so a
-- retry or a redelivery is acknowledged and does nothing, also after a restart.
CREATE TABLE inbox (
  key TEXT PRIMARY KEY,
  source TEXT NOT NULL,
  received_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX inbox_received ON inbox (received_at);

-- Where a run reports to: a Slack thread or a GitHub issue/pull request.
CREATE TABLE thread_bindings (
  run_id TEXT PRIMARY KEY,
  platform TEXT NOT NULL CHECK (platform IN ('slack', 'github')),
  -- Slack team id, or GitHub "owner/repo".
  workspace TEXT NOT NULL,
  -- Slack channel id, or GitHub issue/PR number.
  channel TEXT NOT NULL,
  -- Slack thread ts (set once the status card is the thread root for slash commands); null on GitHub.
  thread TEXT,
  -- The message ts or comment id that asked for the run (reactions go there); null for slash commands.
  trigger_ref TEXT,
  -- Slack user id or GitHub login of the requester (mentioned in the final reply).
  requester TEXT NOT NULL,
  created_at TEXT NOT NULL
);

CREATE INDEX thread_bindings_thread ON thread_bindings (platform, workspace, channel, thread, created_at);

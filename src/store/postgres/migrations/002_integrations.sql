-- Inbound deliveries already handled (Slack event ids, command fingerprints, GitHub delivery ids), so a
-- retry or a redelivery is acknowledged and does nothing, also after a restart.
CREATE TABLE inbox (
  key text COLLATE "C" PRIMARY KEY,
  source text NOT NULL,
  received_at text COLLATE "C" NOT NULL
);

CREATE INDEX inbox_received ON inbox (received_at);

-- Where a run reports to: a Slack thread or a GitHub issue/pull request.
CREATE TABLE thread_bindings (
  run_id text COLLATE "C" PRIMARY KEY,
  platform text COLLATE "C" NOT NULL CHECK (platform IN ('slack', 'github')),
  -- Slack team id, or GitHub "owner/repo".
  workspace text COLLATE "C" NOT NULL,
  -- Slack channel id, or GitHub issue/PR number.
  channel text COLLATE "C" NOT NULL,
  -- Slack thread ts (set once the status card is the thread root for slash commands); null on GitHub.
  thread text COLLATE "C",
  -- The message ts or comment id that asked for the run (reactions go there); null for slash commands.
  trigger_ref text,
  -- Slack user id or GitHub login of the requester (mentioned in the final reply).
  requester text NOT NULL,
  created_at text COLLATE "C" NOT NULL
);

CREATE INDEX thread_bindings_thread ON thread_bindings (platform, workspace, channel, thread, created_at);

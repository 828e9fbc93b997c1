-- Settings of one chat channel (a Slack channel of a workspace): for now its default repository, which
-- runs started there work in unless the command names one (docs/delivery.md).
-- A cleared repository keeps the row, so who cleared it and when stay known.
CREATE TABLE channel_settings (
  platform TEXT NOT NULL,
  workspace TEXT NOT NULL,
  channel TEXT NOT NULL,
  repository TEXT,
  base_branch TEXT,
  updated_by TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (platform, workspace, channel)
);

-- Settings of one chat channel (a Slack channel of a workspace): for now its default repository, which
-- runs started there work in unless the command names one (docs/delivery.md).
-- A cleared repository keeps the row, so who cleared it and when stay known.
CREATE TABLE channel_settings (
  platform text COLLATE "C" NOT NULL,
  workspace text COLLATE "C" NOT NULL,
  channel text COLLATE "C" NOT NULL,
  repository text,
  base_branch text,
  updated_by text NOT NULL,
  updated_at text COLLATE "C" NOT NULL,
  PRIMARY KEY (platform, workspace, channel)
);

-- Teams, principals and API keys (keys are stored only as SHA-256 hashes).
CREATE TABLE teams (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL
);

CREATE TABLE principals (
  id TEXT PRIMARY KEY,
  team_id TEXT NOT NULL REFERENCES teams (id),
  type TEXT NOT NULL CHECK (type IN ('user', 'service_account')),
  display_name TEXT NOT NULL,
  email TEXT,
  created_at TEXT NOT NULL
);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  principal_id TEXT NOT NULL REFERENCES principals (id),
  name TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('admin', 'member', 'read')),
  hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  created_at TEXT NOT NULL,
  revoked_at TEXT
);

-- The runs table is also the queue: QUEUED rows ordered by queued_at are the work to claim.
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  team_id TEXT NOT NULL,
  title TEXT NOT NULL,
  prompt TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('QUEUED', 'INPROGRESS', 'SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED')),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  queued_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  run_time_ms INTEGER NOT NULL DEFAULT 0,
  execution_started_at TEXT,
  execution INTEGER NOT NULL DEFAULT 1,
  session_id TEXT NOT NULL UNIQUE,
  trigger_url TEXT,
  source TEXT NOT NULL,
  creator_uid TEXT NOT NULL,
  creator TEXT NOT NULL,
  config_name TEXT,
  model_id TEXT,
  environment_id TEXT,
  skill_spec TEXT,
  agent_config TEXT NOT NULL,
  agent_skill TEXT,
  status_message TEXT,
  artifacts TEXT NOT NULL DEFAULT '[]',
  request_usage TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT '{}',
  worker_id TEXT,
  lease_expires_at TEXT,
  agent_started INTEGER NOT NULL DEFAULT 0,
  requeue_count INTEGER NOT NULL DEFAULT 0,
  last_event_seq INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX runs_team_updated ON runs (team_id, updated_at, id);
CREATE INDEX runs_team_created ON runs (team_id, created_at, id);
CREATE INDEX runs_team_title ON runs (team_id, title, id);
-- The queue (claim the oldest QUEUED run), the leases to recover, and the count of active runs: each
-- partial index holds only the few rows that are not finished, however many runs are stored.
CREATE INDEX runs_queued ON runs (queued_at, id) WHERE state = 'QUEUED';
CREATE INDEX runs_leases ON runs (lease_expires_at) WHERE state = 'INPROGRESS';
CREATE INDEX runs_active ON runs (state) WHERE state IN ('QUEUED', 'INPROGRESS');

CREATE TABLE run_events (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  at TEXT NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE followups (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  message TEXT NOT NULL,
  mode TEXT NOT NULL,
  outcome TEXT NOT NULL,
  created_at TEXT NOT NULL,
  delivered_at TEXT,
  delivered_execution INTEGER
);

CREATE INDEX followups_pending ON followups (run_id, created_at) WHERE delivered_at IS NULL;

-- Remembered 2xx responses of requests sent with an Idempotency-Key, per principal, for 24 h.
CREATE TABLE idempotency_keys (
  principal_id TEXT NOT NULL,
  key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  response TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (principal_id, key)
) WITHOUT ROWID;

-- The PostgreSQL schema mirrors the SQLite one (src/store/sqlite/migrations) column for column, so that both
-- stores share their row mappers: timestamps are ISO-8601 text in UTC, JSON is text (json where statements
-- look inside it), booleans are 0/1. Text compares byte-wise (COLLATE "C") as in SQLite, whatever the
-- database's locale: keyset pagination, ISO timestamps and the queue order depend on it.

-- Teams, principals and API keys (keys are stored only as SHA-256 hashes).
CREATE TABLE teams (
  id text COLLATE "C" PRIMARY KEY,
  name text NOT NULL,
  created_at text COLLATE "C" NOT NULL
);

CREATE TABLE principals (
  id text COLLATE "C" PRIMARY KEY,
  team_id text COLLATE "C" NOT NULL REFERENCES teams (id),
  type text NOT NULL CHECK (type IN ('user', 'service_account')),
  display_name text NOT NULL,
  email text,
  created_at text COLLATE "C" NOT NULL
);

CREATE TABLE api_keys (
  id text COLLATE "C" PRIMARY KEY,
  principal_id text COLLATE "C" NOT NULL REFERENCES principals (id),
  name text NOT NULL,
  role text NOT NULL CHECK (role IN ('admin', 'member', 'read')),
  hash text NOT NULL UNIQUE,
  prefix text COLLATE "C" NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  revoked_at text COLLATE "C"
);

-- The runs table is also the queue: QUEUED rows ordered by queued_at are the work to claim
-- (FOR UPDATE SKIP LOCKED, so concurrent workers on any replica never wait for each other).
CREATE TABLE runs (
  id text COLLATE "C" PRIMARY KEY,
  team_id text COLLATE "C" NOT NULL,
  title text COLLATE "C" NOT NULL,
  prompt text NOT NULL,
  state text NOT NULL CHECK (state IN ('QUEUED', 'INPROGRESS', 'SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED')),
  created_at text COLLATE "C" NOT NULL,
  updated_at text COLLATE "C" NOT NULL,
  queued_at text COLLATE "C" NOT NULL,
  started_at text COLLATE "C",
  finished_at text COLLATE "C",
  run_time_ms bigint NOT NULL DEFAULT 0,
  execution_started_at text COLLATE "C",
  execution integer NOT NULL DEFAULT 1,
  session_id text COLLATE "C" NOT NULL UNIQUE,
  trigger_url text,
  source text COLLATE "C" NOT NULL,
  creator_uid text COLLATE "C" NOT NULL,
  creator text NOT NULL,
  config_name text COLLATE "C",
  model_id text COLLATE "C",
  environment_id text COLLATE "C",
  skill_spec text COLLATE "C",
  agent_config text NOT NULL,
  agent_skill text,
  status_message text,
  artifacts json NOT NULL DEFAULT '[]',
  request_usage text NOT NULL,
  metadata json NOT NULL DEFAULT '{}',
  worker_id text COLLATE "C",
  lease_expires_at text COLLATE "C",
  agent_started integer NOT NULL DEFAULT 0,
  requeue_count integer NOT NULL DEFAULT 0,
  last_event_seq integer NOT NULL DEFAULT 0
);

CREATE INDEX runs_team_updated ON runs (team_id, updated_at, id);
CREATE INDEX runs_team_created ON runs (team_id, created_at, id);
CREATE INDEX runs_team_title ON runs (team_id, title, id);
-- The queue (claim the oldest QUEUED run), the leases to recover, and the count of active runs: each
-- partial index holds only the few rows that are not finished, however many runs are stored.
CREATE INDEX runs_queued ON runs (queued_at, id) WHERE state = 'QUEUED';
CREATE INDEX runs_leases ON runs (lease_expires_at) WHERE state = 'INPROGRESS';
CREATE INDEX runs_active ON runs (state) WHERE state IN ('QUEUED', 'INPROGRESS');

-- `q` of the runs list matches the run's title and prompt after foldCase (src/store/fold-case.ts), which
-- SQL cannot compute the same way: the folded text is stored with the run (title and prompt never change).
-- It lives apart from runs so that reading a run does not carry a second copy of its prompt.
CREATE TABLE run_search_text (
  run_id text COLLATE "C" PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  title text NOT NULL,
  prompt text NOT NULL
);

CREATE TABLE run_events (
  run_id text COLLATE "C" NOT NULL,
  seq integer NOT NULL,
  at text COLLATE "C" NOT NULL,
  type text NOT NULL,
  data text NOT NULL,
  PRIMARY KEY (run_id, seq)
);

CREATE TABLE followups (
  id text COLLATE "C" PRIMARY KEY,
  run_id text COLLATE "C" NOT NULL,
  message text NOT NULL,
  mode text NOT NULL,
  outcome text NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  delivered_at text COLLATE "C",
  delivered_execution integer
);

CREATE INDEX followups_pending ON followups (run_id, created_at) WHERE delivered_at IS NULL;

-- Remembered 2xx responses of requests sent with an Idempotency-Key, per principal, for 24 h.
CREATE TABLE idempotency_keys (
  principal_id text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  request_hash text NOT NULL,
  response text NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  PRIMARY KEY (principal_id, key)
);

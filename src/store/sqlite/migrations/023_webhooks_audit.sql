-- Events out (docs/api.md, docs/runtime.md): a team's webhook endpoints, the run events sent to them
-- and each event's delivery to each endpoint (an outbox: written in the transaction that changes the
-- run, claimed with a lease, retried, failed for good after the last attempt); the audit log of who
-- did what; and the span each run's traces link to.

CREATE TABLE webhook_endpoints (
  id TEXT PRIMARY KEY,
  team_id TEXT NOT NULL REFERENCES teams (id),
  url TEXT NOT NULL,
  -- JSON array of the event types sent to it.
  events TEXT NOT NULL,
  description TEXT,
  -- whsec_…: the receiver verifies signatures with it, so it is kept as given (shown once, at creation).
  secret TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX webhook_endpoints_team ON webhook_endpoints (team_id, created_at, id);

-- One event of a run, whatever the number of endpoints it goes to: its id is the webhook-id header.
CREATE TABLE webhook_events (
  id TEXT PRIMARY KEY,
  team_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  type TEXT NOT NULL,
  occurred_at TEXT NOT NULL,
  -- What the type adds to the run (previous_state, the follow-up, the delivery), JSON.
  data TEXT NOT NULL,
  -- The run as it was when the event happened (its MCP secret values redacted), JSON.
  run TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE webhook_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id TEXT NOT NULL REFERENCES webhook_events (id),
  event_type TEXT NOT NULL,
  -- Deliveries of one run to one endpoint go out in order (by id).
  run_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'succeeded', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT NOT NULL,
  lease_owner TEXT,
  lease_expires_at TEXT,
  last_attempt_at TEXT,
  last_status INTEGER,
  last_error TEXT,
  response_excerpt TEXT,
  created_at TEXT NOT NULL,
  finished_at TEXT
);

-- Only unfinished rows are indexed for the claim: it stays cheap however many deliveries were made.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id) WHERE state IN ('pending', 'sending');
CREATE INDEX webhook_deliveries_stream ON webhook_deliveries (endpoint_id, run_id, id) WHERE state IN ('pending', 'sending');
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- Who did what (never edited; pruned after DISPATCH_AUDIT_RETENTION_DAYS).
CREATE TABLE audit_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  team_id TEXT NOT NULL,
  at TEXT NOT NULL,
  -- Who: a principal id (user, service account) or a surface's user (slack:T1:U1, github:login).
  actor TEXT NOT NULL,
  actor_name TEXT,
  -- What: run.created, run.cancelled, api_key.revoked, webhook.created, slack.channel_repository_set, …
  action TEXT NOT NULL,
  -- What it was done to: a run id, a key id, a webhook id, a channel.
  target TEXT,
  -- JSON object with the details of the action.
  details TEXT NOT NULL
);

CREATE INDEX audit_events_team ON audit_events (team_id, id);
CREATE INDEX audit_events_team_at ON audit_events (team_id, at);

-- Traces (docs/runtime.md): the span of the request that created a run (a W3C traceparent); each of its
-- executions, a trace of its own, links to it.
CREATE TABLE run_traces (
  run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  traceparent TEXT NOT NULL
) WITHOUT ROWID;

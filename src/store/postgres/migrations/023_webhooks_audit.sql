-- Events out (docs/api.md, docs/runtime.md): a team's webhook endpoints, the run events sent to them
-- and each event's delivery to each endpoint (an outbox: written in the transaction that changes the
-- run, claimed with a lease, retried, failed for good after the last attempt); the audit log of who
-- did what; and the span each run's traces link to.

CREATE TABLE webhook_endpoints (
  id text COLLATE "C" PRIMARY KEY,
  team_id text COLLATE "C" NOT NULL REFERENCES teams (id),
  url text NOT NULL,
  -- JSON array of the event types sent to it.
  events text NOT NULL,
  description text,
  -- whsec_…: the receiver verifies signatures with it, so it is kept as given (shown once, at creation).
  secret text NOT NULL,
  created_by text COLLATE "C" NOT NULL,
  created_at text COLLATE "C" NOT NULL
);

CREATE INDEX webhook_endpoints_team ON webhook_endpoints (team_id, created_at, id);

-- One event of a run, whatever the number of endpoints it goes to: its id is the webhook-id header.
CREATE TABLE webhook_events (
  id text COLLATE "C" PRIMARY KEY,
  team_id text COLLATE "C" NOT NULL,
  run_id text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL,
  occurred_at text COLLATE "C" NOT NULL,
  -- What the type adds to the run (previous_state, the follow-up, the delivery), JSON.
  data text NOT NULL,
  -- The run as it was when the event happened (its MCP secret values redacted), JSON.
  run text NOT NULL
);

CREATE TABLE webhook_deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id text COLLATE "C" NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id text COLLATE "C" NOT NULL REFERENCES webhook_events (id),
  event_type text COLLATE "C" NOT NULL,
  -- Deliveries of one run to one endpoint go out in order (by id).
  run_id text COLLATE "C" NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'sending', 'succeeded', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at text COLLATE "C" NOT NULL,
  lease_owner text,
  lease_expires_at text COLLATE "C",
  last_attempt_at text COLLATE "C",
  last_status integer,
  last_error text,
  response_excerpt text,
  created_at text COLLATE "C" NOT NULL,
  finished_at text COLLATE "C"
);

-- Only unfinished rows are indexed for the claim: it stays cheap however many deliveries were made.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id) WHERE state IN ('pending', 'sending');
CREATE INDEX webhook_deliveries_stream ON webhook_deliveries (endpoint_id, run_id, id) WHERE state IN ('pending', 'sending');
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

-- Who did what (never edited; pruned after DISPATCH_AUDIT_RETENTION_DAYS).
CREATE TABLE audit_events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  team_id text COLLATE "C" NOT NULL,
  at text COLLATE "C" NOT NULL,
  -- Who: a principal id (user, service account) or a surface's user (slack:T1:U1, github:login).
  actor text COLLATE "C" NOT NULL,
  actor_name text,
  -- What: run.created, run.cancelled, api_key.revoked, webhook.created, slack.channel_repository_set, …
  action text COLLATE "C" NOT NULL,
  -- What it was done to: a run id, a key id, a webhook id, a channel.
  target text COLLATE "C",
  -- JSON object with the details of the action.
  details text NOT NULL
);

CREATE INDEX audit_events_team ON audit_events (team_id, id);
CREATE INDEX audit_events_team_at ON audit_events (team_id, at);

-- Traces (docs/runtime.md): the span of the request that created a run (a W3C traceparent); each of its
-- executions, a trace of its own, links to it.
CREATE TABLE run_traces (
  run_id text COLLATE "C" PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  traceparent text NOT NULL
);

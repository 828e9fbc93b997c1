-- The inbox as a durable queue: a verified Slack or GitHub delivery is stored with its payload in the same
-- transaction that records its dedupe keys (inbox), before it is acknowledged, and is handled from here.
-- A delivery acknowledged just before a crash is handled after the restart, once its lease has expired;
-- a handled one is deleted (its dedupe keys stay in inbox).
CREATE TABLE inbox_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  -- 'slack' or 'github': which integration handles it.
  source TEXT NOT NULL,
  -- What the payload is ('slack' body, GitHub event name).
  kind TEXT NOT NULL,
  -- The platform's id of the delivery (Slack event id or dedupe key, X-GitHub-Delivery).
  delivery_id TEXT NOT NULL,
  -- The verified payload (JSON).
  payload TEXT NOT NULL,
  received_at TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  -- Held by lease_owner until then; without an owner, a failed attempt waits until then.
  lease_expires_at TEXT
);

CREATE INDEX inbox_deliveries_due ON inbox_deliveries (source, lease_expires_at, id);
CREATE INDEX inbox_deliveries_received ON inbox_deliveries (received_at);

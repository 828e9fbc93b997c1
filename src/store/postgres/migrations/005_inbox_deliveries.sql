-- The inbox as a durable queue: a verified Slack or GitHub delivery is stored with its payload in the same
-- transaction that records its dedupe keys (inbox), before it is acknowledged, and is handled from here.
-- A delivery acknowledged just before a crash is handled after the restart, once its lease has expired;
-- a handled one is deleted (its dedupe keys stay in inbox).
CREATE TABLE inbox_deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- 'slack' or 'github': which integration handles it.
  source text COLLATE "C" NOT NULL,
  -- What the payload is ('slack' body, GitHub event name).
  kind text NOT NULL,
  -- The platform's id of the delivery (Slack event id or dedupe key, X-GitHub-Delivery).
  delivery_id text NOT NULL,
  -- The verified payload (JSON).
  payload text NOT NULL,
  received_at text COLLATE "C" NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  lease_owner text,
  -- Held by lease_owner until then; without an owner, a failed attempt waits until then.
  lease_expires_at text COLLATE "C"
);

CREATE INDEX inbox_deliveries_due ON inbox_deliveries (source, lease_expires_at, id);
CREATE INDEX inbox_deliveries_received ON inbox_deliveries (received_at);

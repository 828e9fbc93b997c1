-- The notifier: how far it has read the run changes, what each status card last showed, and the outbox
-- of messages to deliver (claimed with a lease, retried, dead-lettered).

-- High-water mark of the run changes read, per notifier: (updated_at, run_id).
CREATE TABLE notifier_cursors (
  name text COLLATE "C" PRIMARY KEY,
  updated_at text COLLATE "C" NOT NULL,
  run_id text COLLATE "C" NOT NULL
);

-- Per run: what its status card last showed (fingerprint without the elapsed time), the run version it
-- was computed from, the card message once posted, and which terminal state already got its reply.
CREATE TABLE notifier_cards (
  run_id text COLLATE "C" PRIMARY KEY,
  version integer NOT NULL,
  fingerprint text NOT NULL,
  run_updated_at text COLLATE "C" NOT NULL,
  -- not_before of the latest card message enqueued (edits are at least the coalescing window apart).
  last_card_at text COLLATE "C",
  -- finished_at of the last terminal state that got its reply (one reply per terminal state of an execution).
  last_final text COLLATE "C",
  -- ts of the card message once chat.postMessage answered.
  card_ts text,
  updated_at text COLLATE "C" NOT NULL
);

CREATE TABLE outbox (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- One logical message, once: "card:<run>:<version>", "final:<run>:<finished_at>", "react:<run>:<finished_at>".
  dedupe_key text COLLATE "C" NOT NULL UNIQUE,
  run_id text COLLATE "C" NOT NULL,
  -- 'card' (post or update of the status card), 'reply', 'reaction'.
  kind text NOT NULL,
  -- Rows of one stream are delivered in order; streams are independent of each other.
  stream text COLLATE "C" NOT NULL,
  -- Where it goes (e.g. "slack:T1:C1"): a rate-limited target pauses only its own rows.
  target text COLLATE "C" NOT NULL,
  payload text NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'dead', 'superseded')),
  attempts integer NOT NULL DEFAULT 0,
  not_before text COLLATE "C" NOT NULL,
  lease_owner text,
  lease_expires_at text COLLATE "C",
  last_error text,
  created_at text COLLATE "C" NOT NULL,
  updated_at text COLLATE "C" NOT NULL
);

-- Only unfinished rows are indexed: the claim query stays cheap however many messages were sent.
CREATE INDEX outbox_due ON outbox (not_before, id) WHERE state IN ('pending', 'sending');
CREATE INDEX outbox_stream ON outbox (stream, id) WHERE state IN ('pending', 'sending');
CREATE INDEX outbox_run_kind ON outbox (run_id, kind, id) WHERE state IN ('pending', 'sending');
CREATE INDEX outbox_state ON outbox (state);

-- The notifier: how far it has read the run changes, what each status card last showed, and the outbox
-- of messages to deliver (claimed with a lease, retried, dead-lettered).

-- High-water mark of the run changes read, per notifier (e.g. "slack"): (updated_at, run_id).
CREATE TABLE notifier_cursors (
  name TEXT PRIMARY KEY,
  updated_at TEXT NOT NULL,
  run_id TEXT NOT NULL
) WITHOUT ROWID;

-- Per run: what its status card last showed (fingerprint without the elapsed time), the run version it
-- was computed from, the card message once posted, and which terminal state already got its reply.
CREATE TABLE notifier_cards (
  run_id TEXT PRIMARY KEY,
  version INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  run_updated_at TEXT NOT NULL,
  -- not_before of the latest card message enqueued (edits are at least the coalescing window apart).
  last_card_at TEXT,
  -- finished_at of the last terminal state that got its reply (one reply per terminal state of an execution).
  last_final TEXT,
  -- ts of the card message once chat.postMessage answered.
  card_ts TEXT,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  -- One logical message, once: "card:<run>:<version>", "final:<run>:<finished_at>", "react:<run>:<finished_at>".
  dedupe_key TEXT NOT NULL UNIQUE,
  run_id TEXT NOT NULL,
  -- 'card' (post or update of the status card), 'reply', 'reaction'.
  kind TEXT NOT NULL,
  -- Rows of one stream are delivered in order; streams are independent of each other.
  stream TEXT NOT NULL,
  -- Where it goes (e.g. "slack:T1:C1"): a rate-limited target pauses only its own rows.
  target TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'dead', 'superseded')),
  attempts INTEGER NOT NULL DEFAULT 0,
  not_before TEXT NOT NULL,
  lease_owner TEXT,
  lease_expires_at TEXT,
  last_error TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- Only unfinished rows are indexed: the claim query stays cheap however many messages were sent.
CREATE INDEX outbox_due ON outbox (not_before, id) WHERE state IN ('pending', 'sending');
CREATE INDEX outbox_stream ON outbox (stream, id) WHERE state IN ('pending', 'sending');
CREATE INDEX outbox_run_kind ON outbox (run_id, kind, id) WHERE state IN ('pending', 'sending');
CREATE INDEX outbox_state ON outbox (state);

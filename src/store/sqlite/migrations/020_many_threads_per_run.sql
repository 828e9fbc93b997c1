-- One run, many threads (docs/surfaces.md): a run is bound to the thread it was asked in (its origin) and
-- to others since (the pull request it opened, a tracker's session). A binding is one thread of a run, and
-- the notifier keeps a status card per binding. `thread_key` names the binding: "<platform>:<workspace>:<channel>".
CREATE TABLE thread_bindings_many (
  run_id TEXT NOT NULL,
  platform TEXT NOT NULL,
  workspace TEXT NOT NULL,
  channel TEXT NOT NULL,
  thread TEXT,
  trigger_ref TEXT,
  requester TEXT NOT NULL,
  created_at TEXT NOT NULL,
  -- When someone last asked the run something from this thread (its final reply then goes here too).
  asked_at TEXT,
  -- 1: bound because the run delivered there (the pull request it opened), not because it was asked
  -- there; such threads add to the run's audience without taking the team's away from an API run.
  adopted INTEGER NOT NULL DEFAULT 0,
  -- Why the thread stopped following the run ("merged", "closed": its pull request is done); null while it follows.
  ended TEXT,
  PRIMARY KEY (run_id, platform, workspace, channel)
) WITHOUT ROWID;
INSERT INTO thread_bindings_many (run_id, platform, workspace, channel, thread, trigger_ref, requester, created_at)
  SELECT run_id, platform, workspace, channel, thread, trigger_ref, requester, created_at FROM thread_bindings;
DROP TABLE thread_bindings;
ALTER TABLE thread_bindings_many RENAME TO thread_bindings;
CREATE INDEX thread_bindings_thread ON thread_bindings (platform, workspace, channel, thread, created_at);

CREATE TABLE notifier_cards_many (
  run_id TEXT NOT NULL,
  thread_key TEXT NOT NULL,
  version INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  run_updated_at TEXT NOT NULL,
  last_card_at TEXT,
  last_final TEXT,
  card_ts TEXT,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (run_id, thread_key)
) WITHOUT ROWID;
INSERT INTO notifier_cards_many
  SELECT c.run_id, b.platform || ':' || b.workspace || ':' || b.channel, c.version, c.fingerprint, c.run_updated_at,
         c.last_card_at, c.last_final, c.card_ts, c.updated_at
    FROM notifier_cards c JOIN thread_bindings b ON b.run_id = c.run_id;
DROP TABLE notifier_cards;
ALTER TABLE notifier_cards_many RENAME TO notifier_cards;

-- The binding an outbox row belongs to: a thread's reply waits for that thread's card.
ALTER TABLE outbox ADD COLUMN thread_key TEXT NOT NULL DEFAULT '';
UPDATE outbox SET thread_key = COALESCE((SELECT b.platform || ':' || b.workspace || ':' || b.channel
  FROM thread_bindings b WHERE b.run_id = outbox.run_id), '');
DROP INDEX outbox_run_kind;
CREATE INDEX outbox_run_kind ON outbox (run_id, thread_key, kind, id) WHERE state IN ('pending', 'sending');

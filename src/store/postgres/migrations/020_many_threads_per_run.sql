-- One run, many threads (docs/surfaces.md): a run is bound to the thread it was asked in (its origin) and
-- to others since (the pull request it opened, a tracker's session). A binding is one thread of a run, and
-- the notifier keeps a status card per binding. `thread_key` names the binding: "<platform>:<workspace>:<channel>".
ALTER TABLE thread_bindings DROP CONSTRAINT thread_bindings_pkey;
ALTER TABLE thread_bindings ADD PRIMARY KEY (run_id, platform, workspace, channel);
-- When someone last asked the run something from this thread (its final reply then goes here too).
ALTER TABLE thread_bindings ADD COLUMN asked_at text COLLATE "C";
-- Bound because the run delivered there (the pull request it opened), not because it was asked there;
-- such threads add to the run's audience without taking the team's away from an API run.
ALTER TABLE thread_bindings ADD COLUMN adopted boolean NOT NULL DEFAULT false;
-- Why the thread stopped following the run ("merged", "closed": its pull request is done); null while it follows.
ALTER TABLE thread_bindings ADD COLUMN ended text;

ALTER TABLE notifier_cards ADD COLUMN thread_key text COLLATE "C" NOT NULL DEFAULT '';
UPDATE notifier_cards c SET thread_key = b.platform || ':' || b.workspace || ':' || b.channel
  FROM thread_bindings b WHERE b.run_id = c.run_id;
ALTER TABLE notifier_cards DROP CONSTRAINT notifier_cards_pkey;
ALTER TABLE notifier_cards ADD PRIMARY KEY (run_id, thread_key);

-- The binding an outbox row belongs to: a thread's reply waits for that thread's card.
ALTER TABLE outbox ADD COLUMN thread_key text COLLATE "C" NOT NULL DEFAULT '';
UPDATE outbox o SET thread_key = b.platform || ':' || b.workspace || ':' || b.channel
  FROM thread_bindings b WHERE b.run_id = o.run_id;
DROP INDEX outbox_run_kind;
CREATE INDEX outbox_run_kind ON outbox (run_id, thread_key, kind, id) WHERE state IN ('pending', 'sending');

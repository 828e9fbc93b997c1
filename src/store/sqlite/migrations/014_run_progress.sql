-- Stall detection: when a run last made progress, i.e. the time of its latest transcript event
-- (every state change appends a `state` event, so this is also at least its latest state change). Set by
-- the statement that numbers each event; appending an event still leaves updated_at alone. The partial
-- index lets the notifier find runs in progress by how long they have been quiet without scanning runs.
ALTER TABLE runs ADD COLUMN last_event_at TEXT;
UPDATE runs SET last_event_at = (SELECT MAX(at) FROM run_events WHERE run_events.run_id = runs.id);
CREATE INDEX runs_progress ON runs (last_event_at, id) WHERE state = 'INPROGRESS';

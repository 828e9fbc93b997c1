-- Runs that wait for a person (docs/architecture.md, "Waiting for a person"): the state BLOCKED, since
-- blocked_at, ended by the timeout (DISPATCH_BLOCKED_TIMEOUT_S) when nobody answers; the index finds those.
ALTER TABLE runs DROP CONSTRAINT runs_state_check;
ALTER TABLE runs ADD CONSTRAINT runs_state_check
  CHECK (state IN ('QUEUED', 'INPROGRESS', 'BLOCKED', 'SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'));
ALTER TABLE runs ADD COLUMN blocked_at text COLLATE "C";
CREATE INDEX runs_blocked ON runs (blocked_at) WHERE state = 'BLOCKED';

-- Runs that wait for a person (docs/architecture.md, "Waiting for a person"): BLOCKED since blocked_at,
-- ended by the timeout (DISPATCH_BLOCKED_TIMEOUT_HOURS) when nobody answers; the index finds those.
ALTER TABLE runs ADD COLUMN blocked_at TEXT;
CREATE INDEX runs_blocked ON runs (blocked_at) WHERE state = 'BLOCKED';

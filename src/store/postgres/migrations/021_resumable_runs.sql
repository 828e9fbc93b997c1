-- Runs survive their worker (docs/architecture.md, "Runs survive their worker"). A run whose worker shut down
-- (it handed the run back) or was lost (its lease expired) stays INPROGRESS with no worker and a
-- resume_reason until another worker claims it and resumes it from its checkpoint. `resumes` counts the
-- resumes after a lost worker in the current execution (DISPATCH_MAX_RESUMES caps them).
ALTER TABLE runs ADD COLUMN resume_reason text COLLATE "C";
ALTER TABLE runs ADD COLUMN resumes integer NOT NULL DEFAULT 0;
CREATE INDEX runs_resumable ON runs (queued_at, id) WHERE resume_reason IS NOT NULL;

-- Run lineage and mode (docs/api.md): the run that spawned a run (Oz's parent_run_id, always of the
-- same team), so that `ancestor_run_id` lists a run's descendants; and the mode of the first execution
-- (normal or plan; a follow-up handoff carries its own mode in followups.mode).
ALTER TABLE runs ADD COLUMN parent_run_id text COLLATE "C";
ALTER TABLE runs ADD COLUMN mode text NOT NULL DEFAULT 'normal' CHECK (mode IN ('normal', 'plan'));
CREATE INDEX runs_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;

-- When an agent identity was last changed (Oz's AgentResponse.updated_at); null until its first update.
ALTER TABLE principals ADD COLUMN updated_at text COLLATE "C";

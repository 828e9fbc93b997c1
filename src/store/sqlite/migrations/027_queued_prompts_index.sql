-- The follow-ups added to a run's prompt before it started (RunItem.submitted_prompt), read on every GET
-- of a run and for every run of a list page: without an index of their own each read scanned the whole
-- follow-ups table (the only other index covers undelivered ones).
CREATE INDEX followups_queued_prompts ON followups (run_id, created_at, id) WHERE outcome = 'queued_prompt';

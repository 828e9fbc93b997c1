-- Budgets that pause and ask (docs/runtime.md, "Budgets"): what a run keeps of its budget as JSON — the
-- extensions people allowed it, the limit it works under, its spend while it works, a pending answer.
ALTER TABLE runs ADD COLUMN budget TEXT;

-- The top of a run's tree of parents (the Warp Platform API's root_run_id, docs/api.md): set at create from
-- the parent's; null for a run without a parent (its own root). Filled in here for the runs already stored.
ALTER TABLE runs ADD COLUMN root_run_id text COLLATE "C";
WITH RECURSIVE tree(id, root) AS (
  SELECT id, id FROM runs WHERE parent_run_id IS NULL
  UNION ALL
  SELECT runs.id, tree.root FROM runs JOIN tree ON runs.parent_run_id = tree.id
)
UPDATE runs SET root_run_id = tree.root FROM tree WHERE tree.id = runs.id AND runs.parent_run_id IS NOT NULL;

-- How many times the run was interrupted (POST /agent/runs/{id}/interrupt): the executor stops the agent's
-- turn under way when it sees the count grow.
ALTER TABLE runs ADD COLUMN interrupts integer NOT NULL DEFAULT 0;

-- Every run was written to runs_active while QUEUED or INPROGRESS and removed from it when it left them:
-- one index entry per create more than the queue needs. The count of active runs (at_capacity) reads
-- runs_queued and runs_leases instead, the partial indexes of the same two states (bench/README.md,
-- "Fifth round: create", has the query plans at 100k runs).
DROP INDEX runs_active;

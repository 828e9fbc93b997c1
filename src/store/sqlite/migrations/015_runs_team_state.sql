-- The web dashboard counts a team's runs by state on every page and after live changes: a covering index
-- makes that a scan of the team's index entries instead of a read of every one of its runs.
CREATE INDEX runs_team_state ON runs (team_id, state);

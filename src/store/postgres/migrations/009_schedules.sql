-- Schedules (docs/api.md): a team's cron-driven agents. The user's fields change through
-- the API; the scheduler's (last_fire_time, last_ran, last_spawn_error) only through a firing, so an
-- edit never clobbers history and a firing never clobbers an edit (it checks `revision`).
CREATE TABLE schedules (
  id text COLLATE "C" PRIMARY KEY,
  team_id text COLLATE "C" NOT NULL,
  -- Sorted byte-wise as on SQLite: the list's order is the same on both stores.
  name text COLLATE "C" NOT NULL,
  -- 5-field cron, evaluated in `timezone` (IANA name; a Dispatch extension, UTC by default).
  cron_schedule text NOT NULL,
  timezone text NOT NULL DEFAULT 'UTC',
  enabled integer NOT NULL CHECK (enabled IN (0, 1)),
  prompt text NOT NULL,
  -- The agent_config each run gets, as given (the run service resolves it at every firing).
  agent_config text NOT NULL DEFAULT '{}',
  metadata text NOT NULL DEFAULT '{}',
  created_by_uid text COLLATE "C" NOT NULL,
  -- Creator JSON (type, uid, display_name, email): whom the runs are for.
  created_by text NOT NULL,
  updated_by text NOT NULL,
  created_at text COLLATE "C" NOT NULL,
  updated_at text COLLATE "C" NOT NULL,
  -- Bumped by every change of the user's fields; a firing prepared from an older revision is refused.
  revision integer NOT NULL DEFAULT 1,
  -- Fire times at or before this never fire: set at creation, at resume and when the cron or timezone
  -- changes, so that neither a paused stretch nor an edit is caught up on.
  active_since text COLLATE "C" NOT NULL,
  -- The latest fire time that made a run; only later ones can fire (missed slots collapse into one).
  last_fire_time text COLLATE "C",
  last_ran text COLLATE "C",
  last_spawn_error text,
  -- Where the runs report (a Slack channel a schedule was created in): becomes each run's thread binding.
  report_platform text COLLATE "C" CHECK (report_platform IN ('slack', 'github')),
  report_workspace text COLLATE "C",
  report_channel text COLLATE "C",
  report_thread text COLLATE "C",
  report_requester text,
  UNIQUE (team_id, name)
);

CREATE INDEX schedules_enabled ON schedules (enabled);
CREATE INDEX schedules_report ON schedules (report_platform, report_workspace, report_channel);

-- One row per firing: the primary key makes each (schedule, fire time) fire at most once, whichever
-- replica or restart gets there; it is written in the same transaction as the run it made.
CREATE TABLE schedule_fires (
  schedule_id text COLLATE "C" NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
  fire_time text COLLATE "C" NOT NULL,
  run_id text COLLATE "C" NOT NULL,
  fired_at text COLLATE "C" NOT NULL,
  PRIMARY KEY (schedule_id, fire_time)
);

-- The schedule a run was fired by, as it was at that firing (its name and cron may change later).
ALTER TABLE runs ADD COLUMN schedule_id text COLLATE "C";
ALTER TABLE runs ADD COLUMN schedule_name text;
ALTER TABLE runs ADD COLUMN schedule_cron text;
ALTER TABLE runs ADD COLUMN schedule_fire_time text COLLATE "C";
CREATE INDEX runs_schedule ON runs (team_id, schedule_id) WHERE schedule_id IS NOT NULL;

import type { RunRecord } from "../../model/run.ts";
import {
  reportRequesterAfter,
  type ScheduleLimits,
  type ScheduleRecord,
  skippedWhileQueuedText,
} from "../../model/schedule.ts";
import { toSchedule } from "../rows.ts";
import type {
  ChannelKey,
  IdempotencyClaim,
  IdempotentResult,
  ScheduleChange,
  ScheduleFire,
  ScheduleFireResult,
} from "../store.ts";
import type { Database, Tx } from "./database.ts";
import { checkIdempotency, rememberResponse } from "./idempotency.ts";
import { insertRun } from "./run-create.ts";

/**
 * Schedules and their firings. A firing locks the schedule's row, claims (schedule, fire time) in
 * schedule_fires and inserts its run in one transaction, so schedulers on any number of replicas, or a
 * crash between claim and run, can neither fire a slot twice nor lose it. A firing while the run of the
 * schedule's latest firing is still QUEUED uses its slot up without a run and says so in
 * last_spawn_error: runs that cannot start do not pile up.
 *
 * Every change of a schedule signals `schedule_changed` with its commit, which reaches the schedulers of
 * the other replicas too (they would otherwise see it only at their next bounded look).
 */

export async function createSchedule(
  db: Database,
  s: ScheduleRecord,
  limits: ScheduleLimits,
  idem?: IdempotencyClaim,
): Promise<IdempotentResult<ScheduleRecord> | "name_taken" | "team_limit" | "creator_limit"> {
  type Result = IdempotentResult<ScheduleRecord> | "name_taken" | "team_limit" | "creator_limit";
  return db.tx(async (tx): Promise<Result> => {
    if (idem) {
      const seen = await checkIdempotency(tx, idem);
      if (seen) return seen;
    }
    await lockTeamSchedules(tx, s.teamId);
    if ((await countSchedules(tx, s.teamId)) >= limits.perTeam) return "team_limit";
    if ((await countSchedules(tx, s.teamId, s.createdBy.uid)) >= limits.perCreator) return "creator_limit";
    // A concurrent create of the same name waits for this one's commit, then inserts nothing.
    const row = await tx.row(
      `INSERT INTO schedules (id, team_id, name, cron_schedule, timezone, enabled, prompt, agent_config, metadata,
         created_by_uid, created_by, updated_by, created_at, updated_at, revision, active_since, last_fire_time,
         last_ran, last_spawn_error, report_platform, report_workspace, report_channel, report_thread,
         report_requester)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
         $23, $24)
       ON CONFLICT (team_id, name) DO NOTHING RETURNING *`,
      [
        s.id,
        s.teamId,
        s.name,
        s.cronSchedule,
        s.timezone,
        s.enabled ? 1 : 0,
        s.prompt,
        JSON.stringify(s.agentConfig),
        JSON.stringify(s.metadata),
        s.createdBy.uid,
        JSON.stringify(s.createdBy),
        JSON.stringify(s.updatedBy),
        s.createdAt,
        s.updatedAt,
        s.revision,
        s.activeSince,
        s.lastFireTime,
        s.lastRan,
        s.lastSpawnError,
        s.reportTo?.platform ?? null,
        s.reportTo?.workspace ?? null,
        s.reportTo?.channel ?? null,
        s.reportTo?.thread ?? null,
        s.reportTo?.requester ?? null,
      ],
    );
    if (!row) return "name_taken";
    const created = toSchedule(row);
    tx.signal("schedule_changed");
    return {
      kind: "created",
      value: created,
      response: idem ? await rememberResponse(tx, idem, created) : undefined,
    };
  });
}

export async function getSchedule(
  db: Database,
  teamId: string,
  id: string,
): Promise<ScheduleRecord | undefined> {
  const row = await db.row("SELECT * FROM schedules WHERE id = $1 AND team_id = $2", [id, teamId]);
  return row ? toSchedule(row) : undefined;
}

export async function listSchedules(
  db: Database,
  teamId: string,
  opts: { reportTo?: ChannelKey } = {},
): Promise<ScheduleRecord[]> {
  const rows = opts.reportTo
    ? await db.rows(
        `SELECT * FROM schedules
          WHERE team_id = $1 AND report_platform = $2 AND report_workspace = $3 AND report_channel = $4
          ORDER BY name, id`,
        [teamId, opts.reportTo.platform, opts.reportTo.workspace, opts.reportTo.channel],
      )
    : await db.rows("SELECT * FROM schedules WHERE team_id = $1 ORDER BY name, id", [teamId]);
  return rows.map(toSchedule);
}

/**
 * Replaces the user's fields under the schedule's row lock, so a firing (which takes the same lock)
 * either precedes the edit or sees its new revision. A rename racing another onto the same name loses
 * on the unique key: a conflict the caller may retry (and then gets `name_taken`). The team's schedule
 * lock comes first, as in createSchedule (a take-over changes whose count a schedule is in, and a
 * create waiting on this row's name must not hold the lock this waits for).
 */
export async function updateSchedule(
  db: Database,
  teamId: string,
  id: string,
  c: ScheduleChange,
): Promise<ScheduleRecord | "name_taken" | "creator_limit" | undefined> {
  return db.tx(async (tx): Promise<ScheduleRecord | "name_taken" | "creator_limit" | undefined> => {
    await lockTeamSchedules(tx, teamId);
    const before = await tx.row("SELECT * FROM schedules WHERE id = $1 AND team_id = $2 FOR UPDATE", [
      id,
      teamId,
    ]);
    if (!before) return undefined;
    const taken = await tx.row("SELECT 1 FROM schedules WHERE team_id = $1 AND name = $2 AND id <> $3", [
      teamId,
      c.name,
      id,
    ]);
    if (taken) return "name_taken";
    const old = toSchedule(before);
    const owner = c.takeOver ? c.updatedBy : old.createdBy;
    if (
      c.takeOver &&
      owner.uid !== old.createdBy.uid &&
      (await countSchedules(tx, teamId, owner.uid)) >= c.takeOver.perCreator
    ) {
      return "creator_limit";
    }
    // Slots missed while paused, or due under the old cron or zone, are not caught up on.
    const restart =
      (c.enabled && !old.enabled) || c.cronSchedule !== old.cronSchedule || c.timezone !== old.timezone;
    const row = await tx.row(
      `UPDATE schedules SET name = $1, cron_schedule = $2, timezone = $3, enabled = $4, prompt = $5, agent_config = $6,
         metadata = $7, created_by_uid = $8, created_by = $9, updated_by = $10, updated_at = $11,
         revision = revision + 1, active_since = $12, report_requester = $13
       WHERE id = $14 RETURNING *`,
      [
        c.name,
        c.cronSchedule,
        c.timezone,
        c.enabled ? 1 : 0,
        c.prompt,
        JSON.stringify(c.agentConfig),
        JSON.stringify(c.metadata),
        owner.uid,
        JSON.stringify(owner),
        JSON.stringify(c.updatedBy),
        c.updatedAt,
        restart ? c.updatedAt : old.activeSince,
        reportRequesterAfter(old, owner.uid),
        id,
      ],
    );
    tx.signal("schedule_changed");
    return toSchedule(row!);
  });
}

export async function deleteSchedule(db: Database, teamId: string, id: string): Promise<boolean> {
  return db.tx(async (tx) => {
    const deleted = await tx.changes("DELETE FROM schedules WHERE id = $1 AND team_id = $2", [id, teamId]);
    if (deleted === 1) tx.signal("schedule_changed");
    return deleted === 1;
  });
}

export async function listEnabledSchedules(db: Database): Promise<ScheduleRecord[]> {
  const rows = await db.rows("SELECT * FROM schedules WHERE enabled = 1 ORDER BY id");
  return rows.map(toSchedule);
}

/**
 * One firing, exactly once across replicas. The schedule's row is locked first: concurrent firings of
 * one schedule run one after the other, and under READ COMMITTED the later one reads the row as the
 * earlier one committed it (its last_fire_time), so it answers `already_fired` without inserting. The
 * (schedule_id, fire_time) primary key of schedule_fires backs this up for a firing that somehow got past.
 */
export async function fireSchedule(
  db: Database,
  fire: ScheduleFire,
  run: RunRecord,
): Promise<ScheduleFireResult> {
  return db.tx(async (tx): Promise<ScheduleFireResult> => {
    const row = await tx.row("SELECT * FROM schedules WHERE id = $1 FOR UPDATE", [fire.scheduleId]);
    const schedule = row ? toSchedule(row) : undefined;
    if (!schedule?.enabled || schedule.revision !== fire.revision || schedule.teamId !== run.teamId) {
      return { kind: "stale" };
    }
    if (fire.fireTime <= schedule.activeSince) return { kind: "stale" };
    // Fire times only move forward: a slower scheduler's older slot never fires after a newer one.
    if (schedule.lastFireTime !== null && fire.fireTime <= schedule.lastFireTime) {
      return { kind: "already_fired" };
    }
    // The latest firing's run has not started (no free executor slot): another would only queue behind it.
    const previous = await tx.row(
      `SELECT r.id, r.state FROM schedule_fires f JOIN runs r ON r.id = f.run_id
        WHERE f.schedule_id = $1 ORDER BY f.fire_time DESC LIMIT 1`,
      [fire.scheduleId],
    );
    if (previous?.state === "QUEUED") {
      const queuedRunId = String(previous.id);
      await tx.changes("UPDATE schedules SET last_fire_time = $1, last_spawn_error = $2 WHERE id = $3", [
        fire.fireTime,
        skippedWhileQueuedText(fire.fireTime, queuedRunId),
        fire.scheduleId,
      ]);
      return { kind: "skipped", queuedRunId };
    }
    const claimed = await tx.changes(
      `INSERT INTO schedule_fires (schedule_id, fire_time, run_id, fired_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (schedule_id, fire_time) DO NOTHING`,
      [fire.scheduleId, fire.fireTime, run.id, fire.at],
    );
    if (claimed !== 1) return { kind: "already_fired" };
    const created = await insertRun(tx, run);
    const target = schedule.reportTo;
    if (target) {
      await tx.changes(
        `INSERT INTO thread_bindings (run_id, platform, workspace, channel, thread, trigger_ref, requester, created_at)
         VALUES ($1, $2, $3, $4, $5, NULL, $6, $7)`,
        [
          run.id,
          target.platform,
          target.workspace,
          target.channel,
          target.thread,
          target.requester,
          run.createdAt,
        ],
      );
    }
    await tx.changes(
      "UPDATE schedules SET last_fire_time = $1, last_ran = $2, last_spawn_error = NULL WHERE id = $3",
      [fire.fireTime, run.createdAt, fire.scheduleId],
    );
    return { kind: "fired", run: created };
  });
}

/**
 * Serialises the writes that change a team's schedule counts (create, take-over) until commit, so two of
 * them cannot both take the last place under a limit.
 */
async function lockTeamSchedules(tx: Tx, teamId: string): Promise<void> {
  await tx.row("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`schedules\n${teamId}`]);
}

/** The team's schedules, or with `ownerUid` those whose runs are for that person. */
async function countSchedules(tx: Tx, teamId: string, ownerUid?: string): Promise<number> {
  const row =
    ownerUid === undefined
      ? await tx.row("SELECT count(*) AS n FROM schedules WHERE team_id = $1", [teamId])
      : await tx.row("SELECT count(*) AS n FROM schedules WHERE team_id = $1 AND created_by_uid = $2", [
          teamId,
          ownerUid,
        ]);
  return Number(row!.n);
}

export async function recordScheduleError(db: Database, scheduleId: string, error: string): Promise<boolean> {
  const changed = await db.changes("UPDATE schedules SET last_spawn_error = $1 WHERE id = $2", [
    error,
    scheduleId,
  ]);
  return changed === 1;
}

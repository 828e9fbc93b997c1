import type { SQLInputValue } from "node:sqlite";
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
import type { Database } from "./database.ts";
import { checkIdempotency, rememberResponse } from "./idempotency.ts";
import type { Row } from "./rows.ts";
import { insertRun } from "./runs.ts";

/**
 * Schedules and their firings. A firing claims (schedule, fire time) in schedule_fires and inserts its
 * run in one transaction, so two schedulers on one database, or a crash between claim and run, can
 * neither fire a slot twice nor lose it. A firing while the run of the schedule's latest firing is still
 * QUEUED uses its slot up without a run and says so in last_spawn_error: runs that cannot start do not
 * pile up.
 */

export async function createSchedule(
  db: Database,
  s: ScheduleRecord,
  limits: ScheduleLimits,
  idem?: IdempotencyClaim,
): Promise<IdempotentResult<ScheduleRecord> | "name_taken" | "team_limit" | "creator_limit"> {
  return db.grouped((): IdempotentResult<ScheduleRecord> | "name_taken" | "team_limit" | "creator_limit" => {
    if (idem) {
      const seen = checkIdempotency(db, idem);
      if (seen) return seen;
    }
    // Counted in the write transaction: concurrent creates cannot both take the last place.
    if (countSchedules(db, s.teamId) >= limits.perTeam) return "team_limit";
    if (countSchedules(db, s.teamId, s.createdBy.uid) >= limits.perCreator) return "creator_limit";
    const res = db
      .sql(
        `INSERT INTO schedules (id, team_id, name, cron_schedule, timezone, enabled, prompt, agent_config, metadata,
           created_by_uid, created_by, updated_by, created_at, updated_at, revision, active_since, last_fire_time,
           last_ran, last_spawn_error, report_platform, report_workspace, report_channel, report_thread,
           report_requester)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (team_id, name) DO NOTHING`,
      )
      .run(
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
      );
    if (Number(res.changes) !== 1) return "name_taken";
    const created = readSchedule(db, s.id)!;
    return {
      kind: "created",
      value: created,
      response: idem ? rememberResponse(db, idem, created) : undefined,
    };
  });
}

export async function getSchedule(
  db: Database,
  teamId: string,
  id: string,
): Promise<ScheduleRecord | undefined> {
  const row = db.sql("SELECT * FROM schedules WHERE id = ? AND team_id = ?").get(id, teamId) as
    | Row
    | undefined;
  return row ? toSchedule(row) : undefined;
}

export async function listSchedules(
  db: Database,
  teamId: string,
  opts: { reportTo?: ChannelKey } = {},
): Promise<ScheduleRecord[]> {
  const where = ["team_id = ?"];
  const params: SQLInputValue[] = [teamId];
  if (opts.reportTo) {
    where.push("report_platform = ? AND report_workspace = ? AND report_channel = ?");
    params.push(opts.reportTo.platform, opts.reportTo.workspace, opts.reportTo.channel);
  }
  const rows = db
    .sql(`SELECT * FROM schedules WHERE ${where.join(" AND ")} ORDER BY name, id`)
    .all(...params) as Row[];
  return rows.map(toSchedule);
}

export async function updateSchedule(
  db: Database,
  teamId: string,
  id: string,
  c: ScheduleChange,
): Promise<ScheduleRecord | "name_taken" | "creator_limit" | undefined> {
  return db.grouped(() => {
    const before = db.sql("SELECT * FROM schedules WHERE id = ? AND team_id = ?").get(id, teamId) as
      | Row
      | undefined;
    if (!before) return undefined;
    const taken = db
      .sql("SELECT 1 FROM schedules WHERE team_id = ? AND name = ? AND id <> ?")
      .get(teamId, c.name, id);
    if (taken) return "name_taken";
    const old = toSchedule(before);
    const owner = c.takeOver ? c.updatedBy : old.createdBy;
    if (
      c.takeOver &&
      owner.uid !== old.createdBy.uid &&
      countSchedules(db, teamId, owner.uid) >= c.takeOver.perCreator
    ) {
      return "creator_limit";
    }
    // Slots missed while paused, or due under the old cron or zone, are not caught up on.
    const restart =
      (c.enabled && !old.enabled) || c.cronSchedule !== old.cronSchedule || c.timezone !== old.timezone;
    db.sql(
      `UPDATE schedules SET name = ?, cron_schedule = ?, timezone = ?, enabled = ?, prompt = ?, agent_config = ?,
         metadata = ?, created_by_uid = ?, created_by = ?, updated_by = ?, updated_at = ?, revision = revision + 1,
         active_since = ?, report_requester = ?
       WHERE id = ?`,
    ).run(
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
    );
    return readSchedule(db, id);
  });
}

export async function deleteSchedule(db: Database, teamId: string, id: string): Promise<boolean> {
  return db.grouped(() => {
    const res = db.sql("DELETE FROM schedules WHERE id = ? AND team_id = ?").run(id, teamId);
    return Number(res.changes) === 1;
  });
}

export async function listEnabledSchedules(db: Database): Promise<ScheduleRecord[]> {
  const rows = db.sql("SELECT * FROM schedules WHERE enabled = 1 ORDER BY id").all() as Row[];
  return rows.map(toSchedule);
}

export async function fireSchedule(
  db: Database,
  fire: ScheduleFire,
  run: RunRecord,
): Promise<ScheduleFireResult> {
  const result = await db.grouped((): ScheduleFireResult => {
    const schedule = readSchedule(db, fire.scheduleId);
    if (!schedule?.enabled || schedule.revision !== fire.revision || schedule.teamId !== run.teamId) {
      return { kind: "stale" };
    }
    if (fire.fireTime <= schedule.activeSince) return { kind: "stale" };
    // Fire times only move forward: a slower scheduler's older slot never fires after a newer one.
    if (schedule.lastFireTime !== null && fire.fireTime <= schedule.lastFireTime)
      return { kind: "already_fired" };
    // The latest firing's run has not started (no free executor slot): another would only queue behind it.
    const previous = db
      .sql(
        `SELECT r.id, r.state FROM schedule_fires f JOIN runs r ON r.id = f.run_id
          WHERE f.schedule_id = ? ORDER BY f.fire_time DESC LIMIT 1`,
      )
      .get(fire.scheduleId) as Row | undefined;
    if (previous?.state === "QUEUED") {
      const queuedRunId = String(previous.id);
      db.sql("UPDATE schedules SET last_fire_time = ?, last_spawn_error = ? WHERE id = ?").run(
        fire.fireTime,
        skippedWhileQueuedText(fire.fireTime, queuedRunId),
        fire.scheduleId,
      );
      return { kind: "skipped", queuedRunId };
    }
    const claim = db
      .sql(
        `INSERT INTO schedule_fires (schedule_id, fire_time, run_id, fired_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (schedule_id, fire_time) DO NOTHING`,
      )
      .run(fire.scheduleId, fire.fireTime, run.id, fire.at);
    if (Number(claim.changes) !== 1) return { kind: "already_fired" };
    const created = insertRun(db, run);
    const target = schedule.reportTo;
    if (target) {
      db.sql(
        `INSERT INTO thread_bindings (run_id, platform, workspace, channel, thread, trigger_ref, requester, created_at)
         VALUES (?, ?, ?, ?, ?, NULL, ?, ?)`,
      ).run(
        run.id,
        target.platform,
        target.workspace,
        target.channel,
        target.thread,
        target.requester,
        run.createdAt,
      );
    }
    db.sql("UPDATE schedules SET last_fire_time = ?, last_ran = ?, last_spawn_error = NULL WHERE id = ?").run(
      fire.fireTime,
      run.createdAt,
      fire.scheduleId,
    );
    return { kind: "fired", run: created };
  });
  if (result.kind === "fired") {
    db.signals.emit("run_changed", run.id);
    db.signals.emit("run_queued", run.id);
  }
  return result;
}

/** The team's schedules, or with `ownerUid` those whose runs are for that person. */
function countSchedules(db: Database, teamId: string, ownerUid?: string): number {
  const row =
    ownerUid === undefined
      ? db.sql("SELECT count(*) AS n FROM schedules WHERE team_id = ?").get(teamId)
      : db
          .sql("SELECT count(*) AS n FROM schedules WHERE team_id = ? AND created_by_uid = ?")
          .get(teamId, ownerUid);
  return Number((row as Row).n);
}

export async function recordScheduleError(db: Database, scheduleId: string, error: string): Promise<boolean> {
  return db.grouped(() => {
    const res = db.sql("UPDATE schedules SET last_spawn_error = ? WHERE id = ?").run(error, scheduleId);
    return Number(res.changes) === 1;
  });
}

function readSchedule(db: Database, id: string): ScheduleRecord | undefined {
  const row = db.sql("SELECT * FROM schedules WHERE id = ?").get(id) as Row | undefined;
  return row ? toSchedule(row) : undefined;
}

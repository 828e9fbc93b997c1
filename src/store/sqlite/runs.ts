import type { SQLInputValue } from "node:sqlite";
import type { NewAttachment } from "../../model/attachment.ts";
import { type AudienceFilter, placesJson } from "../../model/audience.ts";
import type { NewAuditEvent } from "../../model/audit.ts";
import type { RunRecord } from "../../model/run.ts";
import { canApply, RUN_STATES, type RunState, type Trigger } from "../../model/run-state.ts";
import { wireStatusMessage } from "../../model/status-reason.ts";
import { createdRun } from "../created-run.ts";
import { foldCase } from "../fold-case.ts";
import { iso } from "../rows.ts";
import { transitionColumns } from "../run-columns.ts";
import { URL_MATCHES_MAX } from "../run-steering.ts";
import type { IdempotencyClaim, IdempotentResult, RunListQuery, RunPatch } from "../store.ts";
import { insertAttachments } from "./attachments.ts";
import { insertAuditEvent } from "./audit.ts";
import type { Database } from "./database.ts";
import { insertEvent, writeEvent } from "./events.ts";
import { checkIdempotency, rememberResponse } from "./idempotency.ts";
import { type Row, RUN_COLUMNS, runFromValues } from "./rows.ts";
import { recordRunTrace } from "./run-traces.ts";

/**
 * Runs: creation, reads, listing and counts, cancelling, and the lifecycle's compare-and-set
 * (`applyTransition`) and change signals (`announce`) that the other families reuse.
 */

export async function createRun(
  db: Database,
  run: RunRecord,
  idem?: IdempotencyClaim,
  attachments: readonly NewAttachment[] = [],
  also: { traceparent?: string; audit?: NewAuditEvent } = {},
): Promise<IdempotentResult<RunRecord>> {
  const result = await db.grouped((): IdempotentResult<RunRecord> => {
    if (idem) {
      const seen = checkIdempotency(db, idem);
      if (seen) return seen;
    }
    const created = insertRun(db, run, attachments);
    if (also.traceparent) recordRunTrace(db, run.id, also.traceparent);
    if (also.audit) insertAuditEvent(db, also.audit);
    const response = idem ? rememberResponse(db, idem, created) : undefined;
    return { kind: "created", value: created, response };
  });
  if (result.kind === "created") {
    db.signals.emit("run_changed", run.id);
    db.signals.emit("run_queued", run.id);
  }
  return result;
}

/**
 * Inserts a QUEUED run with its attachments and first `state` event; must run inside a transaction. One
 * INSERT carries every column, the first event's number included (last_event_seq = 1: the row needs no
 * UPDATE for it), and the record returned is built from what was inserted (createdRun), not read back.
 */
export function insertRun(
  db: Database,
  run: RunRecord,
  attachments: readonly NewAttachment[] = [],
): RunRecord {
  db.sql(INSERT_RUN).run(
    run.id,
    run.teamId,
    run.title,
    run.prompt,
    run.createdAt,
    run.updatedAt,
    run.sessionId,
    run.triggerUrl,
    run.source,
    run.creator.uid,
    JSON.stringify(run.creator),
    run.agentConfig.name ?? null,
    run.agentConfig.model_id ?? null,
    run.agentConfig.environment_id ?? null,
    run.agentConfig.skill_spec ?? null,
    JSON.stringify(run.agentConfig),
    run.agentSkill ? JSON.stringify(run.agentSkill) : null,
    JSON.stringify(run.artifacts),
    JSON.stringify(run.requestUsage),
    JSON.stringify(run.metadata),
    run.schedule?.scheduleId ?? null,
    run.schedule?.scheduleName ?? null,
    run.schedule?.cronSchedule ?? null,
    run.schedule?.fireTime ?? null,
    run.parentRunId ?? null,
    run.rootRunId ?? null,
    run.mode ?? "normal",
  );
  insertAttachments(
    db,
    { runId: run.id, teamId: run.teamId, followupId: null, createdAt: run.createdAt },
    attachments,
  );
  writeEvent(db, run.id, 1, "state", CREATED_EVENT, run.createdAt);
  return createdRun(run);
}

/** Every column of a new run: ?5 is its creation time, also its queued_at and its first event's time. */
const INSERT_RUN = `INSERT INTO runs (id, team_id, title, prompt, state, created_at, updated_at, queued_at, started_at,
    finished_at, run_time_ms, execution_started_at, execution, session_id, trigger_url, source, creator_uid, creator,
    config_name, model_id, environment_id, skill_spec, agent_config, agent_skill, status_message, artifacts,
    request_usage, metadata, schedule_id, schedule_name, schedule_cron, schedule_fire_time, parent_run_id,
    root_run_id, mode, last_event_seq, last_event_at)
  VALUES (?1, ?2, ?3, ?4, 'QUEUED', ?5, ?6, ?5, NULL, NULL, 0, NULL, 1, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
    ?16, ?17, NULL, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, 1, ?5)`;

/** A new run's first event, as a transition words a state event. */
const CREATED_EVENT = { state: "QUEUED", previous: null };

/**
 * The reads of one run by id, as constants: the statement cache is keyed by the text, and a template
 * built on every call (the column list is long) cost its hashing on every GET.
 */
const RUN_OF_TEAM = `SELECT ${RUN_COLUMNS} FROM runs WHERE id = ? AND team_id = ?`;
const RUN_BY_ID = `SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`;

export async function getRun(db: Database, teamId: string, runId: string): Promise<RunRecord | undefined> {
  const row = db.sql(RUN_OF_TEAM, { arrays: true }).get(runId, teamId) as unknown as
    | SQLInputValue[]
    | undefined;
  return row ? runFromValues(row) : undefined;
}

export async function getRunBySession(db: Database, sessionId: string): Promise<RunRecord | undefined> {
  const row = db
    .sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE session_id = ?`, { arrays: true })
    .get(sessionId) as unknown as SQLInputValue[] | undefined;
  return row ? runFromValues(row) : undefined;
}

export async function findRunsByUrl(db: Database, teamId: string, url: string): Promise<RunRecord[]> {
  // A trigger URL may carry a comment anchor or a query after the URL looked for.
  const rows = db
    .sql(
      `SELECT ${RUN_COLUMNS} FROM runs WHERE team_id = ? AND (trigger_url = ?
         OR substr(trigger_url, 1, length(?)) = ? OR substr(trigger_url, 1, length(?)) = ?
         OR EXISTS (SELECT 1 FROM json_each(artifacts) WHERE json_extract(value, '$.data.url') = ?))
       ORDER BY created_at DESC, id DESC LIMIT (SELECT ?)`,
      { arrays: true },
    )
    .all(
      teamId,
      url,
      `${url}#`,
      `${url}#`,
      `${url}?`,
      `${url}?`,
      url,
      URL_MATCHES_MAX,
    ) as unknown as SQLInputValue[][];
  return rows.map(runFromValues);
}

/**
 * The SQL condition (on `runs`) of a viewer's audience filter, with its parameters: runs asked for in no thread (the team's) when the
 * filter admits them, and runs with a binding at one of its places (a null channel: any in the workspace).
 */
export function audienceCondition(filter: AudienceFilter): { sql: string; params: SQLInputValue[] } {
  const bound = `EXISTS (SELECT 1 FROM thread_bindings b JOIN json_each(?) p
      ON b.platform = p.value ->> '$[0]' AND b.workspace = p.value ->> '$[1]'
      AND (p.value ->> '$[2]' IS NULL OR b.channel = p.value ->> '$[2]')
    WHERE b.run_id = runs.id)`;
  const unbound = "NOT EXISTS (SELECT 1 FROM thread_bindings b WHERE b.run_id = runs.id AND b.adopted = 0)";
  return { sql: filter.unbound ? `(${unbound} OR ${bound})` : bound, params: [placesJson(filter)] };
}

export async function listRuns(
  db: Database,
  teamId: string,
  q: RunListQuery,
): Promise<{ runs: RunRecord[]; hasMore: boolean }> {
  const where: string[] = ["team_id = ?"];
  const params: SQLInputValue[] = [teamId];
  const column = { updated_at: "updated_at", created_at: "created_at", title: "title", agent: "config_name" }[
    q.sortBy
  ];
  const dir = q.sortOrder === "asc" ? "ASC" : "DESC";
  // Nothing records a local execution on a run: every Dispatch run executes remotely.
  if (q.executionLocation === "LOCAL") {
    return { runs: [], hasMore: false };
  }
  if (q.states) {
    if (q.states.length === 0) return { runs: [], hasMore: false };
    where.push(`state IN (${q.states.map(() => "?").join(", ")})`);
    params.push(...q.states);
  }
  if (Array.isArray(q.source)) {
    if (q.source.length === 0) return { runs: [], hasMore: false };
    where.push(`source IN (${q.source.map(() => "?").join(", ")})`);
    params.push(...q.source);
  }
  if (q.ids) {
    if (q.ids.length === 0) return { runs: [], hasMore: false };
    // One JSON array: one cached statement whatever the number of ids. They are looked up by primary key:
    // the unary + keeps the planner from walking the team's whole sort index (runs_team_updated) instead.
    where[0] = "+team_id = ?";
    where.push("id IN (SELECT value FROM json_each(?))");
    params.push(JSON.stringify(q.ids));
  }
  const equal: Array<[string, string | undefined]> = [
    ["config_name", q.name],
    ["model_id", q.modelId],
    ["creator_uid", q.creator],
    ["creator_uid", q.executor],
    ["source", typeof q.source === "string" ? q.source : undefined],
    ["environment_id", q.environmentId],
    ["skill_spec", q.skillSpec],
    ["schedule_id", q.scheduleId],
  ];
  for (const [col, value] of equal) {
    if (value !== undefined) {
      where.push(`${col} = ?`);
      params.push(value);
    }
  }
  const ranges: Array<[string, string | undefined]> = [
    ["created_at >", q.createdAfter],
    ["created_at <", q.createdBefore],
    ["updated_at >", q.updatedAfter],
  ];
  for (const [condition, value] of ranges) {
    if (value !== undefined) {
      where.push(`${condition} ?`);
      params.push(value);
    }
  }
  // Keys and values are bound, never spliced into a JSON path: any key is safe and matched exactly.
  for (const [key, value] of Object.entries(q.metadata ?? {})) {
    where.push("EXISTS (SELECT 1 FROM json_each(metadata) WHERE key = ? AND type = 'text' AND value = ?)");
    params.push(key, value);
  }
  if (q.ancestorRunId !== undefined) {
    // Descendants at any depth: children of the ancestor, then theirs (parents are always of the same team).
    where.push(
      `id IN (WITH RECURSIVE descendants(id) AS (
         SELECT id FROM runs WHERE parent_run_id = ?
         UNION SELECT runs.id FROM runs JOIN descendants ON runs.parent_run_id = descendants.id
       ) SELECT id FROM descendants)`,
    );
    params.push(q.ancestorRunId);
  }
  if (q.artifactType !== undefined) {
    where.push(
      "EXISTS (SELECT 1 FROM json_each(artifacts) WHERE json_extract(value, '$.artifact_type') = ?)",
    );
    params.push(q.artifactType);
  }
  if (q.audience) {
    const audience = audienceCondition(q.audience);
    where.push(audience.sql);
    params.push(...audience.params);
  }
  if (q.q) {
    const needle = foldCase(q.q);
    const byRef = q.qRef?.runId ? " OR id = ?" : q.qRef?.sessionId ? " OR session_id = ?" : "";
    where.push(`(instr(fold_case(title), ?) > 0 OR instr(fold_case(prompt), ?) > 0${byRef})`);
    params.push(needle, needle);
    if (byRef) params.push(q.qRef?.runId ?? q.qRef?.sessionId ?? "");
  }
  if (q.taskStatus) {
    const { states, orActiveBelow } = q.taskStatus;
    if (states.length === 0 && !orActiveBelow) return { runs: [], hasMore: false };
    const either: string[] = [];
    if (states.length) {
      either.push(`state IN (${states.map(() => "?").join(", ")})`);
      params.push(...states);
    }
    if (orActiveBelow) {
      // The active runs of the team and every run above them: few, whatever the size of the team's history.
      either.push(`id IN (WITH RECURSIVE above(id, parent) AS (
           SELECT id, parent_run_id FROM runs WHERE team_id = ? AND state IN ('QUEUED', 'INPROGRESS')
           UNION SELECT runs.id, runs.parent_run_id FROM runs JOIN above ON runs.id = above.parent
         ) SELECT id FROM above)`);
      params.push(teamId);
    }
    where.push(`(${either.join(" OR ")})`);
  }
  const beyond = dir === "ASC" ? ">" : "<";
  if (q.after && q.after.value === null) {
    // Past a run without an agent name: only the rest of that trailing group remains.
    where.push(`${column} IS NULL AND id ${beyond} ?`);
    params.push(q.after.id);
  } else if (q.after) {
    // Under `agent` sorting the runs without a name come after every named one, in either order.
    const orLater = q.sortBy === "agent" ? ` OR ${column} IS NULL` : "";
    where.push(`((${column}, id) ${beyond} (?, ?)${orLater})`);
    params.push(q.after.value, q.after.id);
  }
  const order =
    q.sortBy === "agent" ? `${column} IS NULL, ${column} ${dir}, id ${dir}` : `${column} ${dir}, id ${dir}`;
  // One cached statement per combination of filters in use: a bounded set, since values are bound.
  // `LIMIT (SELECT ?)`, as everywhere (Database.sql): a bare LIMIT parameter had this statement compiled
  // again on every page, a third of the page's read. The plans are the same.
  const rows = db
    .sql(`SELECT ${RUN_COLUMNS} FROM runs WHERE ${where.join(" AND ")} ORDER BY ${order} LIMIT (SELECT ?)`, {
      arrays: true,
    })
    .all(...params, q.limit + 1) as unknown as SQLInputValue[][];
  const hasMore = rows.length > q.limit;
  return { runs: rows.slice(0, q.limit).map(runFromValues), hasMore };
}

export async function countRunsByState(
  db: Database,
  teamId?: string,
  audience?: AudienceFilter,
): Promise<Record<RunState, number>> {
  const counts = Object.fromEntries(RUN_STATES.map((s) => [s, 0])) as Record<RunState, number>;
  const visible = audience ? audienceCondition(audience) : undefined;
  const rows = (
    teamId === undefined
      ? db.sql("SELECT state, COUNT(*) AS n FROM runs GROUP BY state").all()
      : visible
        ? db
            .sql(`SELECT state, COUNT(*) AS n FROM runs WHERE team_id = ? AND ${visible.sql} GROUP BY state`)
            .all(teamId, ...visible.params)
        : db.sql("SELECT state, COUNT(*) AS n FROM runs WHERE team_id = ? GROUP BY state").all(teamId)
  ) as Row[];
  for (const row of rows) {
    counts[row.state as RunState] = Number(row.n);
  }
  return counts;
}

/** Each state through its own partial index (runs_queued, runs_leases): no index covers both (migration 028). */
const COUNT_ACTIVE = `SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE state = 'QUEUED' LIMIT (SELECT ?1)))
  + (SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE state = 'INPROGRESS' LIMIT (SELECT ?1))) AS n`;

export async function countActiveRuns(db: Database, upTo: number): Promise<number> {
  const row = db.sql(COUNT_ACTIVE).get(upTo) as Row;
  return Math.min(Number(row.n), upTo);
}

export async function runsFinishedBefore(db: Database, runIds: string[], before: string): Promise<string[]> {
  if (runIds.length === 0) return [];
  // The ids travel as one JSON array: one cached statement whatever their number.
  const rows = db
    .sql(
      `SELECT id FROM runs WHERE id IN (SELECT value FROM json_each(?))
         AND state IN ('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED') AND finished_at < ?`,
    )
    .all(JSON.stringify(runIds), before) as Row[];
  return rows.map((row) => String(row.id));
}

export async function transition(
  db: Database,
  runId: string,
  trigger: Trigger,
  patch: RunPatch = {},
  opts: { workerId?: string } = {},
): Promise<RunRecord | undefined> {
  const run = await db.grouped(() => applyTransition(db, runId, trigger, patch, opts.workerId));
  if (run) announce(db, run);
  return run;
}

export async function cancelRun(
  db: Database,
  teamId: string,
  runId: string,
  patch: RunPatch,
  idem?: IdempotencyClaim,
): Promise<IdempotentResult<RunRecord> | { kind: "refused"; state: RunState } | undefined> {
  const result = await db.grouped(
    (): IdempotentResult<RunRecord> | { kind: "refused"; state: RunState } | undefined => {
      const state = teamRunState(db, teamId, runId);
      if (!state) return undefined;
      const seen = idem && checkIdempotency(db, idem);
      if (seen) return seen;
      const run = applyTransition(db, runId, "cancel", patch);
      if (!run) return { kind: "refused", state };
      return { kind: "created", value: run, response: idem ? rememberResponse(db, idem, run) : undefined };
    },
  );
  if (result?.kind === "created") announce(db, result.value);
  return result;
}

/** The state of the team's run, or undefined when the team has no such run. */
export function teamRunState(db: Database, teamId: string, runId: string): RunState | undefined {
  const row = db.sql("SELECT state FROM runs WHERE id = ? AND team_id = ?").get(runId, teamId) as
    | Row
    | undefined;
  return row?.state as RunState | undefined;
}

export function readRun(db: Database, id: string): RunRecord | undefined {
  const row = db.sql(RUN_BY_ID, { arrays: true }).get(id) as unknown as SQLInputValue[] | undefined;
  return row ? runFromValues(row) : undefined;
}

/** The compare-and-set at the heart of the lifecycle; must run inside a transaction. */
export function applyTransition(
  db: Database,
  runId: string,
  trigger: Trigger,
  patch: RunPatch,
  workerId?: string,
): RunRecord | undefined {
  const run = readRun(db, runId);
  if (!run || !canApply(trigger, run.state)) return undefined;
  if (workerId !== undefined && run.workerId !== workerId) return undefined;
  const now = Date.now();
  const nowIso = iso(now);
  const sets = transitionColumns(run, trigger, patch, now);
  const columns = Object.keys(sets);
  const res = db
    .sql(`UPDATE runs SET ${columns.map((c) => `${c} = ?`).join(", ")} WHERE id = ? AND state = ?`)
    .run(...columns.map((c) => sets[c]!), runId, run.state);
  if (Number(res.changes) !== 1) return undefined;
  const updated = readRun(db, runId)!;
  insertEvent(
    db,
    runId,
    "state",
    {
      state: updated.state,
      previous: run.state,
      // The transcript shows it as runs do: Oz's error_code and Dispatch's reason (status-reason.ts).
      ...(updated.statusMessage ? { status_message: wireStatusMessage(updated.statusMessage) } : {}),
      ...patch.eventData,
    },
    nowIso,
  );
  // The state event moved the run's last progress as the row now holds it (NEXT_SEQ's max).
  if ((updated.lastEventAt ?? "") < nowIso) updated.lastEventAt = nowIso;
  return updated;
}

export function touch(db: Database, runId: string, at: string): RunRecord {
  db.sql("UPDATE runs SET updated_at = ? WHERE id = ?").run(at, runId);
  return readRun(db, runId)!;
}

/** Signals go out after the transaction committed, so listeners re-reading the store see the change. */
export function announce(db: Database, run: RunRecord): void {
  db.signals.emit("run_changed", run.id);
  // A run waiting for a worker to continue it (resuming) wakes the executors as a queued one does.
  if (run.state === "QUEUED" || run.resuming) db.signals.emit("run_queued", run.id);
  db.signals.emit("event_appended", run.id, -1);
}

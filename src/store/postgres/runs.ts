import { type AudienceFilter, placesJson } from "../../model/audience.ts";
import type { RunRecord } from "../../model/run.ts";
import { canApply, RUN_STATES, type RunState, type Trigger } from "../../model/run-state.ts";
import { wireStatusMessage } from "../../model/status-reason.ts";
import { capEventData } from "../event-cap.ts";
import { foldCase } from "../fold-case.ts";
import { iso, json, toRun } from "../rows.ts";
import { type ColumnValue, transitionColumns } from "../run-columns.ts";
import { URL_MATCHES_MAX } from "../run-steering.ts";
import type { IdempotencyClaim, IdempotentResult, NewRunEvent, RunListQuery, RunPatch } from "../store.ts";
import type { Database, Row, Sql, Tx } from "./database.ts";
import { endpointsOf, enqueueReported, writtenEvents } from "./events.ts";
import { checkIdempotency, rememberResponse } from "./idempotency.ts";

/**
 * Runs: creation, reads, listing and counts, cancelling, and the lifecycle's compare-and-set
 * (`applyTransition`) and change signals (`announce`) that the other families reuse.
 */

export async function getRun(db: Database, teamId: string, runId: string): Promise<RunRecord | undefined> {
  const row = await db.row("SELECT * FROM runs WHERE id = $1 AND team_id = $2", [runId, teamId]);
  return row ? toRun(row) : undefined;
}

export async function getRunBySession(db: Database, sessionId: string): Promise<RunRecord | undefined> {
  const row = await db.row("SELECT * FROM runs WHERE session_id = $1", [sessionId]);
  return row ? toRun(row) : undefined;
}

export async function findRunsByUrl(db: Database, teamId: string, url: string): Promise<RunRecord[]> {
  // A trigger URL may carry a comment anchor or a query after the URL looked for.
  const rows = await db.rows(
    `SELECT * FROM runs WHERE team_id = $1 AND (trigger_url = $2
       OR left(trigger_url, length($3)) = $3 OR left(trigger_url, length($4)) = $4
       OR EXISTS (SELECT 1 FROM json_array_elements(artifacts) a WHERE a -> 'data' ->> 'url' = $2))
     ORDER BY created_at DESC, id DESC LIMIT $5`,
    [teamId, url, `${url}#`, `${url}?`, URL_MATCHES_MAX],
  );
  return rows.map(toRun);
}

/**
 * The SQL condition (on `runs`) of a viewer's audience filter, its places bound through `bind`: unbound
 * runs when the filter admits them, and runs with a binding at one of its places (a null channel: any).
 */
export function audienceCondition(filter: AudienceFilter, bind: (value: unknown) => string): string {
  const bound = `EXISTS (SELECT 1 FROM thread_bindings b, jsonb_array_elements(${bind(placesJson(filter))}::jsonb) p
    WHERE b.run_id = runs.id AND b.platform = p ->> 0 AND b.workspace = p ->> 1
      AND (p ->> 2 IS NULL OR b.channel = p ->> 2))`;
  const unbound = "NOT EXISTS (SELECT 1 FROM thread_bindings b WHERE b.run_id = runs.id AND NOT b.adopted)";
  return filter.unbound ? `(${unbound} OR ${bound})` : bound;
}

export async function listRuns(
  db: Database,
  teamId: string,
  q: RunListQuery,
): Promise<{ runs: RunRecord[]; hasMore: boolean }> {
  const params: unknown[] = [];
  const bind = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const where: string[] = [`team_id = ${bind(teamId)}`];
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
    where.push(`state = ANY(${bind(q.states)}::text[])`);
  }
  if (Array.isArray(q.source)) {
    if (q.source.length === 0) return { runs: [], hasMore: false };
    where.push(`source = ANY(${bind(q.source)}::text[])`);
  }
  if (q.ids) {
    if (q.ids.length === 0) return { runs: [], hasMore: false };
    where.push(`id = ANY(${bind(q.ids)}::text[])`);
  }
  if (q.audience) where.push(audienceCondition(q.audience, bind));
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
    if (value !== undefined) where.push(`${col} = ${bind(value)}`);
  }
  const ranges: Array<[string, string | undefined]> = [
    ["created_at >", q.createdAfter],
    ["created_at <", q.createdBefore],
    ["updated_at >", q.updatedAfter],
  ];
  for (const [condition, value] of ranges) {
    if (value !== undefined) where.push(`${condition} ${bind(value)}`);
  }
  // Keys and values are bound, never spliced into a JSON path: any key is safe and matched exactly.
  for (const [key, value] of Object.entries(q.metadata ?? {})) {
    const k = bind(key);
    where.push(
      `(json_typeof(metadata -> ${k}::text) = 'string' AND metadata ->> ${k}::text = ${bind(value)})`,
    );
  }
  if (q.ancestorRunId !== undefined) {
    // Descendants at any depth: children of the ancestor, then theirs (parents are always of the same team).
    where.push(
      `id IN (WITH RECURSIVE descendants(id) AS (
         SELECT id FROM runs WHERE parent_run_id = ${bind(q.ancestorRunId)}
         UNION SELECT runs.id FROM runs JOIN descendants ON runs.parent_run_id = descendants.id
       ) SELECT id FROM descendants)`,
    );
  }
  if (q.artifactType !== undefined) {
    where.push(
      `EXISTS (SELECT 1 FROM json_array_elements(artifacts) a WHERE a ->> 'artifact_type' = ${bind(q.artifactType)})`,
    );
  }
  if (q.q) {
    const needle = bind(foldCase(q.q));
    const byRef = q.qRef?.runId
      ? ` OR id = ${bind(q.qRef.runId)}`
      : q.qRef?.sessionId
        ? ` OR session_id = ${bind(q.qRef.sessionId)}`
        : "";
    where.push(
      `(EXISTS (SELECT 1 FROM run_search_text s WHERE s.run_id = runs.id
                 AND (strpos(s.title, ${needle}) > 0 OR strpos(s.prompt, ${needle}) > 0))${byRef})`,
    );
  }
  if (q.taskStatus) {
    const { states, orActiveBelow } = q.taskStatus;
    if (states.length === 0 && !orActiveBelow) return { runs: [], hasMore: false };
    const either: string[] = [];
    if (states.length) either.push(`state = ANY(${bind(states)}::text[])`);
    if (orActiveBelow) {
      // The active runs of the team and every run above them: few, whatever the size of the team's history.
      either.push(`id IN (WITH RECURSIVE above(id, parent) AS (
           SELECT id, parent_run_id FROM runs WHERE team_id = ${bind(teamId)} AND state IN ('QUEUED', 'INPROGRESS')
           UNION SELECT runs.id, runs.parent_run_id FROM runs JOIN above ON runs.id = above.parent
         ) SELECT id FROM above)`);
    }
    where.push(`(${either.join(" OR ")})`);
  }
  const beyond = dir === "ASC" ? ">" : "<";
  if (q.after && q.after.value === null) {
    // Past a run without an agent name: only the rest of that trailing group remains.
    where.push(`${column} IS NULL AND id ${beyond} ${bind(q.after.id)}`);
  } else if (q.after) {
    // Under `agent` sorting the runs without a name come after every named one, in either order.
    const orLater = q.sortBy === "agent" ? ` OR ${column} IS NULL` : "";
    where.push(`((${column}, id) ${beyond} (${bind(q.after.value)}, ${bind(q.after.id)})${orLater})`);
  }
  const order =
    q.sortBy === "agent" ? `${column} IS NULL, ${column} ${dir}, id ${dir}` : `${column} ${dir}, id ${dir}`;
  // One prepared statement per combination of filters in use: a bounded set, since values are bound.
  const rows = await db.rows(
    `SELECT * FROM runs WHERE ${where.join(" AND ")} ORDER BY ${order} LIMIT ${bind(q.limit + 1)}`,
    params,
  );
  const hasMore = rows.length > q.limit;
  return { runs: rows.slice(0, q.limit).map(toRun), hasMore };
}

export async function countRunsByState(
  db: Database,
  teamId?: string,
  audience?: AudienceFilter,
): Promise<Record<RunState, number>> {
  const counts = Object.fromEntries(RUN_STATES.map((s) => [s, 0])) as Record<RunState, number>;
  const params: unknown[] = [];
  const bind = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const where = teamId === undefined ? [] : [`team_id = ${bind(teamId)}`];
  if (teamId !== undefined && audience) where.push(audienceCondition(audience, bind));
  const rows = await db.rows(
    `SELECT state, COUNT(*) AS n FROM runs ${where.length ? `WHERE ${where.join(" AND ")}` : ""} GROUP BY state`,
    params,
  );
  for (const row of rows) {
    counts[row.state as RunState] = Number(row.n);
  }
  return counts;
}

/** Each state through its own partial index (runs_queued, runs_leases): no index covers both (migration 028). */
const COUNT_ACTIVE = `SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE state = 'QUEUED' LIMIT $1) queued)
  + (SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE state = 'INPROGRESS' LIMIT $1) running) AS n`;

export async function countActiveRuns(db: Database, upTo: number): Promise<number> {
  const row = await db.row(COUNT_ACTIVE, [upTo]);
  return Math.min(Number(row?.n ?? 0), upTo);
}

export async function runsFinishedBefore(db: Database, runIds: string[], before: string): Promise<string[]> {
  if (runIds.length === 0) return [];
  const rows = await db.rows(
    `SELECT id FROM runs WHERE id = ANY($1::text[])
       AND state IN ('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED') AND finished_at < $2`,
    [runIds, before],
  );
  return rows.map((row) => String(row.id));
}

export async function transition(
  db: Database,
  runId: string,
  trigger: Trigger,
  patch: RunPatch = {},
  opts: { workerId?: string } = {},
): Promise<RunRecord | undefined> {
  return db.tx(async (tx) => {
    const run = await applyTransition(tx, runId, trigger, patch, opts.workerId);
    if (run) announce(tx, run);
    return run;
  });
}

export async function cancelRun(
  db: Database,
  teamId: string,
  runId: string,
  patch: RunPatch,
  idem?: IdempotencyClaim,
): Promise<IdempotentResult<RunRecord> | { kind: "refused"; state: RunState } | undefined> {
  return db.tx(
    async (tx): Promise<IdempotentResult<RunRecord> | { kind: "refused"; state: RunState } | undefined> => {
      const state = await lockTeamRun(tx, teamId, runId);
      if (!state) return undefined;
      const seen = idem && (await checkIdempotency(tx, idem));
      if (seen) return seen;
      const run = await applyTransition(tx, runId, "cancel", patch);
      if (!run) return { kind: "refused", state };
      announce(tx, run);
      return {
        kind: "created",
        value: run,
        response: idem ? await rememberResponse(tx, idem, run) : undefined,
      };
    },
  );
}

/**
 * The state of the team's run, locked until the transaction ends (what follows is decided on it), or
 * undefined when the team has no such run.
 */
export async function lockTeamRun(tx: Tx, teamId: string, runId: string): Promise<RunState | undefined> {
  const row = await tx.row("SELECT state FROM runs WHERE id = $1 AND team_id = $2 FOR UPDATE", [
    runId,
    teamId,
  ]);
  return row?.state as RunState | undefined;
}

export async function readRun(sql: Sql, id: string): Promise<RunRecord | undefined> {
  const row = await sql.row("SELECT * FROM runs WHERE id = $1", [id]);
  return row ? toRun(row) : undefined;
}

/**
 * The compare-and-set at the heart of the lifecycle: the run's row stays locked until the commit. The
 * change, its `state` event (after `before`, events that go ahead of it) and the team's webhook endpoints
 * (for the deliveries of what a webhook reports) are one statement.
 */
export async function applyTransition(
  tx: Tx,
  runId: string,
  trigger: Trigger,
  patch: RunPatch,
  workerId?: string,
  /** The run as this transaction locked it already (SELECT … FOR UPDATE), saving a round trip. */
  locked?: RunRecord,
  before: readonly NewRunEvent[] = [],
): Promise<RunRecord | undefined> {
  let run = locked;
  if (!run) {
    const row = await tx.row("SELECT * FROM runs WHERE id = $1 FOR UPDATE", [runId]);
    run = row ? toRun(row) : undefined;
  }
  if (!run || !canApply(trigger, run.state)) return undefined;
  if (workerId !== undefined && run.workerId !== workerId) return undefined;
  const write = transitionWrite(run, trigger, patch, before, Date.now());
  const [text, values] = transitionStatement(
    runId,
    write,
    "RETURNING *",
    `SELECT changed.*, ${endpointsOf("changed.team_id")} AS endpoints FROM changed`,
  );
  const row = await tx.row(text, values);
  if (!row) return undefined;
  const first = Number(row.last_event_seq) - write.events.length + 1;
  await enqueueReported(tx, runId, writtenEvents(write.events, write.capped, first, write.at), row.endpoints);
  return toRun(row);
}

/** What a transition writes: the columns it sets, and its events (those ahead of it, then its `state` event). */
export interface TransitionWrite {
  from: RunState;
  sets: Record<string, ColumnValue>;
  events: NewRunEvent[];
  capped: Array<ReturnType<typeof capEventData>>;
  at: string;
}

export function transitionWrite(
  run: RunRecord,
  trigger: Trigger,
  patch: RunPatch,
  before: readonly NewRunEvent[],
  now: number,
): TransitionWrite {
  const sets = transitionColumns(run, trigger, patch, now);
  // The status message the run has after the change: the patch's, none when the trigger clears it, else as it was.
  const statusMessage =
    patch.statusMessage !== undefined
      ? patch.statusMessage
      : "status_message" in sets
        ? null
        : run.statusMessage;
  const events: NewRunEvent[] = [
    ...before,
    {
      type: "state",
      data: {
        state: sets.state,
        previous: run.state,
        // The transcript shows it as runs do: Oz's error_code and Dispatch's reason (status-reason.ts).
        ...(statusMessage ? { status_message: wireStatusMessage(statusMessage) } : {}),
        ...patch.eventData,
      },
    },
  ];
  return { from: run.state, sets, events, capped: events.map((e) => capEventData(e.data)), at: iso(now) };
}

/**
 * The transition as one statement: the change, only if the run is still in the state it was read in,
 * `returning` what the change returns, and its events numbered after the run's last; `more` is further
 * CTEs that act on the run `changed` (nothing if it did not change), `tail` the statement's answer.
 */
function transitionStatement(
  runId: string,
  write: TransitionWrite,
  returning: string,
  tail: string,
  more = "",
  /** Further conditions of the change, given the first free parameter number, with their values. */
  guard?: (first: number) => [string, unknown[]],
): [string, unknown[]] {
  const columns = Object.keys(write.sets);
  const n = columns.length;
  const [id, state, types, data, at] = [n + 1, n + 2, n + 3, n + 4, n + 5].map((i) => `$${i}`);
  const [also, alsoValues] = guard?.(n + 6) ?? ["", []];
  return [
    `WITH changed AS (
       UPDATE runs SET ${columns.map((c, i) => `${c} = $${i + 1}`).join(", ")},
           last_event_seq = last_event_seq + cardinality(${types}::text[]),
           last_event_at = GREATEST(last_event_at, ${at})
        WHERE id = ${id} AND state = ${state} ${also} ${returning}
     ), inserted AS (
       INSERT INTO run_events (run_id, seq, at, type, data)
       SELECT changed.id, changed.last_event_seq - cardinality(${types}::text[]) + e.n, ${at}, e.type, e.data
         FROM changed, unnest(${types}::text[], ${data}::text[]) WITH ORDINALITY AS e(type, data, n)
     )${more}
     ${tail}`,
    [
      ...columns.map((c) => write.sets[c]),
      runId,
      write.from,
      write.events.map((e) => e.type),
      write.capped.map((c) => c.json),
      write.at,
      ...alsoValues,
    ],
  ];
}

/** The transaction-local setting by which a claim in the same transaction knows the end was written. */
export const ENDED_SETTING = "dispatch.ended";

/**
 * The end of an execution computed from the run as its worker claimed it (`held`), for a write that sends
 * it behind the run's lock without waiting for the lock's answer (leases.ts, finishExecution). It changes
 * the run only if what the end was decided on still holds: the run is this worker's and in progress, its
 * execution start, run time and status message are those it was computed from, no follow-up waits to be
 * taken, and no webhook endpoint of the team may report it (its deliveries are decided on the locked row).
 * Its events, the checkpoint's removal (unless it waits), its signal to other stores and the mark a claim
 * after it reads (ENDED_SETTING) go with it. Answers the ended run, or no row when it did not change.
 */
export function heldEndStatement(
  held: RunRecord,
  workerId: string,
  write: TransitionWrite,
  notification: [channel: string, payload: string],
): [string, unknown[]] {
  const dropped =
    write.sets.state === "BLOCKED"
      ? ""
      : `, dropped AS (DELETE FROM run_checkpoints WHERE run_id = (SELECT id FROM changed))`;
  // The guard's four parameters come after the transition's, then the notification's two.
  const notify = Object.keys(write.sets).length + 10;
  return transitionStatement(
    held.id,
    write,
    "RETURNING *",
    `SELECT changed.*, (SELECT count(*) FROM notified) AS notified, (SELECT count(*) FROM marked) AS marked
       FROM changed`,
    `${dropped}, notified AS (SELECT pg_notify($${notify}, $${notify + 1}) FROM changed),
     marked AS (SELECT set_config('${ENDED_SETTING}', changed.id, true) FROM changed)`,
    (i) => [
      `AND worker_id = $${i} AND execution_started_at IS NOT DISTINCT FROM $${i + 1}
       AND run_time_ms = $${i + 2} AND status_message IS NOT DISTINCT FROM $${i + 3}
       AND NOT EXISTS (SELECT 1 FROM followups f WHERE f.run_id = runs.id AND f.delivered_at IS NULL)
       AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.team_id = runs.team_id)`,
      [workerId, held.executionStartedAt, held.runTimeMs, json(held.statusMessage), ...notification],
    ],
  );
}

/**
 * The transition of a run this transaction has locked (`locked`, its row as read), written with the
 * COMMIT (Tx.afterwards) rather than waited for: for a change no webhook reports, which nothing else in
 * the transaction depends on. The lock holds the run in the state it was read in, so the change is
 * certain; the run after it is the locked row with the columns set (what RETURNING * would answer,
 * test/store/conformance/execution-writes.ts compares it with a read), and `dropCheckpoint` removes the
 * run's stored checkpoint in the same statement. Should the change not happen after all, the statement
 * writes nothing and the transaction fails once committed.
 */
export function transitionWithCommit(
  tx: Tx,
  locked: Row,
  write: TransitionWrite,
  opts: { dropCheckpoint: boolean },
): RunRecord {
  const runId = String(locked.id);
  const dropped = opts.dropCheckpoint
    ? `, dropped AS (DELETE FROM run_checkpoints WHERE run_id = (SELECT id FROM changed))`
    : "";
  const [text, values] = transitionStatement(
    runId,
    write,
    "RETURNING id, last_event_seq",
    "SELECT count(*) AS changed FROM changed",
    dropped,
  );
  tx.afterwards(text, values, (result) => {
    if (Number(result.rows[0]?.changed) !== 1) throw new Error(`run ${runId} changed while it was locked`);
  });
  const lastEventAt = locked.last_event_at === null || String(locked.last_event_at) < write.at;
  return toRun({
    ...locked,
    ...write.sets,
    ...(lastEventAt ? { last_event_at: write.at } : {}),
  });
}

export async function touch(tx: Tx, runId: string, at: string): Promise<RunRecord> {
  const row = await tx.row("UPDATE runs SET updated_at = $1 WHERE id = $2 RETURNING *", [at, runId]);
  return toRun(row!);
}

/** The signals of a changed run, published with the transaction's commit. */
export function announce(tx: Tx, run: RunRecord): void {
  tx.signal("run_changed", run.id);
  // A run waiting for a worker to continue it (resuming) wakes the executors as a queued one does.
  if (run.state === "QUEUED" || run.resuming) tx.signal("run_queued", run.id);
  tx.signal("event_appended", run.id, -1);
}

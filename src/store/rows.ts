import type { RunBudget } from "../model/budget.ts";
import type { ApiKeyRecord, Principal } from "../model/identity.ts";
import type { FollowupOutcome, FollowupRecord, ResumeReason, RunRecord } from "../model/run.ts";
import type { RunState } from "../model/run-state.ts";
import type { ReportTarget, ScheduleRecord } from "../model/schedule.ts";
import type { ThreadBinding } from "../model/thread-binding.ts";
import type { CardState, NotifierState, OutboxRow, OutboxState, RunCheckpoint } from "./store.ts";

/**
 * The mappers from a stored row to the records of the Store interface, shared by both backends: their
 * tables have the same columns, and both hand rows over as plain objects keyed by column name.
 */
export type Row = Record<string, unknown>;

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function json(value: unknown): string | null {
  return value === null ? null : JSON.stringify(value);
}

function parseJson<T>(value: unknown, fallback: T): T {
  return typeof value === "string" ? (JSON.parse(value) as T) : fallback;
}

export function str(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/**
 * The run of a stored row. The optional keys are added one by one, only when present: an object literal
 * with a conditional spread per optional key made (and copied) a temporary object for each, a third of
 * this function's cost on every read of a run.
 */
export function toRun(row: Row): RunRecord {
  const run: RunRecord = {
    id: String(row.id),
    teamId: String(row.team_id),
    title: String(row.title),
    prompt: String(row.prompt),
    state: row.state as RunState,
    createdAt: String(row.created_at),
    updatedAt: String(row.updated_at),
    startedAt: str(row.started_at),
    finishedAt: str(row.finished_at),
    runTimeMs: Number(row.run_time_ms),
    executionStartedAt: str(row.execution_started_at),
    execution: Number(row.execution),
    sessionId: String(row.session_id),
    triggerUrl: str(row.trigger_url),
    source: String(row.source),
    creator: parseJson(row.creator, { type: "user", uid: "", display_name: "" }),
    agentConfig: parseJson(row.agent_config, {}),
    agentSkill: parseJson(row.agent_skill, null),
    statusMessage: parseJson(row.status_message, null),
    artifacts: parseJson(row.artifacts, []),
    requestUsage: parseJson(row.request_usage, { input_tokens: 0, output_tokens: 0, total_tokens: 0 }),
    metadata: parseJson(row.metadata, {}),
    workerId: str(row.worker_id),
    leaseExpiresAt: str(row.lease_expires_at),
    agentStarted: Number(row.agent_started) === 1,
    requeueCount: Number(row.requeue_count),
  };
  // Null only for a run stored before migration 014 recorded it (and never since given an event).
  if (row.last_event_at != null) run.lastEventAt = String(row.last_event_at);
  // Only set when they differ from a plain run's, like the schedule below.
  if (row.parent_run_id != null) run.parentRunId = String(row.parent_run_id);
  if (row.root_run_id != null) run.rootRunId = String(row.root_run_id);
  const interrupts = Number(row.interrupts);
  if (interrupts > 0) run.interrupts = interrupts;
  if (row.mode === "plan") run.mode = "plan";
  if (row.resume_reason != null) run.resuming = row.resume_reason as ResumeReason;
  const resumes = Number(row.resumes);
  if (resumes > 0) run.resumes = resumes;
  if (row.budget != null) run.budget = parseJson<RunBudget>(row.budget, {});
  // Only a fired run carries the key, so records of other runs compare equal to what was inserted.
  if (row.schedule_id != null) {
    run.schedule = {
      scheduleId: String(row.schedule_id),
      scheduleName: String(row.schedule_name),
      cronSchedule: String(row.schedule_cron),
      fireTime: String(row.schedule_fire_time),
    };
  }
  return run;
}

export function toBinding(row: Row): ThreadBinding {
  return {
    runId: String(row.run_id),
    platform: row.platform as ThreadBinding["platform"],
    workspace: String(row.workspace),
    channel: String(row.channel),
    thread: str(row.thread),
    triggerRef: str(row.trigger_ref),
    requester: String(row.requester),
    createdAt: String(row.created_at),
    askedAt: str(row.asked_at),
    adopted: row.adopted === true || Number(row.adopted) === 1,
    ended: str(row.ended),
  };
}

/** Adds bindings and card rows (of any runs, bindings in origin-first order) to the notifier's states by run. */
export function addNotifierState(
  states: Map<string, NotifierState>,
  bindingRows: Iterable<Row>,
  cardRows: Iterable<Row>,
): Map<string, NotifierState> {
  const entry = (id: string) => {
    const known = states.get(id);
    if (known) return known;
    const state: NotifierState = { bindings: [], cards: new Map() };
    states.set(id, state);
    return state;
  };
  for (const row of bindingRows) entry(String(row.run_id)).bindings.push(toBinding(row));
  for (const row of cardRows) {
    const card = toCardState(row);
    entry(card.runId).cards.set(card.threadKey, card);
  }
  return states;
}

export function toCardState(row: Row): CardState {
  return {
    runId: String(row.run_id),
    threadKey: String(row.thread_key),
    version: Number(row.version),
    fingerprint: String(row.fingerprint),
    runUpdatedAt: String(row.run_updated_at),
    lastCardAt: str(row.last_card_at),
    lastFinal: str(row.last_final),
    cardRef: str(row.card_ts),
  };
}

export function toOutbox(row: Row): OutboxRow {
  return {
    id: Number(row.id),
    dedupeKey: String(row.dedupe_key),
    runId: String(row.run_id),
    kind: row.kind as OutboxRow["kind"],
    stream: String(row.stream),
    target: String(row.target),
    threadKey: String(row.thread_key ?? ""),
    payload: parseJson(row.payload, {}),
    state: row.state as OutboxState,
    attempts: Number(row.attempts),
    notBefore: String(row.not_before),
    lastError: str(row.last_error),
    createdAt: String(row.created_at),
  };
}

export function maxIso(a: string, b: string): string {
  return a > b ? a : b;
}

export function toFollowup(row: Row): FollowupRecord {
  return {
    id: String(row.id),
    runId: String(row.run_id),
    message: String(row.message),
    mode: String(row.mode),
    outcome: row.outcome as FollowupOutcome,
    createdAt: String(row.created_at),
    deliveredAt: str(row.delivered_at),
    deliveredExecution: row.delivered_execution == null ? null : Number(row.delivered_execution),
  };
}

export function toPrincipal(row: Row): Principal {
  return {
    id: String(row.id),
    teamId: String(row.team_id),
    type: row.type as Principal["type"],
    displayName: String(row.display_name),
    email: str(row.email),
  };
}

export function toApiKey(row: Row): ApiKeyRecord {
  return {
    id: String(row.id),
    principalId: String(row.principal_id),
    name: String(row.name),
    role: row.role as ApiKeyRecord["role"],
    prefix: String(row.prefix),
    createdAt: String(row.created_at),
    revokedAt: str(row.revoked_at),
  };
}

export function toSchedule(row: Row): ScheduleRecord {
  const reportTo: ReportTarget | null =
    row.report_platform == null
      ? null
      : {
          platform: row.report_platform as ReportTarget["platform"],
          workspace: String(row.report_workspace),
          channel: String(row.report_channel),
          thread: str(row.report_thread),
          requester: String(row.report_requester),
        };
  return {
    id: String(row.id),
    teamId: String(row.team_id),
    name: String(row.name),
    cronSchedule: String(row.cron_schedule),
    timezone: String(row.timezone),
    enabled: Number(row.enabled) === 1,
    prompt: String(row.prompt),
    agentConfig: JSON.parse(String(row.agent_config)),
    metadata: JSON.parse(String(row.metadata)),
    createdBy: JSON.parse(String(row.created_by)),
    updatedBy: JSON.parse(String(row.updated_by)),
    createdAt: String(row.created_at),
    updatedAt: String(row.updated_at),
    revision: Number(row.revision),
    activeSince: String(row.active_since),
    lastFireTime: str(row.last_fire_time),
    lastRan: str(row.last_ran),
    lastSpawnError: str(row.last_spawn_error),
    reportTo,
  };
}

/** A run's checkpoint (the columns both backends select for it); the snapshot's bytes as the driver gives them. */
export function toCheckpoint(row: Row): RunCheckpoint {
  return {
    runId: String(row.run_id),
    execution: Number(row.execution),
    takenAt: String(row.taken_at),
    workerId: String(row.worker_id),
    sizeBytes: Number(row.size_bytes),
    refSha: row.ref_sha === null ? null : String(row.ref_sha),
    snapshot: row.snapshot as Uint8Array,
  };
}

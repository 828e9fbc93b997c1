import type { SQLInputValue } from "node:sqlite";
import type { ApiKeyRecord, Principal } from "../../model/identity.ts";
import type { FollowupOutcome, FollowupRecord, RunRecord } from "../../model/run.ts";
import type { RunState } from "../../model/run-state.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { CardState, OutboxRow, OutboxState } from "../store.ts";

/** A row as node:sqlite returns it, and the mappers from rows to the records of the Store interface. */
export type Row = Record<string, SQLInputValue>;

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function json(value: unknown): string | null {
  return value === null ? null : JSON.stringify(value);
}

function parseJson<T>(value: SQLInputValue | undefined, fallback: T): T {
  return typeof value === "string" ? (JSON.parse(value) as T) : fallback;
}

export function str(value: SQLInputValue | undefined): string | null {
  return value === null || value === undefined ? null : String(value);
}

/**
 * The columns of `runs` that toRun reads, for statements that return rows as arrays (runFromValues):
 * API reads of runs select these, not `*` (which also brings the filter columns and the bookkeeping no
 * record carries). Learnt from toRun itself, by mapping a row on which every column reads "0" (not
 * null, so that every optional branch reads its columns too): a field added to toRun is selected
 * without anyone having to remember this list.
 */
const RUN_COLUMN_NAMES: readonly string[] = (() => {
  const read = new Set<string>();
  toRun(
    new Proxy({} as Row, {
      get(_target, name) {
        if (typeof name === "string") read.add(name);
        return "0";
      },
    }),
  );
  return [...read];
})();

export const RUN_COLUMNS = RUN_COLUMN_NAMES.join(", ");

/** A run from the values of a row selected as RUN_COLUMNS with `{ arrays: true }`. */
export function runFromValues(values: SQLInputValue[]): RunRecord {
  // Filled in the same order every time, so every such row shares one object shape.
  const row: Row = {};
  for (let i = 0; i < RUN_COLUMN_NAMES.length; i++) row[RUN_COLUMN_NAMES[i]!] = values[i]!;
  return toRun(row);
}

export function toRun(row: Row): RunRecord {
  return {
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
    // Null only for a run stored before migration 014 recorded it (and never since given an event).
    ...(row.last_event_at == null ? {} : { lastEventAt: String(row.last_event_at) }),
    // Only set when they differ from a plain run's, like the schedule below.
    ...(row.parent_run_id == null ? {} : { parentRunId: String(row.parent_run_id) }),
    ...(row.mode === "plan" ? { mode: "plan" as const } : {}),
    // Only a fired run carries the key, so records of other runs compare equal to what was inserted.
    ...(row.schedule_id == null
      ? {}
      : {
          schedule: {
            scheduleId: String(row.schedule_id),
            scheduleName: String(row.schedule_name),
            cronSchedule: String(row.schedule_cron),
            fireTime: String(row.schedule_fire_time),
          },
        }),
  };
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
  };
}

export function toCardState(row: Row): CardState {
  return {
    runId: String(row.run_id),
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

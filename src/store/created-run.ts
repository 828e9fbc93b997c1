import type { RunRecord } from "../model/run.ts";

/**
 * The record of a run just inserted QUEUED with its first `state` event, built from what the caller
 * inserted instead of read back (a read back was a statement and six JSON columns parsed per create).
 * It is what toRun (rows.ts) maps the new row to: a new run's columns at the schema's defaults, the
 * optional keys only where toRun sets them, and last_event_at the create's time (the first event's).
 * test/store/conformance pins it against a read back of the same row on both stores.
 */
export function createdRun(run: RunRecord): RunRecord {
  return {
    id: run.id,
    teamId: run.teamId,
    title: run.title,
    prompt: run.prompt,
    state: "QUEUED",
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    startedAt: null,
    finishedAt: null,
    runTimeMs: 0,
    executionStartedAt: null,
    execution: 1,
    sessionId: run.sessionId,
    triggerUrl: run.triggerUrl,
    source: run.source,
    creator: run.creator,
    agentConfig: run.agentConfig,
    agentSkill: run.agentSkill,
    statusMessage: null,
    artifacts: run.artifacts,
    requestUsage: run.requestUsage,
    metadata: run.metadata,
    workerId: null,
    leaseExpiresAt: null,
    agentStarted: false,
    requeueCount: 0,
    lastEventAt: run.createdAt,
    ...(run.parentRunId == null ? {} : { parentRunId: run.parentRunId }),
    ...(run.rootRunId == null ? {} : { rootRunId: run.rootRunId }),
    ...(run.mode === "plan" ? { mode: "plan" as const } : {}),
    ...(run.schedule == null ? {} : { schedule: run.schedule }),
  };
}

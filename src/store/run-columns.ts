import type { RunRecord } from "../model/run.ts";
import { type ExecutionEffect, TRANSITIONS, type Trigger } from "../model/run-state.ts";
import { iso, json } from "./rows.ts";
import type { RunPatch } from "./store-types.ts";

/** A value of a `runs` column as both backends bind it. */
export type ColumnValue = string | number | null;

/**
 * The columns of `runs` that `trigger` sets on `run` at `now`, read from the transition table in
 * model/run-state.ts: its target state, and what it does to the execution. Shared by both backends'
 * compare-and-set, which write these columns only if the run is still in `run.state`.
 */
export function transitionColumns(
  run: RunRecord,
  trigger: Trigger,
  patch: RunPatch,
  now: number,
): Record<string, ColumnValue> {
  const { to, execution } = TRANSITIONS[trigger];
  const nowIso = iso(now);
  const sets: Record<string, ColumnValue> = {
    state: to,
    ...executionColumns(run, execution, now),
    updated_at: nowIso,
  };
  if (patch.statusMessage !== undefined) sets.status_message = json(patch.statusMessage);
  if (patch.requestUsage !== undefined) sets.request_usage = json(patch.requestUsage);
  if (patch.artifacts !== undefined) sets.artifacts = json(patch.artifacts);
  if (patch.budget !== undefined) sets.budget = json(patch.budget);
  return sets;
}

function executionColumns(
  run: RunRecord,
  execution: ExecutionEffect,
  now: number,
): Record<string, ColumnValue> {
  switch (execution) {
    case "end": {
      // The execution's time counts towards the run's from its start until now.
      const executionMs = run.executionStartedAt ? Math.max(0, now - Date.parse(run.executionStartedAt)) : 0;
      return {
        finished_at: iso(now),
        run_time_ms: run.runTimeMs + executionMs,
        execution_started_at: null,
        worker_id: null,
        lease_expires_at: null,
        resume_reason: null,
        blocked_at: null,
      };
    }
    case "next":
      return {
        finished_at: null,
        status_message: null,
        queued_at: iso(now),
        execution: run.execution + 1,
        requeue_count: 0,
        agent_started: 0,
        resumes: 0,
      };
    case "retry":
      return {
        worker_id: null,
        resume_reason: null,
        lease_expires_at: null,
        execution_started_at: null,
        requeue_count: run.requeueCount + 1,
      };
    case "pause":
      return { worker_id: null, lease_expires_at: null, resume_reason: null, blocked_at: iso(now) };
    case "answer":
      // Working again: what it waited for (the question, the plan) is no longer its status.
      return { resume_reason: "answered", blocked_at: null, status_message: null };
    case "begin":
      // A claim also takes the lease and picks the oldest queued run: one statement of its own.
      throw new Error("claims go through claimNextRun");
  }
}

/** What both backends decide alike when a run is steered: where a follow-up goes, what an interrupt records. */

import type { FollowupOutcome } from "../model/run.ts";
import type { RunState } from "../model/run-state.ts";

/**
 * Where a follow-up goes, by the state of its run when it is accepted (docs/api.md): appended to the
 * prompt of a QUEUED run; held for an INPROGRESS run whose agent has not started (its workspace is being
 * prepared: the agent gets it when it starts); given to a running agent; else a new execution.
 */
export function followupOutcome(state: RunState, agentStarted: boolean): FollowupOutcome {
  if (state === "QUEUED") return "queued_prompt";
  if (state === "INPROGRESS") return agentStarted ? "live_session" : "queue_pending";
  // The answer the run waits for: it continues in the same execution with it.
  if (state === "BLOCKED") return "live_session";
  return "handoff_execution";
}

/** `{run_id, message}` rows, in order, as each run's list of messages. */
export function groupMessages(rows: ReadonlyArray<Record<string, unknown>>): Map<string, string[]> {
  const byRun = new Map<string, string[]>();
  for (const row of rows) {
    const runId = String(row.run_id);
    const messages = byRun.get(runId) ?? [];
    messages.push(String(row.message));
    byRun.set(runId, messages);
  }
  return byRun;
}

/** The transcript's record of an interrupt (a `log` event). */
export function interruptEvent(by: string): Record<string, unknown> {
  return { level: "info", phase: "interrupt", message: `Interrupted by ${by}`, interrupted_by: by };
}

/** At most this many runs are answered for one URL (findRunsByUrl): the latest. */
export const URL_MATCHES_MAX = 20;

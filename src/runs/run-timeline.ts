import { v5 as uuidv5 } from "uuid";
import type { RunEvent } from "../model/run.ts";
import { isTerminal } from "../model/run-state.ts";

/**
 * A run's lifecycle as the Warp Platform API's timeline (GET /agent/runs/{id}/timeline, docs/api.md), read
 * from its transcript: created (each execution's QUEUED), claimed (INPROGRESS), the agent started (its
 * first message, tool call or usage in the execution), and how each execution ended. Dispatch records no
 * container or shared-session event of its own, so those types never appear.
 */

const ENDED: Record<string, string> = {
  SUCCEEDED: "oz_run_done",
  FAILED: "oz_run_failed",
  ERROR: "oz_run_errored",
  CANCELLED: "oz_run_cancelled",
};

const AGENT_WORK = new Set(["message", "tool_call", "tool_result", "usage"]);

export function runTimeline(runId: string, events: readonly RunEvent[]) {
  const timeline: Array<{
    event_type: string;
    event_uuid: string;
    occurred_at: string;
    run_id: string;
    execution_id: number;
    payload: Record<string, unknown>;
  }> = [];
  let execution = 0;
  let agentStarted = false;
  const push = (type: string, e: RunEvent, payload: Record<string, unknown>) =>
    timeline.push({
      event_type: type,
      // Stable across reads: the same transcript event is always the same timeline event.
      event_uuid: uuidv5(String(e.seq), runId),
      occurred_at: e.at,
      run_id: runId,
      execution_id: Math.max(execution, 1),
      payload,
    });
  for (const e of events) {
    if (e.type === "state") {
      const state = String(e.data.state);
      const previous = e.data.previous == null ? null : String(e.data.previous);
      const payload = {
        state,
        previous,
        ...(e.data.status_message ? { status_message: e.data.status_message } : {}),
      };
      if (state === "QUEUED" && (previous === null || isTerminal(previous))) {
        execution++;
        agentStarted = false;
        push("oz_run_created", e, payload);
      } else if (state === "INPROGRESS") {
        push("oz_run_claimed", e, payload);
      } else if (ENDED[state]) {
        push(ENDED[state], e, payload);
      }
    } else if (!agentStarted && AGENT_WORK.has(e.type)) {
      agentStarted = true;
      push("agent_started", e, {});
    }
  }
  return { events: timeline };
}

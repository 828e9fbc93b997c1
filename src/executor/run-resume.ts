import type { RunEvent, RunRecord } from "../model/run.ts";
import { currentExecutionEvents } from "../model/run-resume.ts";
import type { Store } from "../store/store.ts";

/**
 * A run that moved to this worker (docs/architecture.md, "Runs survive their worker"): what its execution
 * had been given before the move, what was in flight when it moved, and what the agent and the
 * transcript are told.
 */

/** The input the execution had been given (the prompt on a first execution, then its follow-ups). */
export async function inputBeforeMove(
  store: Pick<Store, "listDeliveredFollowups">,
  run: RunRecord,
): Promise<{ input: string[]; modes: string[] }> {
  const delivered = await store.listDeliveredFollowups(run.id, run.execution);
  return {
    input: [...(run.execution === 1 && run.prompt ? [run.prompt] : []), ...delivered.map((f) => f.message)],
    modes: delivered.map((f) => f.mode),
  };
}

/** The tool calls of the current execution that never got their result: they are run again. */
export function stepsInFlight(events: readonly RunEvent[]): string[] {
  const current = currentExecutionEvents(events);
  const done = new Set<string>();
  let results = 0;
  for (const e of current) {
    if (e.type !== "tool_result") continue;
    results += 1;
    if (typeof e.data.call_id === "string") done.add(e.data.call_id);
  }
  const calls = current.filter((e) => e.type === "tool_call");
  // Calls with ids (builtin, external agents) match their results by id; the scripted harness's in order.
  const open = calls.some((c) => typeof c.data.call_id === "string")
    ? calls.filter((c) => !done.has(String(c.data.call_id)))
    : calls.slice(results);
  return open.map((c) => describeCall(c.data));
}

function describeCall(data: Record<string, unknown>): string {
  if (typeof data.command === "string") return `\`${data.command}\``;
  const input = data.input as Record<string, unknown> | undefined;
  if (input && typeof input.command === "string") return `\`${input.command}\``;
  return String(data.tool ?? "a tool call");
}

/** The transcript's `log` event on the worker that resumes the run. */
export function resumedEvent(
  reason: NonNullable<RunRecord["resuming"]>,
  restored: string,
  inFlight: readonly string[],
): Record<string, unknown> {
  const why = reason === "shutdown" ? "its worker shut down" : "its worker was lost";
  const rerun = inFlight.length
    ? ` The step that was in flight is run again: ${inFlight.join(", ")}; what it did outside the workspace may happen twice.`
    : "";
  return {
    level: "info",
    phase: "worker",
    message: `Moved to another worker (${why}) and resumed ${restored}.${rerun}`,
  };
}

/** What the agent is told when it continues on the new worker (its earlier turns are in its session). */
export const RESUME_NOTE =
  "Dispatch moved this run to another machine while you were working. The workspace is as it was at your " +
  "last completed step; a command that was still running was stopped and may not have finished. Check " +
  "where you are and continue the task.";

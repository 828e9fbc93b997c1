import { parseArgs } from "node:util";
import type { Dispatch, RunItem } from "@agent-dispatch/client";
import { waitingFor } from "../model/run-gates.ts";
import { apiClient, EXIT_OK, printJSON, UsageError } from "./api-output.ts";

/**
 * A run that waits for a person on the command line (docs/api.md "Plans that wait for approval"):
 * `dispatch approve` and `dispatch revise` answer a waiting plan through POST /agent/runs/{id}/approve,
 * and the other run commands say what a BLOCKED run waits for and how to answer it.
 */

/** `--follow` stops at a run that waits for a person with this status: neither done nor failed. */
export const EXIT_WAITING = 3;

/** The state as the commands show it: a waiting run with what it waits for (`BLOCKED (awaiting_approval)`). */
export function stateCell(run: Pick<RunItem, "state" | "status_message">): string {
  const reason = run.status_message?.reason;
  return run.state === "BLOCKED" && reason ? `BLOCKED (${reason})` : run.state;
}

/** What to type next for a run that waits, or undefined for any other. */
export function answerHint(run: Pick<RunItem, "run_id" | "state" | "status_message">): string | undefined {
  if (run.state !== "BLOCKED") return undefined;
  const reason = run.status_message?.reason;
  const waits = `Waiting for you: ${waitingFor(reason)}.`;
  if (reason === "awaiting_approval") {
    return `${waits} Read the plan with: dispatch logs ${run.run_id}\nThen: dispatch approve ${run.run_id} [--note …] · dispatch revise ${run.run_id} <changes> · dispatch cancel ${run.run_id}`;
  }
  if (reason === "awaiting_budget") {
    return `${waits} Answer with: dispatch budget ${run.run_id} extend <usd> · dispatch budget ${run.run_id} stop · dispatch cancel ${run.run_id}`;
  }
  return `${waits} Answer with: dispatch followup ${run.run_id} <message> · or dispatch cancel ${run.run_id}`;
}

/**
 * Whether a `state` event of BLOCKED is where following should stop: the run still waits and nothing
 * came after the event (a transcript replayed from the start passes earlier waits that were answered).
 */
export async function stillWaitingAt(
  dispatch: Dispatch,
  runId: string,
  seq: number,
): Promise<RunItem | undefined> {
  const run = await dispatch.runs.retrieve(runId);
  if (run.state !== "BLOCKED") return undefined;
  const later = await dispatch.runs.listEvents(runId, { after: seq, limit: 1 });
  return later.events.length === 0 ? run : undefined;
}

/** `dispatch approve <run> [--note …]` and `dispatch revise <run> <changes>`. */
export async function answerPlan(action: "approve" | "revise", argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { note: { type: "string" }, json: { type: "boolean" } },
  });
  const runId = positionals[0];
  if (!runId) throw new UsageError("give the run id (see dispatch list --state BLOCKED)");
  let body: { action: "approve" | "revise"; message?: string };
  if (action === "revise") {
    if (values.note !== undefined)
      throw new UsageError("--note goes with dispatch approve; revise takes the changes");
    const changes = positionals.slice(1).join(" ");
    if (changes.trim() === "") throw new UsageError("say what to change in the plan");
    body = { action, message: changes };
  } else {
    if (positionals.length > 1) throw new UsageError('dispatch approve takes a note as --note "…"');
    body = { action, ...(values.note?.trim() ? { message: values.note } : {}) };
  }
  const sent = await apiClient().runs.approve(runId, body);
  if (values.json) printJSON(sent);
  else {
    process.stdout.write(`${sent.followup_id}\n`);
    const what =
      action === "approve"
        ? "Approved: the run carries out its plan"
        : "Changes sent: the agent revises its plan, which waits for you again";
    process.stderr.write(`${what}. Follow it with: dispatch logs ${runId} --follow\n`);
  }
  return EXIT_OK;
}

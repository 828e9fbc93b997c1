import type { RunItem } from "./run-item.ts";
import type { RunsApi } from "./runs-api.ts";

/**
 * A run as the surfaces show it (docs/surfaces.md, "Waiting for you"): its RunItem and, while it waits for
 * its plan to be approved, the plan's text, read once by whoever renders it (the notifier, `status`).
 */
export type RunView = RunItem & { plan?: string };

/** Transcript events read per request when looking for the plan. */
const EVENTS_PAGE = 500;
/** A transcript longer than this many pages shows no plan rather than a slow card (the run page has it). */
const MAX_PAGES = 40;

/** What a BLOCKED run waits for (`status_message.reason`: run-gates.ts), or undefined for a run not waiting. */
export function waitingReason(run: Pick<RunItem, "state" | "status_message">): string | undefined {
  return run.state === "BLOCKED" ? (run.status_message?.reason ?? "") : undefined;
}

/** Whether the run waits for a person to approve its plan. */
export function waitsForApproval(run: Pick<RunItem, "state" | "status_message">): boolean {
  return waitingReason(run) === "awaiting_approval";
}

/** Whether the run waits for a person to extend its budget or stop it. */
export function waitsForBudget(run: Pick<RunItem, "state" | "status_message">): boolean {
  return waitingReason(run) === "awaiting_budget";
}

/**
 * What every surface offers to extend a run waiting for budget by (docs/surfaces.md, "Waiting for you"):
 * what it estimates it needs, rounded up to a whole dollar, at least $1.
 */
export function extendOffer(run: { budget?: { needs_usd?: number } | null }): number {
  return Math.max(1, Math.ceil((run.budget?.needs_usd ?? 0) - 1e-9));
}

/**
 * The plan the run waits to have approved: the agent's last message, the text its PLAN artifact holds
 * (executor/plan-approval.ts). Undefined when the transcript has none.
 */
export async function readPlan(runs: Pick<RunsApi, "events">, runId: string): Promise<string | undefined> {
  let plan: string | undefined;
  let after = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { events, next_after } = await runs.events(runId, after, EVENTS_PAGE);
    for (const e of events) {
      if (e.type === "message" && e.data.role === "assistant" && typeof e.data.text === "string") {
        plan = e.data.text;
      }
    }
    if (events.length < EVENTS_PAGE) return plan?.trim() || undefined;
    after = next_after;
  }
  return undefined;
}

/** The run with its plan when it waits for approval (the plan is left out when it cannot be read). */
export async function withPlan(
  runs: Pick<RunsApi, "events">,
  run: RunItem,
  onError: (err: unknown) => void,
): Promise<RunView> {
  if (!waitsForApproval(run)) return run;
  try {
    const plan = await readPlan(runs, run.run_id);
    return plan ? { ...run, plan } : run;
  } catch (err) {
    onError(err);
    return run;
  }
}

/** The run page of a run (`/runs/{id}`), next to its session page on the same server. */
export function runPageUrl(run: Pick<RunItem, "session_link" | "run_id">): string {
  return new URL(`../runs/${encodeURIComponent(run.run_id)}`, run.session_link).toString();
}

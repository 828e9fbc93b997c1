import type { BudgetRequest } from "../runs/budget-answer.ts";
import type { Command } from "./grammar.ts";

/**
 * What the tracker surfaces (GitHub, Jira) say about `extend $X` / `stop` typed to a run that waits for
 * budget (docs/surfaces.md, "Waiting for you"), so every surface words them alike.
 */

/** The API's answer for the command. */
export function budgetRequestOf(command: Command & { verb: "extend" | "stop" }): BudgetRequest {
  return command.verb === "extend" ? { action: "extend", amount_usd: command.amountUsd } : { action: "stop" };
}

/** A run that was not waiting for budget (answered already, never asked, or ended). */
export function notWaitingForBudgetText(runId: string, state: string): string {
  return `run \`${runId}\` is not waiting for budget (it is ${state}); mention me without \`extend\` or \`stop\` to send it a follow-up.`;
}

/** Refused (403): past the person's own monthly budgets, or not theirs to answer. `detail` says which. */
export function budgetRefusedText(detail: string): string {
  return `${detail} An admin must extend it (an admin key, or someone in \`budgets.admins\`).`;
}

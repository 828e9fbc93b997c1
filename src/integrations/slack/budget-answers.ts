import { usdText } from "../../model/budget.ts";
import type { Creator } from "../../model/run.ts";
import { stateWord } from "../../model/run-wording.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import { extendOffer, waitsForBudget } from "../../runs/waiting-run.ts";
import { describeError, runErrorCode } from "../run-errors.ts";
import type { Actor } from "./access.ts";
import { type GateAccessDeps, onItsCard, steerableHere } from "./gate-access.ts";

export interface BudgetAnswersDeps extends GateAccessDeps {
  runs: Pick<RunsApi, "budget" | "get">;
}

/**
 * The answers to a run that waits for budget from Slack (docs/surfaces.md, "Waiting for you"): the card's
 * Extend by $X and Stop here buttons, under the same rules as Approve (gate-access.ts). The clicker answers
 * as themself, so their own monthly limits apply: beyond them they are told an admin must extend it.
 */
export class BudgetAnswers {
  private readonly deps: BudgetAnswersDeps;

  constructor(deps: BudgetAnswersDeps) {
    this.deps = deps;
  }

  async fromCard(
    actor: Actor,
    who: Creator,
    runId: string,
    cardTs: string | undefined,
    action: "extend" | "stop",
    idempotencyKey: string,
    thread?: string,
  ): Promise<void> {
    const { runs, responder } = this.deps;
    if (!(await onItsCard(this.deps, actor, runId, cardTs, thread))) return;
    if (!(await steerableHere(this.deps, actor, runId, thread))) return;
    const run = await runs.get(runId).catch(() => undefined);
    if (!run || !waitsForBudget(run)) return responder.ephemeral(actor, answered(run?.state), thread);
    // The amount the card offered: what the run needs does not change while it waits.
    const amount = extendOffer(run);
    try {
      await runs.budget(runId, action === "extend" ? { action, amount_usd: amount } : { action }, {
        by: who,
        idempotencyKey,
      });
      await responder.ephemeral(
        actor,
        action === "extend"
          ? `Extended by ${usdText(amount)}: the agent continues in this run.`
          : "Stopped here: the agent delivers what it has, and the card shows what that is.",
        thread,
      );
    } catch (err) {
      const code = runErrorCode(err);
      if (code === "conflict") {
        const now = await runs.get(runId).catch(() => undefined);
        return responder.ephemeral(actor, answered(now?.state), thread);
      }
      if (code === "not_authorized") {
        return responder.ephemeral(
          actor,
          `You cannot ${action === "extend" ? "extend" : "stop"} this run's budget: ${describeError(err)} An admin must extend it (an admin key, or someone in \`budgets.admins\`).`,
          thread,
        );
      }
      await responder.ephemeral(actor, `Could not answer the budget: ${describeError(err)}`, thread);
    }
  }
}

/** A run no longer waiting for budget (answered by someone else, cancelled, finished). */
function answered(state: string | undefined): string {
  return `That run is not waiting for budget (it is ${stateWord(state ?? "not waiting").toLowerCase()}): it was answered already, or it never asked.`;
}

import { roleOf } from "../access/run-access.ts";
import { type BudgetAnswer, isMonthly, type RunBudget, usdText } from "../model/budget.ts";
import { RunError } from "../model/errors.ts";
import type { RunRecord } from "../model/run.ts";
import type { RunState } from "../model/run-state.ts";
import type { IdempotencyRecords, Store } from "../store/store.ts";
import { rememberAnswer, replayedAnswer } from "./answer-idempotency.ts";
import { type BudgetRules, budgetLimitsOf, isBudgetAdmin } from "./budget-limits.ts";
import { creatorOf, RunAudit } from "./run-audit.ts";
import type { RequestContext, RunService } from "./run-service.ts";

/** What a person says to a run waiting for budget. */
export type BudgetRequest = { action: "extend"; amount_usd: number } | { action: "stop" };

/** The run, answered, as POST /agent/runs/{id}/budget answers (docs/api.md). */
export interface BudgetAnswered {
  run_id: string;
  state: RunState;
  budget: Omit<RunBudget, "answer" | "over_usd">;
}

/**
 * Answers a run that waits for budget (BLOCKED, awaiting_budget; docs/api.md "Budgets"): Extend by $X
 * raises the run's allowance under every limit by $X beyond what it had spent, and the run continues;
 * Stop here has it deliver what it has and end. Either is the `answer` transition, a compare-and-set on
 * BLOCKED, so two answers never both apply. Who may: the requester within their own monthly limits, an
 * admin (an admin key, an admin of the web app, or one of budgets.admins) beyond them; anyone who may
 * steer the run may not.
 */
export class RunBudgets {
  private readonly runService: Pick<RunService, "getToSteer">;
  private readonly store: Pick<
    Store,
    "transition" | "reportUsage" | "listThreadBindings" | "appendAuditEvent" | keyof IdempotencyRecords
  >;
  private readonly rules: BudgetRules;
  private readonly audit: RunAudit;

  constructor(
    runService: Pick<RunService, "getToSteer">,
    store: Pick<
      Store,
      "transition" | "reportUsage" | "listThreadBindings" | "appendAuditEvent" | keyof IdempotencyRecords
    >,
    rules: BudgetRules,
  ) {
    this.runService = runService;
    this.store = store;
    this.rules = rules;
    this.audit = new RunAudit(store);
  }

  async answer(ctx: RequestContext, runId: string, request: BudgetRequest): Promise<BudgetAnswered> {
    const run = await this.runService.getToSteer(ctx.caller, runId, "followup");
    // Remembered under its Idempotency-Key once applied: a retry gets the same answer, not a conflict.
    const replayed = await replayedAnswer(this.store, ctx, `budget:${runId}`);
    if (replayed) return replayed.response as BudgetAnswered;
    if (run.state !== "BLOCKED" || run.statusMessage?.error_code !== "awaiting_budget") {
      throw new RunError(
        "conflict",
        `run ${runId} is ${run.state} and is not waiting for budget; send a follow-up instead`,
      );
    }
    const who = ctx.creator ?? creatorOf(ctx.caller);
    const admin =
      (roleOf(ctx.caller) === "admin" && !ctx.creator && !ctx.caller.surface) ||
      isBudgetAdmin(this.rules.budgets, who);
    if (!admin && who.uid !== run.creator.uid) {
      throw new RunError(
        "not_authorized",
        `run ${runId}: only the person who asked for it (${run.creator.display_name}) or an admin may extend or stop its budget`,
      );
    }
    const budget: RunBudget = { ...run.budget };
    let answer: BudgetAnswer;
    if (request.action === "extend") {
      if (!admin) await this.mustFitMonthly(run, request.amount_usd);
      budget.extended_usd = (budget.extended_usd ?? 0) + (budget.over_usd ?? 0) + request.amount_usd;
      answer = { action: "extend", amount_usd: request.amount_usd, by: who.display_name };
    } else {
      answer = { action: "stop", by: who.display_name };
    }
    const { over_usd: _over, needs_usd: _needs, ...kept } = budget;
    const answered = await this.store.transition(run.id, "answer", {
      budget: { ...kept, answer },
      eventData: { budget: request, answered_by: who.display_name },
    });
    if (!answered) {
      throw new RunError("conflict", `run ${runId} was answered or ended meanwhile; look at it again`);
    }
    const { answer: _given, over_usd: _overNow, ...left } = answered.budget ?? {};
    const response: BudgetAnswered = { run_id: answered.id, state: answered.state, budget: left };
    await rememberAnswer(this.store, ctx, `budget:${runId}`, response);
    // An answer to the run, as a follow-up is: the details say which.
    await this.audit.record(ctx, "run.followed_up", run.id, { budget: request });
    return response;
  }

  /**
   * The requester may extend only within their own limits: not past a monthly budget the run waits at,
   * and by no more than what each of its monthly budgets has left.
   */
  private async mustFitMonthly(run: RunRecord, amountUsd: number): Promise<void> {
    const paused = run.budget?.limit;
    if (paused && isMonthly(paused.scope)) {
      throw new RunError(
        "not_authorized",
        `run ${run.id} waits at ${paused.name} (${usdText(paused.limit_usd)}); only an admin may extend beyond it`,
      );
    }
    const own = run.requestUsage.inference_cost ?? run.budget?.spent_usd ?? 0;
    for (const limit of await budgetLimitsOf(this.store, this.rules, run)) {
      if (!isMonthly(limit.scope)) continue;
      const left = Math.max(0, limit.usd - limit.othersUsd - own);
      if (amountUsd > left) {
        throw new RunError(
          "not_authorized",
          `extending run ${run.id} by ${usdText(amountUsd)} would go over ${limit.name} of ${usdText(limit.usd)} (${usdText(left)} left); extend by less, or ask an admin`,
        );
      }
    }
  }
}

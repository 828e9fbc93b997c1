import type { Logger } from "pino";
import type { HarnessOutcome } from "../harnesses/harness.ts";
import {
  allowanceOf,
  BUDGET_WARNING_SHARE,
  type BudgetAnswer,
  type BudgetLimit,
  budgetReached,
  budgetWarning,
  estimateNeeds,
  type RunBudget,
  usdText,
} from "../model/budget.ts";
import type { PriceTable } from "../model/pricing.ts";
import type { RunEventType, RunRecord, StatusMessage } from "../model/run.ts";
import { type BudgetRules, budgetLimitsOf, tightestOf } from "../runs/budget-limits.ts";
import type { Store } from "../store/store.ts";
import { RunCost } from "./run-cost.ts";

export interface BudgetGateOptions {
  run: RunRecord;
  store: Pick<Store, "reportUsage" | "listThreadBindings" | "recordBudget">;
  workerId: string;
  prices: PriceTable | undefined;
  rules: BudgetRules;
  log: Logger;
  emit(type: RunEventType, data: Record<string, unknown>): Promise<void>;
  /** Stops the agent's turn under way (the run reached a limit and waits for more budget). */
  stopTurn(): void;
  /** Ends the run with `status` (it called a model without a price under a limit). */
  fail(status: StatusMessage): void;
}

/**
 * A run's budget during one execution (docs/runtime.md, "Budgets"): its cost meter held to the tightest of
 * its limits; its spend kept on the run while it works, with a warning at 80 %; at 100 % the agent's turn
 * stops and the run waits for more budget (BLOCKED, awaiting_budget) instead of failing. A person's answer
 * to an earlier pause is acted on here: Extend continues the agent, Stop here delivers what it has.
 */
export class BudgetGate {
  /** The run's cost meter; absent when the server keeps no prices. */
  readonly cost: RunCost | undefined;
  private readonly opts: BudgetGateOptions;
  private readonly limit: BudgetLimit | undefined;
  private readonly answer: BudgetAnswer | undefined;
  private budget: RunBudget;
  private paused: StatusMessage | undefined;
  private warned: boolean;
  private stopping: boolean;
  private writes: Promise<unknown> = Promise.resolve();

  private constructor(opts: BudgetGateOptions, limits: BudgetLimit[]) {
    this.opts = opts;
    const { answer, ...kept } = opts.run.budget ?? {};
    this.answer = answer;
    this.stopping = answer?.action === "stop";
    const extended = kept.extended_usd ?? 0;
    this.limit = tightestOf(limits, extended);
    this.budget = kept;
    this.warned = this.limit
      ? this.shareUsed(opts.run.requestUsage.inference_cost ?? 0) >= BUDGET_WARNING_SHARE
      : true;
    this.cost = opts.prices
      ? new RunCost({
          prices: opts.prices,
          limit: this.limit ? { usd: allowanceOf(this.limit, extended), name: this.limit.name } : undefined,
          before: opts.run.requestUsage,
          onCharge: (total) => this.charged(total),
          onLimitReached: (total) => this.reached(total),
          onUnpricedUnderLimit: (status) => this.unpricedUnderLimit(status),
          onUnpriced: (modelId) => this.unpriced(modelId),
        })
      : undefined;
  }

  /** The run's budget for this execution, recorded on the run (the answer it acts on taken off). */
  static async open(opts: BudgetGateOptions): Promise<BudgetGate> {
    const limits = opts.prices ? await budgetLimitsOf(opts.store, opts.rules, opts.run) : [];
    const gate = new BudgetGate(opts, limits);
    if (gate.limit || opts.run.budget) gate.record(opts.run.requestUsage.inference_cost ?? 0);
    await gate.writes;
    return gate;
  }

  /**
   * What the agent is given: the input, or after an extension with nothing else to say, to go on. The
   * transcript says who answered.
   */
  async input(given: string[]): Promise<string[]> {
    const answer = this.answer;
    if (!answer) return given;
    const message =
      answer.action === "extend"
        ? `${answer.by} extended the budget by ${usdText(answer.amount_usd)}; the run continues`
        : `${answer.by} stopped the run here at its budget; it delivers what it has`;
    await this.opts.emit("log", { level: "info", phase: "budget", message });
    if (answer.action !== "extend" || given.length) return given;
    return [
      `Your budget was extended by ${usdText(answer.amount_usd)}. Continue the task from where you stopped.`,
    ];
  }

  /**
   * The outcome of a turn that does not start: Stop here (once: what the run has is delivered), or the
   * run has spent its limit and waits for more without a model call. Undefined: the agent's turn runs.
   */
  beforeTurn(): HarnessOutcome | undefined {
    if (this.stopping) {
      this.stopping = false;
      const by = this.answer?.by ?? "someone";
      return { status: "succeeded", message: `Stopped at its budget by ${by}; what it had is delivered` };
    }
    if (!this.cost?.spent) return undefined;
    this.reached(this.cost.spentUsd, false);
    return { status: "succeeded" }; // afterTurn makes it wait
  }

  /** A turn the gate stopped at the limit ends waiting for more budget, its usage kept. */
  async afterTurn(outcome: HarnessOutcome): Promise<HarnessOutcome> {
    await this.writes;
    if (!this.paused) return outcome;
    const status = this.paused;
    this.paused = undefined;
    return {
      status: "succeeded",
      ...(outcome.usage ? { usage: outcome.usage } : {}),
      waitFor: { reason: "awaiting_budget", message: status.message },
    };
  }

  private shareUsed(total: number): number {
    if (!this.limit) return 0;
    return (this.limit.othersUsd + total) / (this.limit.usd + (this.budget.extended_usd ?? 0));
  }

  private charged(total: number): void {
    const shown = usdText(this.budget.spent_usd ?? 0) !== usdText(total);
    const warn = !this.warned && this.shareUsed(total) >= BUDGET_WARNING_SHARE;
    if (!shown && !warn) return;
    this.record(total);
    if (!warn) return;
    this.warned = true;
    const message = budgetWarning(this.budget.limit!);
    this.opts.log.info({ costUsd: total }, message);
    this.emitLater("log", { level: "warn", phase: "budget", message });
  }

  private reached(total: number, duringTurn = true): void {
    const limit = this.limit!;
    const allowance = allowanceOf(limit, this.budget.extended_usd ?? 0);
    const over = Math.max(0, total - allowance);
    const needs = estimateNeeds(total, over);
    this.paused = budgetReached(
      total,
      { ...limit, usd: limit.usd + (this.budget.extended_usd ?? 0) },
      limit.othersUsd + total,
      needs,
    );
    this.opts.log.info({ costUsd: total, limit: limit.name }, "run reached its budget; it waits for more");
    this.budget = { ...this.budget, over_usd: over, needs_usd: needs };
    this.record(total);
    if (duringTurn) this.opts.stopTurn();
  }

  private unpricedUnderLimit(status: StatusMessage): void {
    this.opts.log.warn(
      { reason: status.message },
      "run under a limit called a model without a price; stopping it",
    );
    this.emitLater("error", { message: status.message, error_code: "cost_limit" });
    this.opts.fail(status);
  }

  private unpriced(modelId: string): void {
    // A run without a limit: a local model without a price is normal, its cost is only not shown.
    const message = `No price is known for model ${modelId}, so this run's cost is not shown; the operator can add it under prices in dispatch.config.yaml`;
    this.emitLater("log", { level: "info", phase: "cost", message });
  }

  /** Keeps the run's spend and its tightest limit on the run, in order, for cards and pages. */
  private record(total: number): void {
    const limit = this.limit;
    this.budget = {
      ...this.budget,
      spent_usd: total,
      ...(limit
        ? {
            limit: {
              scope: limit.scope,
              name: limit.name,
              used_usd: limit.othersUsd + total,
              limit_usd: limit.usd + (this.budget.extended_usd ?? 0),
            },
          }
        : {}),
    };
    const budget = this.budget;
    const { store, run, workerId, log } = this.opts;
    this.writes = this.writes
      .then(() => store.recordBudget(run.id, workerId, budget))
      .catch((err) => log.warn({ err }, "recording the run's budget failed"));
  }

  private emitLater(type: RunEventType, data: Record<string, unknown>): void {
    void this.opts
      .emit(type, data)
      .catch((err) => this.opts.log.warn({ err }, "recording a budget event failed"));
  }
}

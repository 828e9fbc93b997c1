import type { StatusMessage } from "./run.ts";

/**
 * Budgets that pause and ask (docs/runtime.md, "Budgets"): the limits a run's cost counts against, what
 * the run keeps of them, and the words every surface uses for them.
 */

/**
 * Where a limit comes from: the run's own `config.max_cost_usd`, the server's default for every run, or
 * a monthly budget of the run's requester, repository, channel, schedule or team.
 */
export const BUDGET_SCOPES = [
  "run",
  "server",
  "person",
  "repository",
  "channel",
  "schedule",
  "team",
] as const;
export type BudgetScope = (typeof BUDGET_SCOPES)[number];

/** A limit a run works under. */
export interface BudgetLimit {
  scope: BudgetScope;
  /** The limit in USD: a run's own, or a month's for a monthly budget. */
  usd: number;
  /** What the scope's other runs created in the same month have cost (0 for a run's own limit). */
  othersUsd: number;
  /** In words: "its cost limit (config.max_cost_usd)", "the monthly budget of Ada", … */
  name: string;
}

/** Whether a limit counts a month of runs (against which only an admin may extend). */
export function isMonthly(scope: BudgetScope): boolean {
  return scope !== "run" && scope !== "server";
}

/** What the run itself may cost under `limit`, with the extensions people allowed it. */
export function allowanceOf(limit: BudgetLimit, extendedUsd: number): number {
  return limit.usd - limit.othersUsd + extendedUsd;
}

/** A person's answer to a run waiting for budget, until an execution of the run acts on it. */
export type BudgetAnswer =
  | { action: "extend"; amount_usd: number; by: string }
  | { action: "stop"; by: string };

/**
 * What a run keeps of its budget (runs.budget; `budget` on the wire): extensions, the limit it works under
 * as last measured, its spend while it works, and what it estimated it needs when it paused.
 */
export interface RunBudget {
  /** Dollars people allowed it beyond its limits, over all its pauses. */
  extended_usd?: number;
  /** The tightest of its limits. `used_usd` counts the scope's other runs of the month too. */
  limit?: { scope: BudgetScope; name: string; used_usd: number; limit_usd: number };
  /** What the run has cost so far, kept current while it works (request_usage is recorded per turn). */
  spent_usd?: number;
  /** When it paused: by how much it went over, and about how much more it needs. */
  over_usd?: number;
  needs_usd?: number;
  answer?: BudgetAnswer;
}

/** At this share of a limit the run's card warns. */
export const BUDGET_WARNING_SHARE = 0.8;

/** Dollars with enough digits that a small cost or limit is not shown as $0.00 or as its neighbour's. */
export function usdText(usd: number): string {
  if (usd >= 0.1 || usd === 0) return `$${usd.toFixed(2)}`;
  return `$${Number(usd.toPrecision(3))}`;
}

/** "82 %" of a limit. */
function shareText(used: number, limit: number): string {
  // Whole percents, not below the share (0.0105 / 0.01 is 104.999… in binary).
  return `${Math.floor((used / limit) * 100 + 1e-9)} %`;
}

/** The warning at 80 %: "80 % of the $5.00 budget spent (its cost limit)". */
export function budgetWarning(limit: NonNullable<RunBudget["limit"]>): string {
  return `${shareText(limit.used_usd, limit.limit_usd)} of the ${usdText(limit.limit_usd)} budget spent (${limit.name})`;
}

/**
 * The cost beside a run's budget, as cards and pages show it: "$0.42 of $5.00", a monthly budget named,
 * and from 80 % the warning. Empty without a limit.
 */
export function budgetText(
  budget: Pick<RunBudget, "limit" | "spent_usd"> | undefined,
  spentUsd: number | undefined,
): string {
  const limit = budget?.limit;
  if (!limit) return "";
  const spent = usdText(Math.max(spentUsd ?? 0, budget.spent_usd ?? 0));
  const of = isMonthly(limit.scope)
    ? `${spent} · ${usdText(limit.used_usd)} of ${limit.name}, ${usdText(limit.limit_usd)}`
    : `${spent} of ${usdText(limit.limit_usd)}`;
  return limit.used_usd >= BUDGET_WARNING_SHARE * limit.limit_usd
    ? `${of} (${shareText(limit.used_usd, limit.limit_usd)} spent)`
    : of;
}

/**
 * About how much more a run that reached its limit needs: as much again as it has cost, since how far it
 * got is not known; rounded up to two significant digits, and at least what it went over by.
 */
export function estimateNeeds(spentUsd: number, overUsd: number): number {
  const guess = Math.max(spentUsd, overUsd, 0.01);
  const scale = 10 ** (Math.floor(Math.log10(guess)) - 1);
  return Math.ceil(guess / scale - 1e-9) * scale;
}

/**
 * How a run that reached a limit waits (BLOCKED, awaiting_budget): what it spent, which limit, what it
 * estimates it needs, and the two answers.
 */
export function budgetReached(
  spentUsd: number,
  limit: Pick<BudgetLimit, "name" | "usd" | "scope">,
  usedUsd: number,
  needsUsd: number,
): StatusMessage {
  const reached = isMonthly(limit.scope)
    ? `${limit.name} of ${usdText(limit.usd)} is spent (${usdText(usedUsd)} this month)`
    : `${limit.name} is ${usdText(limit.usd)}`;
  return {
    message: `Paused at its budget: this run has cost ${usdText(spentUsd)} and ${reached}. It estimates it needs about ${usdText(needsUsd)} more. Extend its budget to continue, or stop here to deliver what it has.`,
    error_code: "awaiting_budget",
    retryable: false,
  };
}

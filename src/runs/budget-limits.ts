import type { BudgetsSettings } from "../config-budgets.ts";
import { allowanceOf, type BudgetLimit } from "../model/budget.ts";
import type { RunRecord } from "../model/run.ts";
import { threadKey } from "../model/thread-binding.ts";
import type { Store } from "../store/store.ts";
import type { UsageGroup } from "../store/usage-report.ts";

/** The budgets of a server (docs/runtime.md, "Budgets"): dispatch.config.yaml `budgets:` and the run default. */
export interface BudgetRules {
  budgets: BudgetsSettings;
  /** DISPATCH_MAX_COST_USD or budgets.run_usd: the limit of a run without config.max_cost_usd. */
  defaultMaxCostUsd?: number;
}

type Run = Pick<
  RunRecord,
  "id" | "teamId" | "createdAt" | "creator" | "agentConfig" | "schedule" | "requestUsage"
>;

/**
 * Every limit `run` works under: its own (config.max_cost_usd, else the server's default) and each monthly
 * budget that names its requester, repository, channel, schedule or team, with what the scope's other runs
 * created in the same calendar month (UTC) have cost, counted as GET /api/v1/usage counts them.
 */
export async function budgetLimitsOf(
  store: Pick<Store, "reportUsage" | "listThreadBindings">,
  rules: BudgetRules,
  run: Run,
): Promise<BudgetLimit[]> {
  const { budgets } = rules;
  const limits: BudgetLimit[] = [];
  if (run.agentConfig.max_cost_usd !== undefined) {
    limits.push({
      scope: "run",
      usd: run.agentConfig.max_cost_usd,
      othersUsd: 0,
      name: "its cost limit (config.max_cost_usd)",
    });
  } else if (rules.defaultMaxCostUsd !== undefined) {
    limits.push({
      scope: "server",
      usd: rules.defaultMaxCostUsd,
      othersUsd: 0,
      name: "the server's limit for a run (DISPATCH_MAX_COST_USD or budgets.run_usd)",
    });
  }
  const month = monthOf(run.createdAt);
  const own = run.requestUsage.inference_cost ?? 0;
  const monthly = async (
    scope: BudgetLimit["scope"],
    usd: number | undefined,
    name: string,
    group?: { by: UsageGroup; key: string },
  ) => {
    if (usd === undefined) return;
    const report = await store.reportUsage(run.teamId, { ...month, groupBy: group ? [group.by] : [] });
    const spent = group
      ? (report.rows.find((r) => r.keys[group.by] === group.key)?.knownCost ?? 0)
      : report.totals.knownCost;
    limits.push({ scope, usd, othersUsd: Math.max(0, spent - own), name });
  };

  const who = run.creator;
  await monthly(
    "person",
    budgets.people[who.uid] ?? (who.email ? budgets.people[who.email] : undefined) ?? budgets.person_usd,
    `the monthly budget of ${who.display_name || who.uid}`,
    { by: "person", key: who.uid },
  );
  const repository = run.agentConfig.repository;
  if (repository) {
    await monthly("repository", budgets.repositories[repository], `the monthly budget of ${repository}`, {
      by: "repository",
      key: repository,
    });
  }
  // Only a channel's budget needs the run's threads: without one they are not read.
  const origin =
    Object.keys(budgets.channels).length > 0
      ? (await store.listThreadBindings(run.id)).find((b) => !b.adopted)
      : undefined;
  if (origin) {
    const channel = threadKey(origin);
    await monthly("channel", budgets.channels[channel], `the monthly budget of channel ${channel}`, {
      by: "channel",
      key: channel,
    });
  }
  const schedule = run.schedule;
  if (schedule) {
    await monthly(
      "schedule",
      budgets.schedules[schedule.scheduleId] ??
        budgets.schedules[schedule.scheduleName] ??
        budgets.schedule_usd,
      `the monthly budget of schedule "${schedule.scheduleName}"`,
      { by: "schedule", key: schedule.scheduleId },
    );
  }
  await monthly("team", budgets.teams[run.teamId], "the team's monthly budget");
  return limits;
}

/** Of `limits`, the one that leaves the run least to spend; none without limits. */
export function tightestOf(limits: readonly BudgetLimit[], extendedUsd: number): BudgetLimit | undefined {
  let tightest: BudgetLimit | undefined;
  for (const limit of limits) {
    if (!tightest || allowanceOf(limit, extendedUsd) < allowanceOf(tightest, extendedUsd)) tightest = limit;
  }
  return tightest;
}

/** Whether `person` (a run's requester as its creator names them) may extend runs beyond their limits. */
export function isBudgetAdmin(budgets: BudgetsSettings, person: { uid: string; email?: string }): boolean {
  return budgets.admins.includes(person.uid) || (!!person.email && budgets.admins.includes(person.email));
}

/** The calendar month (UTC) `at` falls in, as a usage report's period. */
function monthOf(at: string): { from: string; to: string } {
  const d = new Date(at);
  const from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const to = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return { from: new Date(from).toISOString(), to: new Date(to).toISOString() };
}

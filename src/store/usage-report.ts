import type { AudienceFilter } from "../model/audience.ts";
import { roundCost } from "../model/pricing.ts";

/**
 * What `GET /api/v1/usage` groups a period's spend by (docs/api.md): the run's requester, the repository
 * it worked in, the thread it was asked in, the schedule that fired it, and the model each of its calls
 * used (a run that called several models is in one group per model).
 */
export const USAGE_GROUPS = ["person", "repository", "channel", "schedule", "model"] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

export interface UsageReportQuery {
  /** RFC 3339 UTC with milliseconds: runs created at or after `from` and before `to`. */
  from: string;
  to: string;
  /** Distinct keys, in the order the rows name them; none: one row of everything. */
  groupBy: readonly UsageGroup[];
  /** Only the runs a viewer's audience check allowed (absent: every run of the team). */
  audience?: AudienceFilter;
}

/** The sums of one group (or of the whole period). */
export interface UsageFigures {
  runs: number;
  inputTokens: number;
  outputTokens: number;
  /** What the group cost in USD; null when `unpricedRuns` is not 0 (a part of it has no price). */
  cost: number | null;
  /** The cost of the runs (or, by model, the calls) whose cost is known. */
  knownCost: number;
  /** Runs that used tokens without a price (by model: whose calls of that model had none). */
  unpricedRuns: number;
}

export interface UsageRow extends UsageFigures {
  /** One value per grouped key; null where a run has none (no repository, asked through the API, …). */
  keys: Partial<Record<UsageGroup, string | null>>;
  /** With `person`: the requester's name on their latest run in the period. */
  personName?: string;
  /** With `schedule`: the schedule's name on its latest run in the period. */
  scheduleName?: string;
}

export interface UsageReport {
  /** Most known cost first, then most runs, then by key. */
  rows: UsageRow[];
  /** Each run once, whatever the grouping. */
  totals: UsageFigures;
}

/** A group as both backends' single grouped query reads it: the keys by name, the sums as numbers. */
export interface UsageGroupRow {
  keys: Partial<Record<UsageGroup, string | null>>;
  personName?: string | null;
  scheduleName?: string | null;
  runs: number;
  inputTokens: number;
  outputTokens: number;
  knownCost: number;
  unpricedRuns: number;
}

/** The figures of a group as the API shows them: cost rounded to the micro-dollar, or null. */
export function usageFigures(g: Omit<UsageGroupRow, "keys" | "personName" | "scheduleName">): UsageFigures {
  const knownCost = roundCost(g.knownCost);
  return {
    runs: g.runs,
    inputTokens: g.inputTokens,
    outputTokens: g.outputTokens,
    cost: g.unpricedRuns > 0 ? null : knownCost,
    knownCost,
    unpricedRuns: g.unpricedRuns,
  };
}

/** The report from the backends' grouped rows and totals, its rows in one order on every backend. */
export function usageReport(
  groupBy: readonly UsageGroup[],
  groups: readonly UsageGroupRow[],
  totals: Omit<UsageGroupRow, "keys"> = sumGroups(groups),
): UsageReport {
  // Without keys the query's one group exists even when no run does: no row then.
  const rows = groups
    .filter((g) => g.runs > 0)
    .map(
      (g): UsageRow => ({
        keys: g.keys,
        ...usageFigures(g),
        ...(groupBy.includes("person") ? { personName: g.personName ?? g.keys.person ?? "" } : {}),
        ...(groupBy.includes("schedule") && g.keys.schedule ? { scheduleName: g.scheduleName ?? "" } : {}),
      }),
    );
  rows.sort((a, b) => b.knownCost - a.knownCost || b.runs - a.runs || compareKeys(groupBy, a, b));
  return { rows, totals: usageFigures(totals) };
}

/** The totals from groups that hold each run once (any grouping but by model). */
function sumGroups(groups: readonly UsageGroupRow[]): Omit<UsageGroupRow, "keys"> {
  const totals = { runs: 0, inputTokens: 0, outputTokens: 0, knownCost: 0, unpricedRuns: 0 };
  for (const g of groups) {
    totals.runs += g.runs;
    totals.inputTokens += g.inputTokens;
    totals.outputTokens += g.outputTokens;
    totals.knownCost += g.knownCost;
    totals.unpricedRuns += g.unpricedRuns;
  }
  return totals;
}

/** By each key in turn; a missing value (null) after every named one. */
function compareKeys(groupBy: readonly UsageGroup[], a: UsageRow, b: UsageRow): number {
  for (const key of groupBy) {
    const x = a.keys[key] ?? null;
    const y = b.keys[key] ?? null;
    if (x === y) continue;
    if (x === null) return 1;
    if (y === null) return -1;
    return x < y ? -1 : 1;
  }
  return 0;
}

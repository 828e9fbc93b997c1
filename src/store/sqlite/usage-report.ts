import type { SQLInputValue } from "node:sqlite";
import {
  USAGE_GROUPS,
  type UsageGroup,
  type UsageGroupRow,
  type UsageReport,
  type UsageReportQuery,
  usageReport,
} from "../usage-report.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";
import { audienceCondition } from "./runs.ts";

/**
 * Each key's value for one run (and, with `model`, one model of its request_usage). The channel is the
 * run's origin: the first thread it was asked in, never one it only delivered to (docs/surfaces.md).
 */
const KEY_SQL: Record<UsageGroup, string> = {
  person: "runs.creator_uid",
  repository: "runs.agent_config ->> '$.repository'",
  channel: `(SELECT b.platform || ':' || b.workspace || ':' || b.channel FROM thread_bindings b
     WHERE b.run_id = runs.id AND b.adopted = 0 ORDER BY b.created_at, b.platform, b.workspace, b.channel LIMIT 1)`,
  schedule: "runs.schedule_id",
  model: "m.key",
};

/**
 * The run's own figures, or with `model` those of one model of it. A run without a per-model record
 * (it called no model, or ran before Dispatch kept one) is one item with no model and its own figures.
 */
const RUN_ITEM = {
  input: "runs.request_usage ->> '$.input_tokens'",
  output: "runs.request_usage ->> '$.output_tokens'",
  cost: "runs.request_usage ->> '$.inference_cost'",
};
const MODEL_ITEM = {
  input: `CASE WHEN m.key IS NULL THEN ${RUN_ITEM.input} ELSE m.value ->> '$.input_tokens' END`,
  output: `CASE WHEN m.key IS NULL THEN ${RUN_ITEM.output} ELSE m.value ->> '$.output_tokens' END`,
  // A model's cost is absent once one of its calls had no price: the sum is then null.
  cost: `CASE WHEN m.key IS NULL THEN ${RUN_ITEM.cost}
     ELSE (m.value ->> '$.cost.input') + (m.value ->> '$.cost.cached_input') + (m.value ->> '$.cost.output') END`,
};

/**
 * A team's spend in a period, grouped in SQL: one range scan of runs_team_created (created_at is RFC 3339
 * UTC, so text order is time order) for the groups, and by model one more for the totals.
 */
export async function reportUsage(db: Database, teamId: string, q: UsageReportQuery): Promise<UsageReport> {
  const keys = USAGE_GROUPS.filter((k) => q.groupBy.includes(k));
  const groups = grouped(db, teamId, q, keys).map((row) => groupOf(row, keys));
  // By model a run of several models is in several groups: its totals are a scan of their own.
  const totals = keys.includes("model") ? groupOf(grouped(db, teamId, q, [])[0]!, []) : undefined;
  return usageReport(q.groupBy, groups, totals);
}

function grouped(db: Database, teamId: string, q: UsageReportQuery, keys: readonly UsageGroup[]): Row[] {
  const byModel = keys.includes("model");
  const item = byModel ? MODEL_ITEM : RUN_ITEM;
  const visible = q.audience ? audienceCondition(q.audience) : { sql: "TRUE", params: [] };
  const picked: Array<[alias: string, sql: string]> = [
    ...keys.map((k): [string, string] => [`k_${k}`, KEY_SQL[k]]),
    ...(keys.includes("person")
      ? [["person_name", "runs.creator ->> '$.display_name'"] as [string, string]]
      : []),
    ...(keys.includes("schedule") ? [["schedule_name", "runs.schedule_name"] as [string, string]] : []),
  ];
  // One item per run (or per model of a run), then the groups of them. SQLite takes the bare columns of
  // an aggregate with one MAX() from the row that has the maximum: the names on the group's latest run.
  const sql = `SELECT ${picked.map(([alias]) => `${alias}, `).join("")}MAX(created_at) AS latest, COUNT(*) AS runs,
       COALESCE(SUM(input), 0) AS input_tokens, COALESCE(SUM(output), 0) AS output_tokens,
       COALESCE(SUM(cost), 0) AS known_cost,
       COALESCE(SUM(cost IS NULL AND COALESCE(input, 0) + COALESCE(output, 0) > 0), 0) AS unpriced_runs
     FROM (SELECT ${picked.map(([alias, expr]) => `${expr} AS ${alias}, `).join("")}runs.created_at AS created_at,
         ${item.input} AS input, ${item.output} AS output, ${item.cost} AS cost
       FROM runs${byModel ? " LEFT JOIN json_each(runs.request_usage, '$.models') m" : ""}
       WHERE runs.team_id = ? AND runs.created_at >= ? AND runs.created_at < ? AND ${visible.sql})
     ${keys.length ? `GROUP BY ${keys.map((k) => `k_${k}`).join(", ")}` : ""}`;
  const params: SQLInputValue[] = [teamId, q.from, q.to, ...visible.params];
  return db.sql(sql).all(...params) as Row[];
}

function groupOf(row: Row, keys: readonly UsageGroup[]): UsageGroupRow {
  const text = (v: SQLInputValue | undefined) => (v === null || v === undefined ? null : String(v));
  return {
    keys: Object.fromEntries(keys.map((k) => [k, text(row[`k_${k}`])])),
    personName: text(row.person_name),
    scheduleName: text(row.schedule_name),
    runs: Number(row.runs),
    inputTokens: Number(row.input_tokens),
    outputTokens: Number(row.output_tokens),
    knownCost: Number(row.known_cost),
    unpricedRuns: Number(row.unpriced_runs),
  };
}

import {
  USAGE_GROUPS,
  type UsageGroup,
  type UsageGroupRow,
  type UsageReport,
  type UsageReportQuery,
  usageReport,
} from "../usage-report.ts";
import type { Database } from "./database.ts";
import { audienceCondition } from "./runs.ts";

type Row = Record<string, unknown>;

/**
 * Each key's value for one run (and, with `model`, one model of its request_usage). The channel is the
 * run's origin: the first thread it was asked in, never one it only delivered to (docs/surfaces.md).
 * agent_config, creator and request_usage are JSON stored as text, as on SQLite.
 */
const KEY_SQL: Record<UsageGroup, string> = {
  person: "runs.creator_uid",
  repository: "runs.agent_config::json ->> 'repository'",
  channel: `(SELECT b.platform || ':' || b.workspace || ':' || b.channel FROM thread_bindings b
     WHERE b.run_id = runs.id AND NOT b.adopted ORDER BY b.created_at, b.platform, b.workspace, b.channel LIMIT 1)`,
  schedule: "runs.schedule_id",
  model: "m.key",
};

/**
 * The run's own figures, or with `model` those of one model of it. A run without a per-model record
 * (it called no model, or ran before Dispatch kept one) is one item with no model and its own figures.
 * Each JSON text is parsed once, into the columns of USAGE_JSON and MODEL_JSON.
 */
const RUN_ITEM = { input: "u.input_tokens", output: "u.output_tokens", cost: "u.inference_cost" };
const MODEL_ITEM = {
  input: "CASE WHEN m.key IS NULL THEN u.input_tokens ELSE mu.input_tokens END",
  output: "CASE WHEN m.key IS NULL THEN u.output_tokens ELSE mu.output_tokens END",
  // A model's cost is absent once one of its calls had no price: the sum is then null.
  cost: "CASE WHEN m.key IS NULL THEN u.inference_cost ELSE mc.input + mc.cached_input + mc.output END",
};
const USAGE_JSON = `CROSS JOIN LATERAL json_to_record(runs.request_usage::json)
  AS u(input_tokens numeric, output_tokens numeric, inference_cost float8, models json)`;
const MODEL_JSON = `LEFT JOIN LATERAL json_each(u.models) m ON TRUE
  LEFT JOIN LATERAL json_to_record(m.value) AS mu(input_tokens numeric, output_tokens numeric, cost json) ON TRUE
  LEFT JOIN LATERAL json_to_record(mu.cost) AS mc(input float8, cached_input float8, output float8) ON TRUE`;

/**
 * A team's spend in a period, grouped in SQL: one scan of the period's runs (a range of runs_team_created:
 * created_at is RFC 3339 UTC text in the C collation, so text order is time order; the table itself when
 * the period holds most of them) for the groups, and by model one more for the totals.
 */
export async function reportUsage(db: Database, teamId: string, q: UsageReportQuery): Promise<UsageReport> {
  const keys = USAGE_GROUPS.filter((k) => q.groupBy.includes(k));
  const groups = (await grouped(db, teamId, q, keys)).map((row) => groupOf(row, keys));
  // By model a run of several models is in several groups: its totals are a scan of their own.
  const totals = keys.includes("model") ? groupOf((await grouped(db, teamId, q, []))[0]!, []) : undefined;
  return usageReport(q.groupBy, groups, totals);
}

function grouped(
  db: Database,
  teamId: string,
  q: UsageReportQuery,
  keys: readonly UsageGroup[],
): Promise<Row[]> {
  const params: unknown[] = [teamId, q.from, q.to];
  const bind = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const byModel = keys.includes("model");
  const item = byModel ? MODEL_ITEM : RUN_ITEM;
  const visible = q.audience ? ` AND ${audienceCondition(q.audience, bind)}` : "";
  const latest = (column: string) => `(array_agg(${column} ORDER BY created_at DESC))[1] AS ${column}`;
  const names = [
    ...(keys.includes("person") ? [["person_name", "runs.creator::json ->> 'display_name'"]] : []),
    ...(keys.includes("schedule") ? [["schedule_name", "runs.schedule_name"]] : []),
  ];
  // One item per run (or per model of a run), then the groups of them; the names on the group's latest run.
  return db.rows(
    `SELECT ${[...keys.map((k) => `k_${k}`), ...names.map(([alias]) => latest(alias!))].map((c) => `${c}, `).join("")}
       COUNT(*) AS runs, COALESCE(SUM(input), 0) AS input_tokens, COALESCE(SUM(output), 0) AS output_tokens,
       COALESCE(SUM(cost), 0) AS known_cost,
       COUNT(*) FILTER (WHERE cost IS NULL AND COALESCE(input, 0) + COALESCE(output, 0) > 0) AS unpriced_runs
     FROM (SELECT ${[...keys.map((k) => [`k_${k}`, KEY_SQL[k]]), ...names].map(([alias, expr]) => `${expr} AS ${alias}, `).join("")}
         runs.created_at AS created_at, ${item.input} AS input, ${item.output} AS output, ${item.cost} AS cost
       FROM runs ${USAGE_JSON}${byModel ? ` ${MODEL_JSON}` : ""}
       WHERE runs.team_id = $1 AND runs.created_at >= $2 AND runs.created_at < $3${visible}) items
     ${keys.length ? `GROUP BY ${keys.map((k) => `k_${k}`).join(", ")}` : ""}`,
    params,
  );
}

function groupOf(row: Row, keys: readonly UsageGroup[]): UsageGroupRow {
  const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
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

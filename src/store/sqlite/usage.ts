import type { AudienceFilter } from "../../model/audience.ts";
import type { UsageSummary } from "../store.ts";
import { foldUsage, numberOrNull } from "../usage-fold.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";
import { audienceCondition } from "./runs.ts";

/**
 * The web dashboard's usage: a team's runs since an instant, summed per UTC day and per requester, in one
 * scan of the range of runs_team_created (created_at is RFC 3339 UTC: its first ten characters are the day).
 */
export async function summarizeUsage(
  db: Database,
  teamId: string,
  since: string,
  audience?: AudienceFilter,
): Promise<UsageSummary> {
  const visible = audience ? audienceCondition(audience) : { sql: "TRUE", params: [] };
  // SQLite takes a bare column of an aggregate with MAX() from the row that has the maximum: the name the
  // requester had on their latest run of the day.
  const rows = db
    .sql(
      `SELECT substr(created_at, 1, 10) AS day, creator_uid AS uid,
         json_extract(creator, '$.display_name') AS display_name, MAX(created_at) AS latest,
         COUNT(*) AS runs, COALESCE(SUM(json_extract(request_usage, '$.total_tokens')), 0) AS tokens,
         SUM(json_extract(request_usage, '$.inference_cost')) AS cost
       FROM runs WHERE team_id = ? AND created_at >= ? AND ${visible.sql}
       GROUP BY day, creator_uid`,
    )
    .all(teamId, since, ...visible.params) as Row[];
  return foldUsage(
    rows.map((row) => ({
      day: String(row.day),
      uid: String(row.uid),
      displayName: String(row.display_name ?? row.uid),
      latest: String(row.latest),
      runs: Number(row.runs),
      tokens: Number(row.tokens),
      cost: numberOrNull(row.cost),
    })),
  );
}

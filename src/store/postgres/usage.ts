import type { AudienceFilter } from "../../model/audience.ts";
import type { UsageSummary } from "../store.ts";
import { foldUsage, numberOrNull } from "../usage-fold.ts";
import type { Database } from "./database.ts";
import { audienceCondition } from "./runs.ts";

/**
 * The web dashboard's usage: a team's runs since an instant, summed per UTC day and per requester, in one
 * scan of the range of runs_team_created (created_at is RFC 3339 UTC: its first ten characters are the day).
 * request_usage and creator are JSON stored as text, as on SQLite.
 */
export async function summarizeUsage(
  db: Database,
  teamId: string,
  since: string,
  audience?: AudienceFilter,
): Promise<UsageSummary> {
  const params: unknown[] = [teamId, since];
  const bind = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const visible = audience ? ` AND ${audienceCondition(audience, bind)}` : "";
  const rows = await db.rows(
    `SELECT substr(created_at, 1, 10) AS day, creator_uid AS uid,
       (array_agg(creator::json ->> 'display_name' ORDER BY created_at DESC))[1] AS display_name,
       MAX(created_at) AS latest, COUNT(*) AS runs,
       COALESCE(SUM((request_usage::json ->> 'total_tokens')::numeric), 0) AS tokens,
       SUM((request_usage::json ->> 'inference_cost')::float8) AS cost
     FROM runs WHERE team_id = $1 AND created_at >= $2${visible}
     GROUP BY day, creator_uid`,
    params,
  );
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

import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import type { RunAccess } from "../../access/run-access.ts";
import type { Store } from "../../store/store.ts";
import type { UsageFigures, UsageGroup, UsageReport } from "../../store/usage-report.ts";
import { json, operation, route } from "../operation.ts";
import { ApiError } from "../problem.ts";
import { USAGE_PERIOD_MAX_DAYS, UsageQuerySchema, UsageReportSchema } from "../schemas/usage.ts";
import { usageCsv } from "../usage-csv.ts";

export interface UsageRoutesOptions {
  store: Pick<Store, "reportUsage">;
  /** The access rule: a caller's report covers only the runs it may see, as the run list does. */
  access: Pick<RunAccess, "filter">;
  now?: () => number;
}

const DAY_MS = 24 * 3600_000;

export const usageOperations = {
  getUsage: operation({
    id: "getUsage",
    method: "GET",
    path: "/usage",
    tag: "usage",
    summary: "Spend in a period by person, repository, channel, schedule and model (Dispatch extension)",
    description:
      "Runs created in [from, to) that the key may see (an admin key: all of its team's), grouped by `group_by` and summed: runs, input and output tokens, cost in USD. A group with runs whose cost is unknown (a model without a price) has `cost_usd: null` and says how many in `unpriced_runs`. At most 366 days. `Accept: text/csv` or `format=csv` answers the rows as CSV with a header row.",
    access: "key",
    query: UsageQuerySchema,
    responses: {
      200: {
        description: "The report.",
        content: { ...json(UsageReportSchema), "text/csv": z.string() },
      },
    },
    errors: ["invalid_request"],
  }),
};

/** GET /usage: the team's spend as the caller may see it, as JSON or CSV. */
export async function usageRoutes(app: FastifyInstance, opts: UsageRoutesOptions): Promise<void> {
  const now = opts.now ?? Date.now;
  route(app, usageOperations.getUsage, async (req, reply, { query }) => {
    const to = query.to ?? new Date(now()).toISOString();
    const from = query.from ?? monthStartBefore(to);
    refuseBadPeriod(from, to);
    const groupBy = query.group_by ?? [];
    const audience = await opts.access.filter(req.caller!);
    const report = await opts.store.reportUsage(req.caller!.team.id, {
      from,
      to,
      groupBy,
      ...(audience ? { audience } : {}),
    });
    const wire = usageToWire(from, to, groupBy, report);
    if (!wantsCsv(req, query.format)) return wire;
    return reply
      .header("content-type", "text/csv; charset=utf-8")
      .header(
        "content-disposition",
        `attachment; filename="usage-${from.slice(0, 10)}-${to.slice(0, 10)}.csv"`,
      )
      .send(usageCsv(wire));
  });
}

/** The first instant of the UTC month of the instant just before `to`: `to=2026-04-01` alone is March. */
function monthStartBefore(to: string): string {
  const before = new Date(Date.parse(to) - 1);
  return new Date(Date.UTC(before.getUTCFullYear(), before.getUTCMonth(), 1)).toISOString();
}

function refuseBadPeriod(from: string, to: string): void {
  if (from > to) {
    throw new ApiError("invalid_request", `from (${from}) is after to (${to}); give from before to`);
  }
  if (Date.parse(to) - Date.parse(from) > USAGE_PERIOD_MAX_DAYS * DAY_MS) {
    throw new ApiError(
      "invalid_request",
      `the period from ${from} to ${to} is over ${USAGE_PERIOD_MAX_DAYS} days; ask for a year or less at a time`,
    );
  }
}

/** CSV when `format=csv`, or without `format` when the client accepts text/csv and not JSON first. */
function wantsCsv(req: FastifyRequest, format: "json" | "csv" | undefined): boolean {
  if (format) return format === "csv";
  const accept = String(req.headers.accept ?? "").toLowerCase();
  const csv = accept.indexOf("text/csv");
  const json = accept.indexOf("application/json");
  return csv >= 0 && (json < 0 || csv < json);
}

function figuresToWire(f: UsageFigures) {
  return {
    runs: f.runs,
    input_tokens: f.inputTokens,
    output_tokens: f.outputTokens,
    cost_usd: f.cost,
    known_cost_usd: f.knownCost,
    unpriced_runs: f.unpricedRuns,
  };
}

/** The report on the wire: snake_case, each row's keys beside its figures. */
function usageToWire(
  from: string,
  to: string,
  groupBy: readonly UsageGroup[],
  report: UsageReport,
): z.output<typeof UsageReportSchema> {
  return {
    period: { from, to },
    group_by: [...groupBy],
    rows: report.rows.map((row) => ({
      ...row.keys,
      ...(row.personName !== undefined ? { person_name: row.personName } : {}),
      ...(row.scheduleName !== undefined ? { schedule_name: row.scheduleName } : {}),
      ...figuresToWire(row),
    })),
    totals: figuresToWire(report.totals),
  };
}

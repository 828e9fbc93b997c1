import { z } from "zod";
import { USAGE_GROUPS, type UsageGroup } from "../../store/usage-report.ts";
import { Timestamp } from "./common.ts";

/** The usage report (docs/api.md, "Usage"): a Dispatch extension. */

/** The longest period one report covers: a leap year. */
export const USAGE_PERIOD_MAX_DAYS = 366;

const DATE_OR_TIME =
  /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))?$/;

/** A bound of the period: a UTC date (its midnight) or an RFC 3339 time, read as UTC with milliseconds. */
const periodBound = (name: string) =>
  z
    .string()
    .superRefine((s, ctx) => {
      const parts = DATE_OR_TIME.exec(s);
      const [year, month, day] = parts ? [Number(parts[1]), Number(parts[2]), Number(parts[3])] : [0, 0, 0];
      if (!parts) {
        ctx.addIssue({
          code: "custom",
          message: `${name} must be a date such as 2026-03-01 or an RFC 3339 time such as 2026-03-01T00:00:00Z`,
        });
      } else if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) {
        ctx.addIssue({ code: "custom", message: `${name}: ${s.slice(0, 10)} is not a day of the calendar` });
      } else if (year < 1970) {
        // No run is older; and a year before 1 (a month before 0000-01-01) is no RFC 3339 time to answer with.
        ctx.addIssue({ code: "custom", message: `${name}: give a date from 1970-01-01 on` });
      }
    })
    .transform((s) => new Date(s.length === 10 ? `${s}T00:00:00Z` : s).toISOString())
    .meta({
      description: "A date (midnight UTC) or an RFC 3339 time.",
      pattern: DATE_OR_TIME.source,
    });

/** `group_by=person,model` (or the parameter repeated): known keys, each once, in the order given. */
const GroupBySchema = z
  .union([z.string(), z.array(z.string())])
  .transform((given, ctx): UsageGroup[] => {
    const keys = (Array.isArray(given) ? given : [given]).flatMap((s) => s.split(",")).map((s) => s.trim());
    const unknown = keys.filter((k) => !(USAGE_GROUPS as readonly string[]).includes(k));
    if (unknown.length) {
      ctx.addIssue({
        code: "custom",
        message: `group_by: unknown key ${unknown.map((k) => JSON.stringify(k)).join(", ")}; group by any of ${USAGE_GROUPS.join(", ")}, separated by commas`,
      });
      return z.NEVER;
    }
    const twice = keys.find((k, i) => keys.indexOf(k) !== i);
    if (twice) {
      ctx.addIssue({ code: "custom", message: `group_by names ${twice} twice; name each key once` });
      return z.NEVER;
    }
    return keys as UsageGroup[];
  })
  .meta({
    description: `Comma-separated, any of ${USAGE_GROUPS.join(", ")}; none: one row of the whole period.`,
  });

export const UsageQuerySchema = z.strictObject({
  from: periodBound("from")
    .optional()
    .meta({ description: "Inclusive; the first day of `to`'s month (UTC) when not given." }),
  to: periodBound("to").optional().meta({ description: "Exclusive; now when not given." }),
  group_by: GroupBySchema.optional(),
  format: z
    .enum(["json", "csv"], { error: "format must be json or csv" })
    .optional()
    .meta({ description: "csv: the rows as CSV with a header row (as `Accept: text/csv`)." }),
});

const UsageFiguresSchema = z.object({
  runs: z.number().int().meta({ description: "Runs created in the period (by model: that called it)." }),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  cost_usd: z.number().nullable().meta({
    description:
      "What it cost in USD; null when unpriced_runs is not 0 (known_cost_usd is then the known part).",
  }),
  known_cost_usd: z
    .number()
    .meta({ description: "The cost of the runs (by model: the calls) with a price." }),
  unpriced_runs: z.number().int().meta({
    description: "Runs that used tokens of a model without a price (by model: of this model).",
  }),
});

export const UsageTotalsSchema = UsageFiguresSchema.meta({ id: "UsageTotals" });

const key = (description: string) => z.string().nullable().optional().meta({ description });

export const UsageRowSchema = UsageFiguresSchema.extend({
  person: key("The requester's id (the runs' `creator.uid`)."),
  person_name: z.string().optional().meta({ description: "The requester's name on their latest run." }),
  repository: key("The runs' `config.repository`; null for runs without one."),
  channel: key("`platform:workspace:channel` of the thread the runs were asked in; null for the API's runs."),
  schedule: key("The schedule that fired the runs; null for runs asked for directly."),
  schedule_name: z.string().optional().meta({ description: "The schedule's name on its latest run." }),
  model: key("The model called (`provider/model`); null for runs that called none."),
}).meta({ id: "UsageRow" });

export const UsageReportSchema = z
  .object({
    period: z.object({ from: Timestamp, to: Timestamp }),
    group_by: z.array(z.enum(USAGE_GROUPS)),
    rows: z.array(UsageRowSchema).meta({ description: "Most known cost first, then most runs." }),
    totals: UsageTotalsSchema.meta({ description: "Each run once, whatever the grouping." }),
  })
  .meta({ id: "UsageReport" });

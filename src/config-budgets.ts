import { z } from "zod";

/**
 * `budgets:` in dispatch.config.yaml (docs/runtime.md, "Budgets"): limits in US dollars that pause a run
 * and ask instead of failing it. A run's own limit (the default of a run without config.max_cost_usd),
 * and monthly ones: each person's, each schedule's, named people's, schedules', repositories', channels'
 * and teams'. A month is a calendar month (UTC) of the runs created in it, as GET /api/v1/usage counts.
 */

const dollars = z
  .number({ error: "must be a number of US dollars, such as 5 or 0.50" })
  .positive("must be more than 0 US dollars (leave it out for no limit)")
  .max(1_000_000, "must be at most 1000000 US dollars");

/** Keys of a map of budgets: what names the person, repository, channel, schedule or team. */
function budgetsBy(what: string, key: z.ZodString) {
  return z
    .record(z.string(), dollars)
    .superRefine((map, ctx) => {
      for (const name of Object.keys(map)) {
        if (!key.safeParse(name).success) ctx.addIssue({ code: "custom", path: [name], message: what });
      }
    })
    .default({});
}

export const BudgetsSettingsSchema = z
  .object({
    /** Every run's limit unless its config.max_cost_usd says otherwise (as DISPATCH_MAX_COST_USD). */
    run_usd: dollars.optional(),
    /** Each person's runs in a month, unless `people` names them. */
    person_usd: dollars.optional(),
    /** Each schedule's runs in a month, unless `schedules` names it. */
    schedule_usd: dollars.optional(),
    people: budgetsBy(
      "people are named by the id a run's creator.uid shows (a Slack user id, a GitHub login, a principal id) or by e-mail",
      z.string().regex(/^\S{1,320}$/),
    ),
    schedules: budgetsBy("schedules are named by their id or name", z.string().min(1).max(200)),
    repositories: budgetsBy(
      "repositories are named as config.repository names them: owner/repo or an https:// URL",
      z.string().regex(/^([\w.-]+\/[\w.-]+|https:\/\/\S+)$/),
    ),
    channels: budgetsBy(
      "channels are named as GET /api/v1/usage shows them: platform:workspace:channel, such as slack:T0123ABCD:C0123ABCD",
      z.string().regex(/^[a-z][a-z0-9-]*:[^:\s]+:[^\s]+$/),
    ),
    teams: budgetsBy("teams are named by their id, such as team_default", z.string().regex(/^\S{1,200}$/)),
    /**
     * People who may extend a run beyond a limit, besides admin API keys and admins signed in to the web
     * app: by creator uid or e-mail, as `people`.
     */
    admins: z.array(z.string().regex(/^\S{1,320}$/, "must be a person's id or e-mail")).default([]),
  })
  .strict();

export type BudgetsSettings = z.infer<typeof BudgetsSettingsSchema>;

export const NO_BUDGETS: BudgetsSettings = BudgetsSettingsSchema.parse({});

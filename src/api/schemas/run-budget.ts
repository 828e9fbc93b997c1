import { z } from "zod";
import { BUDGET_SCOPES } from "../../model/budget.ts";
import { CreatorSchema } from "./creator.ts";

const usd = z.number().meta({ description: "US dollars." });

/** `budget` of a RunItem (docs/api.md, "Budgets"): a Dispatch extension. */
export const RunBudgetSchema = z
  .object({
    extended_usd: usd.optional().meta({ description: "What people allowed the run beyond its limits." }),
    limit: z
      .object({
        scope: z.enum(BUDGET_SCOPES).meta({
          description:
            "run: its config.max_cost_usd; server: the default for every run; the others: a monthly budget.",
        }),
        name: z.string().meta({ description: "The limit in words." }),
        used_usd: usd.meta({
          description: "Spent against it: this run, and for a monthly one the month's other runs.",
        }),
        limit_usd: usd.meta({ description: "The limit, with the run's extensions." }),
      })
      .optional()
      .meta({ description: "The tightest limit the run works under, as last measured." }),
    spent_usd: usd.optional().meta({ description: "What the run has cost so far, current while it works." }),
    needs_usd: usd
      .optional()
      .meta({ description: "While it waits for budget: about how much more it estimates it needs." }),
  })
  .meta({ id: "RunBudget" });

export const BudgetRequestSchema = z
  .object({
    action: z.enum(["extend", "stop"]).meta({
      description:
        "extend: the run may spend amount_usd more than it had, and continues; stop: it delivers what it has and ends.",
    }),
    amount_usd: z
      .number({ error: "amount_usd must be a number of US dollars, such as 5" })
      .positive("amount_usd must be more than 0 US dollars")
      .max(100_000, "amount_usd must be at most 100000 US dollars")
      .optional()
      .meta({ description: "With extend (required): by how many US dollars." }),
    on_behalf_of: z.object({ creator: CreatorSchema }).nullish().meta({
      description:
        "Dispatch extension for integrations (admin keys only; ignored for other keys): the person who answers, whose limits then apply.",
    }),
  })
  .strict()
  .refine((body) => body.action !== "extend" || body.amount_usd !== undefined, {
    message: "amount_usd: required with action extend (by how many US dollars, such as 5)",
    path: ["amount_usd"],
  })
  .refine((body) => body.action !== "stop" || body.amount_usd === undefined, {
    message: "amount_usd: only with action extend; leave it out to stop here",
    path: ["amount_usd"],
  })
  .meta({ id: "BudgetRequest" });

export const BudgetResponseSchema = z
  .object({
    run_id: z.string(),
    state: z.string().meta({ description: "INPROGRESS: the run continues (extend) or delivers (stop)." }),
    budget: RunBudgetSchema,
  })
  .meta({ id: "BudgetResponse" });

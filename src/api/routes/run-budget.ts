import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import type { RunBudgets } from "../../runs/budget-answer.ts";
import { json, operation, route } from "../operation.ts";
import { BudgetRequestSchema, BudgetResponseSchema } from "../schemas/run-budget.ts";
import { idempotencyKey } from "./runs.ts";

export const runBudgetOperations = {
  answerBudget: operation({
    id: "answerBudget",
    method: "POST",
    path: "/agent/runs/{runId}/budget",
    tag: "runs",
    summary: "Extend the budget of a run that waits for it, or stop it there (a Dispatch extension)",
    description:
      "Only a run that is BLOCKED with reason awaiting_budget; any other is 409 (a retry with the same Idempotency-Key gets the first answer again). extend: the run may spend amount_usd more than it had, and continues in the same execution; stop: it delivers what it has (a run with a repository: its work so far committed, pushed and in a pull request) and ends. The run's requester may extend within their own monthly budgets, an admin beyond them; anyone else gets 403.",
    access: "key",
    idempotent: true,
    body: { schema: BudgetRequestSchema, required: true },
    responses: {
      200: { description: "The run, answered: INPROGRESS again.", content: json(BudgetResponseSchema) },
    },
    errors: [
      "invalid_request",
      "not_authorized",
      "resource_not_found",
      "conflict",
      "idempotency_key_reused",
      "payload_too_large",
    ],
  }),
};

/** Budgets that pause and ask (docs/api.md): the answer, through RunBudgets so the access rule applies. */
export async function runBudgetRoutes(app: FastifyInstance, opts: { budgets: RunBudgets }): Promise<void> {
  route(app, runBudgetOperations.answerBudget, async (req) => {
    const body = req.body as z.infer<typeof BudgetRequestSchema>;
    // A surface answering for a person (its admin key, remote mode): the person's limits apply, not the key's.
    const behalf = body.on_behalf_of;
    const by = behalf && req.caller!.key.role === "admin" ? behalf.creator : undefined;
    const key = idempotencyKey(req);
    return opts.budgets.answer(
      {
        caller: req.caller!,
        ...(by ? { creator: by } : {}),
        ...(key ? { idempotencyKey: key, rawBody: req.body } : {}),
      },
      req.params.runId,
      body.action === "extend" ? { action: "extend", amount_usd: body.amount_usd! } : { action: "stop" },
    );
  });
}

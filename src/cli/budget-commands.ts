import { parseArgs } from "node:util";
import { apiClient, EXIT_OK, printJSON, UsageError } from "./api-output.ts";

/**
 * `dispatch budget <run> extend <usd> | stop` (docs/api.md "Budgets"): answers a run that waits for budget
 * through POST /agent/runs/{id}/budget, as the API key's person (their own monthly budgets apply unless
 * the key is an admin's).
 */
export async function answerBudget(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: "boolean" } },
  });
  const [runId, action, amount, ...extra] = positionals;
  if (!runId) throw new UsageError("give the run id (see dispatch list --state BLOCKED)");
  let body: { action: "extend"; amount_usd: number } | { action: "stop" };
  if (action === "extend") {
    // "$5" as well as "5": people write dollars with the sign.
    const usd = Number((amount ?? "").replace(/^\$/, ""));
    if (amount === undefined || extra.length > 0 || !Number.isFinite(usd) || usd <= 0) {
      throw new UsageError("say by how many US dollars: dispatch budget <run id> extend 5");
    }
    body = { action, amount_usd: usd };
  } else if (action === "stop") {
    if (amount !== undefined) throw new UsageError("dispatch budget <run id> stop takes nothing more");
    body = { action };
  } else {
    throw new UsageError("say extend <usd> or stop: dispatch budget <run id> extend 5 | stop");
  }
  const answered = await apiClient().runs.budget(runId, body);
  if (values.json) printJSON(answered);
  else {
    process.stdout.write(`${answered.state}\n`);
    const what =
      body.action === "extend"
        ? `Extended by $${body.amount_usd}: the run continues`
        : "Stopped here: the run delivers what it has";
    process.stderr.write(`${what}. Follow it with: dispatch logs ${runId} --follow\n`);
  }
  return EXIT_OK;
}

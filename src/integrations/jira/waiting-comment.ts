import { waitingFor } from "../../model/run-gates.ts";
import { truncate } from "../../model/run-wording.ts";
import { extendOffer, type RunView, waitingReason } from "../../runs/waiting-run.ts";
import { type Block, bold, code, paragraph, t } from "./comment-doc.ts";

/** How much of a plan the run's comment holds (Jira refuses comments over 32,767 characters). */
const PLAN_LIMIT = 12_000;

/**
 * What the run's comment says of a run waiting for a person (docs/surfaces.md, "Waiting for you"): what it
 * waits for and, for a plan or a budget, the mentions that answer it (Jira comments have no buttons).
 */
export function waitingBlocks(run: RunView): Block[] {
  const reason = waitingReason(run);
  if (reason === undefined) return [];
  const message = run.status_message?.message;
  const blocks: Block[] = [
    paragraph(bold(`✋ Waiting for ${waitingFor(reason)}`), t(message ? `: ${message}` : "")),
  ];
  if (reason === "awaiting_budget") {
    blocks.push(
      paragraph(
        t("Answer with a comment that mentions me: "),
        code(`extend $${extendOffer(run)}`),
        t(" (or another amount in US dollars) lets it spend that much more and continue, "),
        code("stop"),
        t(
          " has it deliver what it has. The person who asked may extend within their own monthly budget; beyond it an admin must.",
        ),
      ),
    );
    return blocks;
  }
  if (reason !== "awaiting_approval") return blocks;
  if (run.plan) blocks.push(paragraph(t("The plan:")), { preformatted: truncate(run.plan, PLAN_LIMIT) });
  blocks.push(
    paragraph(
      t("Answer with a comment that mentions me: "),
      code("approve"),
      t(" (a note after it goes to the agent) carries the plan out in this run, "),
      code("revise <what to change>"),
      t(" has it planned again, "),
      code("cancel"),
      t(" stops the run."),
    ),
  );
  return blocks;
}

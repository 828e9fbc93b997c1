import { waitingFor } from "../../model/run-gates.ts";
import { truncate } from "../../model/run-wording.ts";
import { extendOffer, type RunView, runPageUrl, waitingReason } from "../../runs/waiting-run.ts";

/** How much of a plan a tracking comment quotes (GitHub's limit is 65,536 for the whole comment). */
const PLAN_LIMIT = 20_000;

/**
 * What a tracking comment says of a run waiting for a person (docs/surfaces.md, "Waiting for you"): what it
 * waits for and, for a plan or a budget, the comments that answer it (GitHub has no buttons). `inert`
 * keeps text from the run from mentioning anyone or forging a marker; `handle` is the bot's, when known.
 */
export function waitingLines(
  run: RunView,
  inert: (text: string, oneLine?: boolean) => string,
  handle?: string,
): string[] {
  const reason = waitingReason(run);
  if (reason === undefined) return [];
  const message = run.status_message?.message;
  const lines = [`**Waiting for ${waitingFor(reason)}**${message ? `: ${inert(message, true)}` : ""}`, ""];
  const say = (words: string) => `\`${handle ? `@${handle} ` : ""}${words}\``;
  if (reason === "awaiting_budget") {
    lines.push(
      `Answer with a comment${handle ? "" : " that mentions me"}: ${say(`extend $${extendOffer(run)}`)} (or another amount in US dollars) lets it spend that much more and continue, ${say("stop")} has it deliver what it has. The person who asked may extend within their own monthly budget; beyond it an admin must.`,
      "",
    );
    return lines;
  }
  if (reason !== "awaiting_approval") return lines;
  if (run.plan) {
    lines.push("The plan:", "", quoted(inert(truncate(run.plan, PLAN_LIMIT))), "");
  } else {
    lines.push(`The plan is on [the run page](${runPageUrl(run)}).`, "");
  }
  lines.push(
    `Answer with a comment${handle ? "" : " that mentions me"}: ${say("approve")} (a note after it goes to the agent) carries the plan out in this run, ${say("revise <what to change>")} has it planned again, ${say("cancel")} stops the run.`,
    "",
  );
  return lines;
}

function quoted(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => `> ${line}`)
    .join("\n");
}

import { createHash } from "node:crypto";
import { deliveryLine, deliverySummary, repositoryLabel } from "../../model/delivery-summary.ts";
import { isTerminal } from "../../model/run-state.ts";
import {
  agentFact,
  costText,
  elapsedText,
  oneLine,
  resolvedOptions,
  stateEmoji,
  stateWords,
  truncate,
} from "../../model/run-wording.ts";
import { capitalized, stallWords } from "../../model/stall.ts";
import type { RunItem } from "../../runs/run-item.ts";
import type { RunView } from "../../runs/waiting-run.ts";
import {
  type Block,
  bold,
  type CommentDoc,
  code,
  type Inline,
  link,
  mention,
  paragraph,
  t,
} from "./comment-doc.ts";
import { waitingBlocks } from "./waiting-comment.ts";

/**
 * What a run shows on its Jira issue (docs/surfaces.md, Jira): one comment per run, edited in place as it
 * progresses (state, title, agent and options, elapsed time, cost, what a waiting run waits for, where the
 * work goes with the pull request, the run page), and at the end a short comment that mentions the requester. Pure functions of the
 * run as RunsApi returns it, in the words every surface shares (model/run-wording.ts).
 */

/** Jira refuses very long comments (32,767 characters); a failure message is cut well before. */
const MESSAGE_LIMIT = 4_000;
const TITLE_LIMIT = 300;

function headline(run: RunItem): Inline[] {
  const title = truncate(oneLine(run.title || "Untitled run"), TITLE_LIMIT);
  return [t(`${stateEmoji(run.state)} `), bold(stateWords(run)), t(` · ${title}`)];
}

/** "in acme/app@main · PR #12 opened · +3 −1 in 2 files", the pull request as a link. */
function deliveryInlines(run: RunItem): Inline[] | undefined {
  const summary = deliverySummary(run);
  if (!summary) return undefined;
  const out: Inline[] = [t("in "), code(truncate(repositoryLabel(summary), 300))];
  const line = deliveryLine(summary);
  const pr = summary.pullRequest;
  if (line && pr) {
    const words = `PR #${pr.number} ${pr.ended ?? (pr.updated ? "updated" : "opened")}`;
    out.push(t(" · "));
    if (line.startsWith(words)) out.push(link(words, pr.url), t(line.slice(words.length)));
    else out.push(t(line));
  } else if (line) {
    out.push(t(` · ${line}`));
  }
  return out;
}

function failure(run: RunItem): Block[] {
  const failed = run.state === "FAILED" || run.state === "ERROR";
  const message = run.status_message?.message;
  return failed && message ? [{ preformatted: truncate(message, MESSAGE_LIMIT) }] : [];
}

function runPage(publicUrl: string, run: RunItem): string {
  return `${publicUrl}/runs/${run.run_id}`;
}

function buildCard(run: RunView, publicUrl: string, elapsed: string | null, stall?: string): CommentDoc {
  const doc: CommentDoc = [paragraph(...headline(run))];
  const facts = [
    agentFact(run),
    resolvedOptions(run),
    elapsed === null ? "" : `elapsed ${elapsed}`,
    costText(run),
  ].filter(Boolean);
  if (facts.length > 0) doc.push(paragraph(t(facts.join(" · "))));
  doc.push(...waitingBlocks(run));
  if (stall && !isTerminal(run.state)) {
    doc.push(
      paragraph(
        bold(`⚠️ ${capitalized(stall)}`),
        t(": the agent may be stuck. Mention me with "),
        code("cancel"),
        t(" to stop it, then ask again to retry."),
      ),
    );
  }
  const delivery = deliveryInlines(run);
  if (delivery) doc.push(paragraph(...delivery));
  doc.push(...failure(run));
  doc.push(paragraph(link("Run page", runPage(publicUrl, run))));
  if (!isTerminal(run.state)) {
    doc.push(
      paragraph(t("Mention me to steer this run, or mention me with "), code("cancel"), t(" to stop it.")),
    );
  }
  return doc;
}

/** The run's comment on its issue: edited as the run moves on. */
export function renderCard(run: RunView, publicUrl: string, now: number, stalledMs?: number): CommentDoc {
  return buildCard(
    run,
    publicUrl,
    elapsedText(run, now),
    stalledMs === undefined ? undefined : stallWords(stalledMs),
  );
}

/** What the card shows minus a running run's elapsed time: equal means no edit is needed. */
export function cardFingerprint(run: RunView, stalled = false): string {
  const doc = buildCard(
    run,
    "",
    isTerminal(run.state) ? elapsedText(run, 0) : null,
    stalled ? stallWords(0) : undefined,
  );
  return createHash("sha256").update(JSON.stringify(doc)).digest("base64url").slice(0, 22);
}

/** The short comment at a terminal state: mentions the requester (they get a notification). */
export function renderFinal(
  run: RunItem,
  publicUrl: string,
  requester: { id: string; name: string },
): CommentDoc {
  const doc: CommentDoc = [paragraph(mention(requester.id, requester.name), t(" "), ...headline(run))];
  const delivery = deliveryInlines(run);
  if (delivery) doc.push(paragraph(...delivery));
  doc.push(...failure(run));
  if (run.state === "FAILED" || run.state === "ERROR") {
    doc.push(
      paragraph(
        t("What to do: mention me with instructions to have the agent try again (same run, same branch)."),
      ),
    );
  }
  doc.push(paragraph(link("Run page", runPage(publicUrl, run))));
  return doc;
}

/** `status`: what the card shows, as a new comment. */
export function renderStatus(run: RunItem, publicUrl: string, now = Date.now()): CommentDoc {
  return renderCard(run, publicUrl, now).filter(
    (b) => !("paragraph" in b && b.paragraph.some((i) => "text" in i && i.text.startsWith("Mention me to"))),
  );
}

/** A short answer to the person who asked (a refusal, a notice). */
export function renderNotice(person: { id: string; name: string }, text: string): CommentDoc {
  return [paragraph(mention(person.id, person.name), t(` ${text}`))];
}

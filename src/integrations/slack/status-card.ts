import { createHash } from "node:crypto";
import type { ActionsBlock, Button, ContextBlock, KnownBlock, SectionBlock } from "@slack/types";
import {
  type DeliverySummary,
  deliveryLine,
  deliverySummary,
  repositoryLabel,
} from "../../model/delivery-summary.ts";
import { isTerminal } from "../../model/run-state.ts";
import {
  agentFact,
  costText,
  elapsedText,
  resolvedOptions,
  stateWords,
  truncate,
} from "../../model/run-wording.ts";
import { capitalized, stallWords } from "../../model/stall.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { RunView } from "../../runs/waiting-run.ts";
import { waitingBlocks, waitingButtons, waitingText } from "./waiting-card.ts";

/**
 * The Slack status card of a run (docs/surfaces.md): one message per run, edited in place. Pure functions
 * of the run as RunsApi returns it, so the Slack app reuses them for `/agent status`.
 */

/** Slack's limits: message text, one section's text, blocks per message. */
export const SLACK_LIMITS = { text: 40_000, section: 3_000, blocks: 50 } as const;

export const ACTION_OPEN_SESSION = "dispatch_open_session";
export const ACTION_CANCEL = "dispatch_cancel";
/** Shown on a stalled run's card: cancels it and starts the same request again in the thread. */
export const ACTION_RETRY = "dispatch_retry";

export interface SlackMessage {
  /** Plain-text fallback (notifications, screen readers, clients without blocks). */
  text: string;
  blocks: KnownBlock[];
}

/** The reaction for a terminal state on the triggering mention (👀 is added by the Slack app). */
export function outcomeReaction(state: string): string | undefined {
  if (state === "SUCCEEDED") return "white_check_mark";
  if (state === "FAILED" || state === "ERROR") return "x";
  if (state === "CANCELLED") return "no_entry_sign";
  return undefined;
}

export function stateEmoji(state: string): string {
  switch (state) {
    case "QUEUED":
      return ":hourglass_flowing_sand:";
    case "INPROGRESS":
      return ":arrows_counterclockwise:";
    case "BLOCKED":
      return ":raised_hand:";
    case "SUCCEEDED":
      return ":white_check_mark:";
    case "FAILED":
    case "ERROR":
      return ":x:";
    case "CANCELLED":
      return ":no_entry_sign:";
    default:
      return ":grey_question:";
  }
}

/** Escapes the three characters Slack's mrkdwn reserves. */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** A block quote in mrkdwn, every line of it. */
function quote(text: string): string {
  return escapeMrkdwn(text)
    .split(/\r?\n/)
    .map((line) => `> ${line}`)
    .join("\n");
}

const MAX_PR_LINKS = 10;

function pullRequests(run: RunView): Array<{ url: string; label: string }> {
  return (run.artifacts ?? [])
    .filter((a) => a.artifact_type === "PULL_REQUEST" && typeof a.data?.url === "string")
    .map((a) => {
      const url = String(a.data.url);
      const number = /\/pull\/(\d+)/.exec(url)?.[1];
      return { url, label: number ? `PR #${number}` : "Pull request" };
    });
}

function link(url: string, label: string): string {
  // A URL cannot carry `|` or `>` inside Slack's <url|label> syntax.
  return `<${url.replace(/[|>]/g, encodeURIComponent)}|${escapeMrkdwn(label)}>`;
}

/**
 * The delivery in mrkdwn: "<url|PR #123 opened> · +12 −3 in 4 files" (the PR words link to it), "No
 * changes", or undefined while there is nothing to say. The words are deliveryLine's.
 */
function deliveryMrkdwn(summary: DeliverySummary | undefined): string | undefined {
  const line = summary && deliveryLine(summary);
  if (!line) return undefined;
  const pr = summary.pullRequest;
  if (!pr) return escapeMrkdwn(line);
  const [head = line, ...rest] = line.split(" · ");
  return [link(pr.url, head), ...rest.map(escapeMrkdwn)].join(" · ");
}

/** The same in plain text (the message's fallback): "PR #123 opened · +12 −3 in 4 files https://…". */
function deliveryPlain(summary: DeliverySummary | undefined): string | undefined {
  const line = summary && deliveryLine(summary);
  if (!line) return undefined;
  return summary.pullRequest ? `${line} ${summary.pullRequest.url}` : line;
}

function buildCard(run: RunView, elapsed: string | null, stall?: string): SlackMessage {
  const terminal = isTerminal(run.state);
  const words = stateWords(run);
  const title = run.title || "Untitled run";
  const failed = run.state === "FAILED" || run.state === "ERROR";
  const statusMessage = failed ? run.status_message?.message : undefined;

  const blocks: KnownBlock[] = [];
  const headline: SectionBlock = {
    type: "section",
    text: {
      type: "mrkdwn",
      text: truncate(
        `${stateEmoji(run.state)} *${escapeMrkdwn(words)}* · ${escapeMrkdwn(title)}`,
        SLACK_LIMITS.section,
      ),
    },
  };
  blocks.push(headline);

  const delivery = deliverySummary(run);
  const where = delivery ? `in ${repositoryLabel(delivery)}` : "";
  const facts = [
    agentFact(run),
    where,
    resolvedOptions(run),
    elapsed === null ? "" : `elapsed ${elapsed}`,
    costText(run),
  ].filter(Boolean);
  if (facts.length > 0) {
    const context: ContextBlock = {
      type: "context",
      elements: [{ type: "mrkdwn", text: truncate(escapeMrkdwn(facts.join(" · ")), SLACK_LIMITS.section) }],
    };
    blocks.push(context);
  }

  if (statusMessage) {
    blocks.push({
      type: "section",
      text: { type: "mrkdwn", text: truncate(quote(statusMessage), SLACK_LIMITS.section) },
    });
  }
  blocks.push(...waitingBlocks(run, escapeMrkdwn));

  // A stalled run (model/stall.ts) says so where the eye lands, with what to do about it.
  const stalled = stall && !terminal ? capitalized(stall) : undefined;
  if (stalled) {
    blocks.push({
      type: "section",
      text: {
        type: "mrkdwn",
        text: `:warning: *${escapeMrkdwn(stalled)}*: the agent may be stuck. *Retry* cancels it and starts the same request again here.`,
      },
    });
  }

  const delivered = deliveryMrkdwn(delivery);
  if (delivered) {
    blocks.push({
      type: "section",
      text: { type: "mrkdwn", text: truncate(delivered, SLACK_LIMITS.section) },
    });
  }

  // The delivered PR is linked above; other PR artifacts (if any) stay with the links.
  const prs = pullRequests(run).filter((p) => p.url !== delivery?.pullRequest?.url);
  const links = [
    link(run.session_link, "Session"),
    ...prs.slice(0, MAX_PR_LINKS).map((p) => link(p.url, p.label)),
  ];
  if (prs.length > MAX_PR_LINKS) links.push(`and ${prs.length - MAX_PR_LINKS} more`);
  blocks.push({
    type: "section",
    text: { type: "mrkdwn", text: truncate(links.join(" · "), SLACK_LIMITS.section) },
  });

  const buttons: Button[] = [
    {
      type: "button",
      action_id: ACTION_OPEN_SESSION,
      text: { type: "plain_text", text: "Open session" },
      url: run.session_link,
    },
    ...waitingButtons(run),
  ];
  if (!terminal) {
    buttons.push({
      type: "button",
      action_id: ACTION_CANCEL,
      text: { type: "plain_text", text: "Cancel" },
      value: run.run_id,
      style: "danger",
      confirm: {
        title: { type: "plain_text", text: "Cancel this run?" },
        text: {
          type: "mrkdwn",
          text: truncate(`The agent working on *${escapeMrkdwn(title)}* will be stopped.`, 300),
        },
        confirm: { type: "plain_text", text: "Cancel run" },
        deny: { type: "plain_text", text: "Keep running" },
        style: "danger",
      },
    });
  }
  if (stalled) {
    buttons.push({
      type: "button",
      action_id: ACTION_RETRY,
      text: { type: "plain_text", text: "Retry" },
      value: run.run_id,
      style: "primary",
      confirm: {
        title: { type: "plain_text", text: "Retry this run?" },
        text: {
          type: "mrkdwn",
          text: truncate(
            `The stalled run *${escapeMrkdwn(title)}* will be cancelled and a new run started with the same request.`,
            300,
          ),
        },
        confirm: { type: "plain_text", text: "Retry" },
        deny: { type: "plain_text", text: "Keep waiting" },
      },
    });
  }
  const actions: ActionsBlock = { type: "actions", block_id: "dispatch_run_actions", elements: buttons };
  blocks.push(actions);

  const textParts = [`${words}: ${title}${where ? ` (${where})` : ""}`];
  const deliveredPlain = deliveryPlain(delivery);
  if (deliveredPlain) textParts.push(deliveredPlain);
  if (statusMessage) textParts.push(statusMessage);
  const waiting = waitingText(run);
  if (waiting) textParts.push(waiting);
  if (stalled) textParts.push(stalled);
  textParts.push(run.session_link);
  return {
    text: truncate(textParts.join("\n"), SLACK_LIMITS.text),
    blocks: blocks.slice(0, SLACK_LIMITS.blocks),
  };
}

/**
 * The status card: state emoji and words, title, resolved options, elapsed time, links (session, pull
 * requests), the status message on failure, what a waiting run waits for with its answers
 * (waiting-card.ts), `Open session` and (until terminal) `Cancel` buttons; a
 * stalled run (`stalledMs`, model/stall.ts) also "No progress for 5 min" and a `Retry` button.
 */
export function renderStatusCard(
  run: RunView,
  _binding?: Pick<ThreadBinding, "requester"> | null,
  now: number | Date = Date.now(),
  stalledMs?: number,
): SlackMessage {
  return buildCard(run, elapsedText(run, now), stalledMs === undefined ? undefined : stallWords(stalledMs));
}

/**
 * What the card shows, minus the elapsed time of a run still under way: equal fingerprints mean an edit
 * would change nothing a person cares about, so the notifier does not send one.
 */
export function cardFingerprint(run: RunView, stalled = false): string {
  // A stalled card's note without its duration: the note appearing or going is an edit, its minutes are not.
  const card = buildCard(
    run,
    isTerminal(run.state) ? elapsedText(run, 0) : null,
    stalled ? stallWords(0) : undefined,
  );
  return createHash("sha256").update(JSON.stringify(card)).digest("base64url").slice(0, 22);
}

/** The thread reply at a terminal state: mentions the requester once, with the outcome and status message. */
export function renderFinalReply(run: RunView, binding: Pick<ThreadBinding, "requester">): SlackMessage {
  const words = stateWords(run);
  const failed = run.state === "FAILED" || run.state === "ERROR";
  const mention = /^[UW][A-Z0-9]+$/.test(binding.requester) ? `<@${binding.requester}> ` : "";
  let text = `${mention}${stateEmoji(run.state)} *${escapeMrkdwn(words)}* · ${escapeMrkdwn(run.title || "Untitled run")}`;
  const delivered = deliveryMrkdwn(deliverySummary(run));
  if (delivered) text += `\n${delivered}`;
  if (failed && run.status_message?.message) text += `\n${quote(run.status_message.message)}`;
  text += `\n${link(run.session_link, "Open session")}`;
  text = truncate(text, SLACK_LIMITS.section);
  return { text, blocks: [{ type: "section", text: { type: "mrkdwn", text } }] };
}

import { createHash } from "node:crypto";
import { deliveryLine, deliverySummary, repositoryLabel } from "../../model/delivery-summary.ts";
import { isTerminal } from "../../model/run-state.ts";
import {
  agentFact,
  costText,
  elapsedText,
  resolvedOptions,
  stateEmoji,
  stateWords,
  truncate,
} from "../../model/run-wording.ts";
import { capitalized, stallWords } from "../../model/stall.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { RunItem } from "../../runs/run-item.ts";
import type { RunView } from "../../runs/waiting-run.ts";
import { waitingLines } from "./waiting-comment.ts";

/**
 * The GitHub side of a run's progress (docs/surfaces.md): one *tracking comment* per run on its issue or
 * pull request, carrying a hidden marker and edited in place; a short comment mentioning the requester at
 * a terminal state; a reaction for the outcome on the triggering comment. Pure functions of the run as
 * RunsApi returns it.
 *
 * Outcome reactions (GitHub's fixed set): 🎉 `hooray` succeeded, 😕 `confused` failed, 👎 `-1` cancelled.
 * 👀 `eyes` (received) is added by the GitHub integration when the comment arrives.
 */

/** GitHub refuses comment bodies over 65,536 characters; we stay well under, at 60,000. */
export const GITHUB_COMMENT_LIMIT = 60_000;

/** The hidden marker of a run's tracking comment: found again after a crash between post and record. */
export function trackingMarker(runId: string): string {
  return `<!-- dispatch:run=${runId} -->`;
}

/** Every comment Dispatch writes carries a `<!-- dispatch:` marker: the bot never acts on its own words. */
export const DISPATCH_MARKER_PREFIX = "<!-- dispatch:";

export function githubOutcomeReaction(state: string): "hooray" | "confused" | "-1" | undefined {
  if (state === "SUCCEEDED") return "hooray";
  if (state === "FAILED" || state === "ERROR") return "confused";
  if (state === "CANCELLED") return "-1";
  return undefined;
}

/**
 * Text from a run (title, status message) shown in a comment: no accidental @mentions (they would notify
 * people, or wake the bot), no HTML comments (they could forge a marker), no line breaks in one-liners.
 */
export function inertText(text: string, oneLine = false): string {
  let out = text.replace(/@(?=[A-Za-z0-9])/g, "@\u200b").replace(/<!--/g, "&lt;!--");
  if (oneLine) out = out.replace(/\s*\n\s*/g, " ");
  return out;
}

function blockQuote(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => `> ${line}`)
    .join("\n");
}

/** A Markdown link whose URL cannot break out of its parentheses. */
function link(text: string, url: string): string {
  return `[${text}](${url.replace(/[()\s]/g, encodeURIComponent)})`;
}

/** The run's pull requests as links, each once, leaving out `except` (already shown). */
function pullRequestLinks(run: RunItem, except?: string): string[] {
  const urls = (run.artifacts ?? [])
    .filter((a) => a.artifact_type === "PULL_REQUEST" && typeof a.data?.url === "string")
    .map((a) => String(a.data.url))
    .filter((url) => url !== except);
  return [...new Set(urls)].map((url) => {
    const number = /\/pull\/(\d+)/.exec(url)?.[1];
    return link(number ? `PR #${number}` : "Pull request", url);
  });
}

/** Text in a Markdown code span: no mention, link or HTML comment inside it renders. */
function codeSpan(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  const pad = text.startsWith("`") || text.endsWith("`") ? " " : "";
  return `${fence}${pad}${text.replace(/\s+/g, " ")}${pad}${fence}`;
}

/**
 * Where the run's work goes (docs/delivery.md): "in `owner/repo@base`", then the pull request as a link with
 * the diff stat ("PR #123 opened · +12 −3 in 4 files", "updated" after a follow-up) or "No changes".
 * Undefined for a run without a repository; `shownUrl` is the pull request it links.
 */
function deliveryText(run: RunItem): { text: string; shownUrl?: string } | undefined {
  const summary = deliverySummary(run);
  if (!summary) return undefined;
  const parts = [`in ${codeSpan(truncate(repositoryLabel(summary), 300))}`];
  const line = deliveryLine(summary);
  const pr = summary.pullRequest;
  if (line && pr) {
    const words = `PR #${pr.number} ${pr.updated ? "updated" : "opened"}`;
    parts.push(
      line.startsWith(words)
        ? `${link(words, pr.url)}${inertText(line.slice(words.length), true)}`
        : inertText(line, true),
    );
  } else if (line) {
    parts.push(inertText(line, true));
  }
  return { text: parts.join(" · "), ...(pr ? { shownUrl: pr.url } : {}) };
}

function buildTrackingComment(
  run: RunView,
  elapsed: string | null,
  stall: string | undefined,
  handle: string | undefined,
): string {
  const title = truncate(inertText(run.title || "Untitled run", true), 300);
  const failed = run.state === "FAILED" || run.state === "ERROR";
  const lines = [
    trackingMarker(run.run_id),
    `${stateEmoji(run.state)} **${inertText(stateWords(run), true)}** · ${title}`,
    "",
  ];
  const facts = [
    agentFact(run),
    resolvedOptions(run),
    elapsed === null ? "" : `elapsed ${elapsed}`,
    costText(run),
  ].filter(Boolean);
  if (facts.length > 0) lines.push(inertText(facts.join(" · "), true), "");
  lines.push(...waitingLines(run, inertText, handle));
  // A stalled run (model/stall.ts) says so, and how to start over: GitHub has no buttons.
  if (stall && !isTerminal(run.state)) {
    lines.push(
      `⚠️ **${capitalized(stall)}**: the agent may be stuck. Mention me with \`cancel\` to stop it, then ask again to retry.`,
      "",
    );
  }
  const delivery = deliveryText(run);
  if (delivery) lines.push(delivery.text, "");
  if (failed && run.status_message?.message) {
    lines.push(blockQuote(truncate(inertText(run.status_message.message), 50_000)), "");
  }
  const prs = pullRequestLinks(run, delivery?.shownUrl);
  lines.push([`[Session](${run.session_link})`, ...prs.slice(0, 20)].join(" · "));
  if (prs.length > 20) lines.push(`and ${prs.length - 20} more pull requests`);
  if (!isTerminal(run.state)) {
    lines.push(
      "",
      "<sub>Reply with a mention to steer this run, or mention me with `cancel` to stop it.</sub>",
    );
  }
  return truncate(lines.join("\n"), GITHUB_COMMENT_LIMIT);
}

/**
 * The tracking comment: state, title, resolved options, elapsed time, what a waiting run waits for (its
 * plan and how to answer, naming the bot's `handle`), where the work goes (repository, base, pull request,
 * diff stat), session and PR links, failure message.
 */
export function renderTrackingComment(
  run: RunView,
  now: number | Date = Date.now(),
  stalledMs?: number,
  handle?: string,
): string {
  return buildTrackingComment(
    run,
    elapsedText(run, now),
    stalledMs === undefined ? undefined : stallWords(stalledMs),
    handle,
  );
}

/**
 * What the tracking comment shows minus a running run's elapsed time (and how long a stalled run has been
 * quiet): equal means no edit is needed.
 */
export function trackingFingerprint(run: RunView, stalled = false, handle?: string): string {
  const body = buildTrackingComment(
    run,
    isTerminal(run.state) ? elapsedText(run, 0) : null,
    stalled ? stallWords(0) : undefined,
    handle,
  );
  return createHash("sha256").update(body).digest("base64url").slice(0, 22);
}

/** A GitHub login that can be @-mentioned (letters, digits, single hyphens). */
function isMentionableLogin(login: string): boolean {
  return /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/.test(login);
}

/** The short comment at a terminal state: mentions the requester (they get a notification). */
export function renderFinalComment(run: RunItem, binding: Pick<ThreadBinding, "requester">): string {
  const mention = isMentionableLogin(binding.requester) ? `@${binding.requester} ` : "";
  const failed = run.state === "FAILED" || run.state === "ERROR";
  const lines = [
    `<!-- dispatch:final run=${run.run_id} -->`,
    `${mention}${stateEmoji(run.state)} **${inertText(stateWords(run), true)}** · ${truncate(inertText(run.title || "Untitled run", true), 300)}`,
  ];
  const delivery = deliveryText(run);
  if (delivery) lines.push("", delivery.text);
  if (failed && run.status_message?.message) {
    lines.push("", blockQuote(truncate(inertText(run.status_message.message), 2_000)));
  }
  const prs = pullRequestLinks(run, delivery?.shownUrl);
  lines.push("", [`[Open session](${run.session_link})`, ...prs.slice(0, 20)].join(" · "));
  return truncate(lines.join("\n"), GITHUB_COMMENT_LIMIT);
}

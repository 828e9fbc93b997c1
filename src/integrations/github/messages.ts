import { truncate } from "../../model/run-wording.ts";
import type { RunItem } from "../../runs/run-item.ts";
import { inertText, renderTrackingComment } from "./tracking-comment.ts";

/** Words for people on GitHub. Every comment carries a `<!-- dispatch:… -->` marker (never acted upon). */

/** How much of an issue body goes into a run's prompt. */
const MAX_CONTEXT_BODY = 20_000;

export interface IssueContext {
  repo: string;
  number: number;
  title: string;
  body: string | null | undefined;
  url: string;
  isPullRequest: boolean;
  requester: string;
  commentUrl: string;
}

/**
 * The prompt of a run started from an issue or pull request: where it comes from (repository, number,
 * title, URL), the issue body as a quote (context written by anyone, not instructions from the
 * requester), then the request itself.
 */
export function promptWithContext(request: string, c: IssueContext): string {
  const kind = c.isPullRequest ? "pull request" : "issue";
  const lines = [
    `GitHub ${kind} ${c.repo}#${c.number}: ${c.title}`,
    `URL: ${c.url}`,
    `Requested by @${c.requester}: ${c.commentUrl}`,
  ];
  const body = (c.body ?? "").trim();
  if (body) {
    lines.push(
      "",
      `The ${kind} says:`,
      ...truncate(body, MAX_CONTEXT_BODY)
        .split(/\r?\n/)
        .map((line) => `> ${line}`),
    );
  }
  lines.push("", "Request:", request);
  return lines.join("\n");
}

/** A run title from the issue when the request names none. */
export function titleFor(c: Pick<IssueContext, "number" | "title">): string {
  return truncate(`#${c.number} ${c.title}`.replace(/\s+/g, " "), 200);
}

export function refusalText(login: string, repo: string, minimum: string): string {
  return `<!-- dispatch:refusal -->\n@${login} only people with **${minimum}** access to ${repo} can start or steer Dispatch runs here.`;
}

export function helpText(handle: string): string {
  return [
    "<!-- dispatch:help -->",
    `Mention @${handle} in an issue or pull request comment:`,
    "",
    `- \`@${handle} <what to do> [model=… env=… name=… skill=… title=… harness=…]\` starts a run (a follow-up when this issue already has one)`,
    `- \`@${handle} new <what to do>\` starts another run here`,
    `- \`@${handle} status\` · \`@${handle} cancel\` act on the latest run of this issue`,
  ].join("\n");
}

export function noticeText(login: string, text: string): string {
  return `<!-- dispatch:notice -->\n@${login} ${inertText(text)}`;
}

/** `status`: what the tracking comment shows, as a new comment (without the tracking marker). */
export function statusComment(run: RunItem): string {
  return renderTrackingComment(run).replace(/^<!-- dispatch:run=[^>]*-->/, "<!-- dispatch:status -->");
}

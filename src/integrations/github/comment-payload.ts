import type { GitHubConfig } from "../../config.ts";
import { mentionsHandle } from "./mention.ts";
import { DISPATCH_MARKER_PREFIX } from "./tracking-comment.ts";

/** The fields of an `issue_comment` payload Dispatch reads (@octokit/webhooks-types has them all). */
export interface CommentPayload {
  action: string;
  issue: { number: number; title: string; body?: string | null; html_url: string; pull_request?: unknown };
  comment: {
    id: number;
    body: string;
    html_url: string;
    user: { login: string; type?: string } | null;
    performed_via_github_app?: { id?: number; slug?: string } | null;
  };
  repository: { full_name: string };
  sender: { login: string; type?: string };
  installation?: { id: number };
}

/** Why a comment is not a trigger (undefined: it is one). Pure and cheap: runs before any write. */
export function whyIgnored(
  p: CommentPayload,
  bot: Pick<GitHubConfig, "botHandle" | "appId">,
): string | undefined {
  if (p.action !== "created") return `action ${p.action}`;
  if (!p.comment?.user || !p.repository?.full_name || !p.issue) return "incomplete payload";
  const why = whyNotAPerson(p, p.comment, bot);
  if (why) return why;
  if (!mentionsHandle(p.comment.body ?? "", bot.botHandle)) return "no mention";
  return undefined;
}

/**
 * Why a comment or review is not a person's asking: the bot must never trigger itself (bots, our own
 * account — App "<slug>[bot]" or a token's user —, anything posted through this App, anything carrying
 * our marker).
 */
export function whyNotAPerson(
  p: { sender?: { type?: string } | null },
  item: {
    user?: { login?: string; type?: string } | null;
    body?: string | null;
    performed_via_github_app?: { id?: number } | null;
  },
  bot: Pick<GitHubConfig, "botHandle" | "appId">,
): string | undefined {
  const author = item?.user;
  if (!author?.login) return "incomplete payload";
  if (p.sender?.type === "Bot" || author.type === "Bot") return "bot";
  const login = author.login.toLowerCase();
  const handle = bot.botHandle.toLowerCase();
  if (login === handle || login === `${handle}[bot]`) return "self";
  if (bot.appId && String(item.performed_via_github_app?.id ?? "") === bot.appId) return "self";
  if (String(item.body ?? "").includes(DISPATCH_MARKER_PREFIX)) return "self";
  return undefined;
}

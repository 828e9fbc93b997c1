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
  const author = p.comment?.user;
  if (!author || !p.repository?.full_name || !p.issue) return "incomplete payload";
  // The bot must never trigger itself: bots, our own account (App "<slug>[bot]" or a token's user),
  // anything posted through this App, and anything carrying our marker.
  if (p.sender?.type === "Bot" || author.type === "Bot") return "bot";
  const login = author.login.toLowerCase();
  const handle = bot.botHandle.toLowerCase();
  if (login === handle || login === `${handle}[bot]`) return "self";
  if (bot.appId && String(p.comment.performed_via_github_app?.id ?? "") === bot.appId) return "self";
  const body = p.comment.body ?? "";
  if (body.includes(DISPATCH_MARKER_PREFIX)) return "self";
  if (!mentionsHandle(body, bot.botHandle)) return "no mention";
  return undefined;
}

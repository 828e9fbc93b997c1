import type { NotifierPlatform } from "../../notifier/platform.ts";
import type { Store } from "../../store/store.ts";
import type { GitHubClients } from "./github-clients.ts";
import { GitHubCommentSender, githubTarget } from "./github-comment-sender.ts";
import {
  githubOutcomeReaction,
  renderFinalComment,
  renderTrackingComment,
  trackingFingerprint,
} from "./tracking-comment.ts";

/**
 * GitHub issues and pull requests as the notifier sees them: the tracking comment, the final comment and
 * the outcome reaction, rendered by tracking-comment.ts and sent by GitHubCommentSender.
 */
export function githubNotifierPlatform(deps: {
  clients: GitHubClients;
  store: Pick<Store, "getCardState">;
  editIntervalMs: number;
  /** The bot's @handle, as a waiting run's comment tells people to write it. */
  handle: string;
}): NotifierPlatform {
  const sender = new GitHubCommentSender(deps.clients, deps.store);
  const where = (b: { workspace: string; channel: string }) => ({
    repo: b.workspace,
    issue_number: Number(b.channel),
  });
  return {
    platform: "github",
    source: "GITHUB_WEBHOOK",
    editIntervalMs: deps.editIntervalMs,
    target: githubTarget,
    fingerprint: (run, stalled) => trackingFingerprint(run, stalled, deps.handle),
    card: (run, b, now, stalledMs) => ({
      ...where(b),
      body: renderTrackingComment(run, now, stalledMs, deps.handle),
    }),
    finalReply: (run, b) => ({ ...where(b), body: renderFinalComment(run, b) }),
    outcomeReaction: (run, b) => {
      const content = githubOutcomeReaction(run.state);
      return b.triggerRef && content ? { ...where(b), comment_id: Number(b.triggerRef), content } : undefined;
    },
    send: (row) => sender.send(row),
  };
}

import type { ThreadBinding } from "../../model/thread-binding.ts";
import { SendError } from "../../notifier/platform.ts";
import type { OutboxRow, Store } from "../../store/store.ts";
import { type GitHubClients, splitRepo } from "./github-clients.ts";
import { trackingMarker } from "./tracking-comment.ts";

/** What GitHub outbox rows carry (the notifier platform and IssueThread enqueue them). */
export interface GitHubOutboxPayload {
  repo: string;
  issue_number: number;
  /** Comment body (card, reply). */
  body?: string;
  /** Reaction target and content. */
  comment_id?: number;
  content?: string;
  /** The reaction's comment is an inline review comment of the pull request (not an issue comment). */
  review_comment?: boolean;
  /** A reply in the review thread of this inline comment, instead of a comment on the conversation. */
  in_reply_to?: number;
}

/** Where a GitHub binding's messages go: one target per repository owner (an App installation's scope). */
export function githubTarget(binding: Pick<ThreadBinding, "workspace">): string {
  return `github:${binding.workspace.split("/")[0]}`;
}

/**
 * A failed GitHub call, classified for the outbox. 403/429 with `retry-after`, or with
 * `x-ratelimit-remaining: 0` and `x-ratelimit-reset`, is a rate limit: the outbox pauses the target until
 * then and sends the row once more. Other client errors are permanent; 5xx, timeouts and network errors
 * (Octokit reports them as status 500) are retried with backoff; 401 too (a token renewed meanwhile).
 */
export function classifyGitHubError(err: unknown, now = Date.now()): SendError {
  if (err instanceof SendError) return err;
  const e = err as { status?: number; message?: string; response?: { headers?: Record<string, unknown> } };
  const status = typeof e?.status === "number" ? e.status : undefined;
  const headers = e?.response?.headers ?? {};
  const message = `${status ? `HTTP ${status}: ` : ""}${e?.message ?? String(err)}`.slice(0, 500);
  if (status === 403 || status === 429) {
    const retryAfter = headers["retry-after"];
    if (retryAfter !== undefined && /^\d+$/.test(String(retryAfter))) {
      return new SendError("rate_limited", message, Number(retryAfter) * 1000);
    }
    if (String(headers["x-ratelimit-remaining"]) === "0" && headers["x-ratelimit-reset"] !== undefined) {
      const resetMs = Number(headers["x-ratelimit-reset"]) * 1000;
      return new SendError("rate_limited", message, Math.max(1000, resetMs - now + 1000));
    }
    // GitHub's advice for a secondary limit without retry-after: wait at least a minute.
    if (status === 429 || /secondary rate limit/i.test(message)) {
      return new SendError("rate_limited", message, 60_000);
    }
    return new SendError("permanent", message);
  }
  if (status === undefined || status >= 500 || status === 408 || status === 401) {
    return new SendError("retryable", message);
  }
  return new SendError("permanent", message);
}

/** One attempt per call: the outbox owns retries (plugin-retry would retry again, blocking a slot). */
const ONE_ATTEMPT = { request: { retries: 0 } } as const;

/**
 * Sends the outbox rows of GitHub issues and pull requests (target "github:<owner>"): the tracking comment
 * is posted once and then edited, a reply is a new comment, a reaction goes on the triggering comment.
 */
export class GitHubCommentSender {
  private readonly clients: GitHubClients;
  private readonly store: Pick<Store, "getCardState">;
  /** Rows that had an attempt in this process: a retried post first looks for its own comment. */
  private readonly attempted = new Set<number>();

  constructor(clients: GitHubClients, store: Pick<Store, "getCardState">) {
    this.clients = clients;
    this.store = store;
  }

  async send(row: OutboxRow): Promise<{ cardRef?: string }> {
    try {
      return await this.sendOnce(row);
    } catch (err) {
      throw classifyGitHubError(err);
    }
  }

  private async sendOnce(row: OutboxRow): Promise<{ cardRef?: string }> {
    const p = row.payload as unknown as GitHubOutboxPayload;
    const [owner, repo] = splitRepo(p.repo);
    const octokit = await this.clients.forRepo(p.repo);
    const issue = { owner, repo, issue_number: p.issue_number };
    switch (row.kind) {
      case "card": {
        const card = await this.store.getCardState(row.runId, row.threadKey);
        let commentId = card?.cardRef ? Number(card.cardRef) : undefined;
        // An earlier attempt may have created the comment and failed before recording it (a timeout, a
        // crash): the hidden marker finds it, so the run never gets two tracking comments.
        const retried = row.attempts > 0 || this.attempted.has(row.id);
        this.attempted.add(row.id);
        if (commentId === undefined && retried) commentId = await this.findTrackingComment(row, issue);
        if (commentId !== undefined) {
          await octokit.rest.issues.updateComment({
            owner,
            repo,
            comment_id: commentId,
            body: p.body ?? "",
            ...ONE_ATTEMPT,
          });
          this.attempted.delete(row.id);
          return { cardRef: String(commentId) };
        }
        const { data } = await octokit.rest.issues.createComment({
          ...issue,
          body: p.body ?? "",
          ...ONE_ATTEMPT,
        });
        this.attempted.delete(row.id);
        return { cardRef: String(data.id) };
      }
      case "reply":
        if (p.in_reply_to !== undefined) {
          await octokit.rest.pulls.createReplyForReviewComment({
            owner,
            repo,
            pull_number: p.issue_number,
            comment_id: p.in_reply_to,
            body: p.body ?? "",
            ...ONE_ATTEMPT,
          });
          return {};
        }
        await octokit.rest.issues.createComment({ ...issue, body: p.body ?? "", ...ONE_ATTEMPT });
        return {};
      case "reaction": {
        // 200 when the reaction exists already (a redelivered row): fine either way.
        const reaction = {
          owner,
          repo,
          comment_id: p.comment_id!,
          content: p.content as "eyes",
          ...ONE_ATTEMPT,
        };
        if (p.review_comment) await octokit.rest.reactions.createForPullRequestReviewComment(reaction);
        else await octokit.rest.reactions.createForIssueComment(reaction);
        return {};
      }
    }
  }

  private async findTrackingComment(
    row: OutboxRow,
    issue: { owner: string; repo: string; issue_number: number },
  ): Promise<number | undefined> {
    const octokit = await this.clients.forRepo(`${issue.owner}/${issue.repo}`);
    const marker = trackingMarker(row.runId);
    // Comments updated since shortly before the row was written (clock skew allowance).
    const since = new Date(Date.parse(row.createdAt) - 5 * 60_000).toISOString();
    for await (const page of octokit.paginate.iterator(octokit.rest.issues.listComments, {
      ...issue,
      since,
      per_page: 100,
      ...ONE_ATTEMPT,
    })) {
      const found = page.data.find((c) => c.body?.includes(marker));
      if (found) return found.id;
    }
    return undefined;
  }
}

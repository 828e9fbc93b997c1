import { threadKey } from "../../model/thread-binding.ts";
import type { OutboxMessage, Store } from "../../store/store.ts";
import { githubTarget } from "./github-comment-sender.ts";

/** Messages to one issue or pull request, through the outbox (retried, rate-limit aware, once each). */
export class IssueThread {
  readonly repo: string;
  readonly number: number;
  private readonly store: Pick<Store, "enqueueOutbox">;
  /** The delivery being answered: a redelivered webhook enqueues the same replies, which the outbox drops. */
  private readonly delivery: string;

  constructor(store: Pick<Store, "enqueueOutbox">, repo: string, number: number, delivery: string) {
    this.store = store;
    this.repo = repo;
    this.number = number;
    this.delivery = delivery;
  }

  /** The key of a run's binding to this issue (model/thread-binding.ts). */
  get threadKey(): string {
    return threadKey({ platform: "github", workspace: this.repo, channel: String(this.number) });
  }

  private get group(): string {
    return `github:${this.repo}#${this.number}`;
  }

  react(commentId: number, content: string): Promise<void> {
    return this.enqueue({
      dedupeKey: `gh-react:${this.repo}:${commentId}:${content}`,
      kind: "reaction",
      stream: `gh-react:${this.repo}:${commentId}`,
      target: githubTarget({ workspace: this.repo }),
      payload: { repo: this.repo, issue_number: this.number, comment_id: commentId, content },
    });
  }

  /** 👀 and friends on an inline review comment of the pull request. */
  reactToReviewComment(commentId: number, content: string): Promise<void> {
    return this.enqueue({
      dedupeKey: `gh-react:${this.repo}:review:${commentId}:${content}`,
      kind: "reaction",
      stream: `gh-react:${this.repo}:review:${commentId}`,
      target: githubTarget({ workspace: this.repo }),
      payload: {
        repo: this.repo,
        issue_number: this.number,
        comment_id: commentId,
        content,
        review_comment: true,
      },
    });
  }

  /** A reply in the review thread of an inline comment (the conversation tab stays quiet). */
  replyInReview(commentId: number, purpose: string, body: string): Promise<void> {
    return this.enqueue({
      dedupeKey: `gh-reply:${this.delivery}:${purpose}`,
      kind: "reply",
      stream: `gh-issue:${this.group}`,
      target: githubTarget({ workspace: this.repo }),
      payload: { repo: this.repo, issue_number: this.number, body, in_reply_to: commentId },
    });
  }

  reply(purpose: string, body: string): Promise<void> {
    return this.enqueue({
      dedupeKey: `gh-reply:${this.delivery}:${purpose}`,
      kind: "reply",
      stream: `gh-issue:${this.group}`,
      target: githubTarget({ workspace: this.repo }),
      payload: { repo: this.repo, issue_number: this.number, body },
    });
  }

  private enqueue(message: OutboxMessage): Promise<void> {
    return this.store.enqueueOutbox(this.group, [message]);
  }
}

import type { OutboxMessage, Store } from "../../store/store.ts";
import type { CommentDoc } from "./comment-doc.ts";

/** The issue a message goes to: its id (stable when the issue moves) and its key (for people). */
export interface IssueRef {
  id: string;
  key: string;
}

/**
 * What goes to Jira goes through the outbox (retried with backoff, Jira's 429 honoured per site, never
 * sent twice): these are the rows' payloads, one operation each, sent by JiraSender.
 */
export type JiraOperation =
  | {
      op: "comment";
      issue: IssueRef;
      doc: CommentDoc;
      /** Names the comment (a property on it), so a comment whose answer was lost is found, not posted again. */
      marker: string;
      /** Before the comment: link the run's pull request on the issue, and move the issue. */
      link?: { url: string; title: string };
      transition?: string;
    }
  | { op: "transition"; issue: IssueRef; to: string };

/** Rows to one site share a target: a 429 pauses only its rows. */
export function jiraTarget(baseUrl: string): string {
  return `jira:${new URL(baseUrl).host}`;
}

/**
 * The messages about one issue that belong to no run's card: answers to what was written there (a
 * refusal, `status`, a notice) and the transition when a run starts. In one stream, so they go out in order.
 */
export class IssueMessages {
  private readonly store: Pick<Store, "enqueueOutbox">;
  private readonly issue: IssueRef;
  private readonly target: string;
  /** What is being answered (a comment, a changelog entry): a redelivery enqueues the same rows, which the outbox drops. */
  private readonly about: string;

  constructor(store: Pick<Store, "enqueueOutbox">, issue: IssueRef, target: string, about: string) {
    this.store = store;
    this.issue = issue;
    this.target = target;
    this.about = about;
  }

  reply(purpose: string, doc: CommentDoc): Promise<void> {
    const key = `jira-reply:${this.about}:${purpose}`;
    const payload: JiraOperation = { op: "comment", issue: this.issue, doc, marker: key };
    return this.enqueue({ dedupeKey: key, kind: "reply", stream: this.stream, target: this.target, payload });
  }

  /** Moves the issue once per run (`why` names the moment: started). */
  transition(runId: string, why: string, to: string): Promise<void> {
    const payload: JiraOperation = { op: "transition", issue: this.issue, to };
    return this.enqueue({
      dedupeKey: `jira-transition:${runId}:${why}`,
      kind: "reply",
      stream: this.stream,
      target: this.target,
      payload,
    });
  }

  private get stream(): string {
    return `jira-issue:${this.issue.id}`;
  }

  private enqueue(message: OutboxMessage): Promise<void> {
    return this.store.enqueueOutbox(`jira:${this.issue.key}`, [message]);
  }
}

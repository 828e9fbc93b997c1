import type { Logger } from "pino";
import type { OutboxRow, Store } from "../../store/store.ts";
import type { JiraOperation } from "./issue-messages.ts";
import type { JiraApi } from "./jira-api.ts";
import { sendErrorOf } from "./jira-errors.ts";

/**
 * Sends one outbox row to Jira (one JiraOperation) in one attempt, every failure thrown as the outbox's
 * SendError. A run's card comment is posted once and then edited; every comment carries a property naming
 * it, so a row tried before (its answer lost in a crash or a timeout) first looks for its comment: none is
 * posted twice. Linking a pull request and moving the issue before a final are safe to repeat.
 */
export class JiraSender {
  private readonly api: JiraApi;
  private readonly store: Pick<Store, "getCardState">;
  private readonly log: Logger;
  /** Rows this process tried to send: trying again must look first. */
  private readonly tried = new Set<number>();

  constructor(deps: { api: JiraApi; store: Pick<Store, "getCardState">; log: Logger }) {
    this.api = deps.api;
    this.store = deps.store;
    this.log = deps.log;
  }

  async send(row: OutboxRow): Promise<{ cardRef?: string }> {
    const op = row.payload as JiraOperation;
    const retried = row.attempts > 0 || this.tried.has(row.id);
    this.tried.add(row.id);
    try {
      const result =
        op.op === "transition"
          ? await this.transition(op.issue.id, op.to)
          : await this.comment(row, op, retried);
      this.tried.delete(row.id);
      return result;
    } catch (err) {
      throw sendErrorOf(err);
    }
  }

  private async transition(issueId: string, to: string): Promise<{ cardRef?: string }> {
    const outcome = await this.api.moveTo(issueId, to);
    // A workflow without that transition from where the issue is: nothing to do, and nothing to retry.
    if (outcome === "unavailable")
      this.log.info({ issue: issueId, to }, "no such Jira transition from the issue's status");
    return {};
  }

  private async comment(
    row: OutboxRow,
    op: Extract<JiraOperation, { op: "comment" }>,
    retried: boolean,
  ): Promise<{ cardRef?: string }> {
    if (op.link) await this.api.linkPullRequest(op.issue.id, op.link);
    if (op.transition) await this.transition(op.issue.id, op.transition);
    if (row.kind === "card") {
      const card = await this.store.getCardState(row.runId, row.threadKey);
      let commentId = card?.cardRef ?? undefined;
      if (commentId === undefined && retried) commentId = await this.api.findComment(op.issue.id, op.marker);
      if (commentId !== undefined) {
        await this.api.updateComment(op.issue.id, commentId, op.doc);
        return { cardRef: commentId };
      }
      return { cardRef: await this.api.addComment(op.issue.id, op.doc, op.marker) };
    }
    if (retried && (await this.api.findComment(op.issue.id, op.marker))) return {};
    await this.api.addComment(op.issue.id, op.doc, op.marker);
    return {};
  }
}

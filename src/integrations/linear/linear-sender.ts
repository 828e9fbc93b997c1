import type { Logger } from "pino";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { OutboxRow } from "../../store/store.ts";
import type { LinearApi } from "./linear-api.ts";
import { sendErrorOf } from "./linear-api.ts";
import type { LinearOperation } from "./session-messages.ts";

/** Transcript events read per request when looking for the agent's last message. */
const EVENTS_PAGE = 500;
/** A transcript longer than this many pages gives no summary rather than a slow final. */
const MAX_SUMMARY_PAGES = 40;

/**
 * Sends one outbox row to Linear (one operation, LinearOperation) in one attempt, every failure thrown as
 * the outbox's SendError. An activity is created under an id derived from its row, and a row sent before
 * (its answer lost in a crash or a timeout) first looks for it: none is posted twice.
 */
export class LinearSender {
  private readonly api: LinearApi;
  private readonly runs: Pick<RunsApi, "events">;
  private readonly log: Logger;
  /** Activities this process tried to create: trying again must look first. */
  private readonly tried = new Set<string>();

  constructor(deps: { api: LinearApi; runs: Pick<RunsApi, "events">; log: Logger }) {
    this.api = deps.api;
    this.runs = deps.runs;
    this.log = deps.log;
  }

  async send(row: OutboxRow): Promise<{ cardRef?: string }> {
    const op = row.payload as LinearOperation;
    try {
      switch (op.op) {
        case "activity":
          await this.activity(op, row.attempts > 0);
          return {};
        case "session":
          await this.api.updateSession(op.sessionId, {
            ...(op.externalUrls ? { externalUrls: op.externalUrls } : {}),
            ...(op.plan ? { plan: op.plan } : {}),
          });
          // The session is the "card" the notifier updates (its plan).
          return { cardRef: op.sessionId };
        case "start_issue":
          await this.api.startIssue(op.issueId, op.appUserId);
          return {};
      }
    } catch (err) {
      throw sendErrorOf(err);
    }
  }

  private async activity(
    op: Extract<LinearOperation, { op: "activity" }>,
    triedBefore: boolean,
  ): Promise<void> {
    if (op.link) await this.api.linkUrl(op.link.issueId, op.link.url, op.link.title);
    if ((triedBefore || this.tried.has(op.activityId)) && (await this.api.activityExists(op.activityId)))
      return;
    let content = op.content;
    if (op.summaryOf && "body" in content) {
      const summary = await this.lastAgentMessage(op.summaryOf);
      if (summary) content = { ...content, body: `${summary}\n\n${content.body}` };
    }
    this.tried.add(op.activityId);
    await this.api.createActivity({
      id: op.activityId,
      agentSessionId: op.sessionId,
      content,
      ...(op.ephemeral ? { ephemeral: true } : {}),
    });
    this.tried.delete(op.activityId);
  }

  /** The agent's last message in the run's transcript (its summary of the work), cut to a few lines' worth. */
  private async lastAgentMessage(runId: string): Promise<string | undefined> {
    let last: string | undefined;
    let after = 0;
    try {
      for (let page = 0; page < MAX_SUMMARY_PAGES; page++) {
        const { events, next_after } = await this.runs.events(runId, after, EVENTS_PAGE);
        for (const e of events) {
          if (e.type === "message" && e.data.role === "assistant" && typeof e.data.text === "string") {
            last = e.data.text;
          }
        }
        if (events.length < EVENTS_PAGE) break;
        after = next_after;
      }
    } catch (err) {
      // The final goes out without the summary rather than not at all.
      this.log.warn({ err, runId }, "could not read the agent's summary for Linear");
    }
    const text = last?.trim();
    return text ? (text.length > 2_000 ? `${text.slice(0, 1_999)}…` : text) : undefined;
  }
}

import type { Logger } from "pino";
import type { RunEvent } from "../../model/run.ts";
import { isTerminal } from "../../model/run-state.ts";
import { type ThreadBinding, threadKey } from "../../model/thread-binding.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { OutboxMessage, Store } from "../../store/store.ts";
import { elicitationActivity, stepActivity } from "./activity-words.ts";
import { LINEAR_SOURCE } from "./notifier-platform.ts";
import { activityMessage } from "./session-messages.ts";

const PAGE = 200;

interface Followed {
  binding: ThreadBinding;
  /** The last transcript event looked at. */
  after: number;
  /** Each tool call's parameter by call id, for its result. */
  calls: Map<string, string>;
  /** The agent's latest message: a plan when the run then waits for its approval. */
  lastMessage?: string;
}

/**
 * Reports a Linear-bound run's steps to its agent session as they happen (docs/surfaces.md): tool calls
 * as `action` activities (ephemeral while running, then with a short result) and the agent's messages as
 * thoughts, read from the transcript through RunsApi and sent through the outbox in the run's thread
 * stream, so they go out before its final activity. A transcript append wakes it (in process); a poll of
 * the runs in progress is the backstop (and the only clock in remote mode).
 *
 * Steps are progress, not the record: once a run has ended nothing more is posted for that execution
 * (an activity after the final one would show the session as working again); the final is the notifier's.
 * A run that waits for a person (BLOCKED) asks with an `elicitation`: the plan to approve, or the question.
 */
export class StepReporter {
  private readonly runs: Pick<RunsApi, "events" | "get" | "list">;
  private readonly store: Pick<Store, "signals" | "listThreadBindings" | "enqueueOutbox">;
  private readonly log: Logger;
  private readonly pollMs: number;
  private readonly followed = new Map<string, Followed>();
  private readonly pumping = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(deps: {
    runs: Pick<RunsApi, "events" | "get" | "list">;
    store: Pick<Store, "signals" | "listThreadBindings" | "enqueueOutbox">;
    log: Logger;
    pollMs: number;
  }) {
    this.runs = deps.runs;
    this.store = deps.store;
    this.log = deps.log;
    this.pollMs = deps.pollMs;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.store.signals.on("event_appended", this.onEvent);
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
    void this.poll();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.store.signals.off("event_appended", this.onEvent);
    clearInterval(this.timer);
    while (this.pumping.size > 0) await Promise.allSettled([...this.pumping.values()]);
  }

  private readonly onEvent = (runId: string) => this.wake(runId);

  /** Runs in progress that came from Linear: those a missed signal (another replica, remote mode) left behind. */
  private async poll(): Promise<void> {
    try {
      // Waiting runs too: the event that made one wait may not have been read yet.
      const { runs } = await this.runs.list({
        state: ["INPROGRESS", "BLOCKED"],
        source: LINEAR_SOURCE,
        limit: 200,
      });
      const live = new Set(runs.map((r) => r.run_id));
      for (const runId of this.followed.keys()) if (!live.has(runId)) this.followed.delete(runId);
      for (const runId of live) this.wake(runId);
    } catch (err) {
      if (this.running) this.log.warn({ err }, "could not list Linear runs in progress");
    }
  }

  private wake(runId: string): void {
    if (!this.running) return;
    if (this.pumping.has(runId)) {
      this.again.add(runId);
      return;
    }
    const work = this.pump(runId)
      .catch((err: unknown) => {
        if (this.running) this.log.warn({ err, runId }, "could not report a run's steps to Linear");
      })
      .finally(() => {
        this.pumping.delete(runId);
        if (this.again.delete(runId)) this.wake(runId);
      });
    this.pumping.set(runId, work);
  }

  private async pump(runId: string): Promise<void> {
    const followed = this.followed.get(runId) ?? (await this.begin(runId));
    if (!followed) return;
    for (;;) {
      const { events, next_after } = await this.runs.events(runId, followed.after, PAGE);
      if (events.length === 0) return;
      const run = await this.runs.get(runId);
      if (!isTerminal(run.state)) await this.report(runId, followed, events);
      followed.after = next_after;
      if (events.length < PAGE) return;
    }
  }

  /** A run seen for the first time here: a Linear one is followed from the start of its current execution. */
  private async begin(runId: string): Promise<Followed | undefined> {
    // The run's Linear session among its threads (a run asked for in Linear is its origin).
    const binding = (await this.store.listThreadBindings(runId)).find((b) => b.platform === "linear");
    if (!binding) return undefined;
    let after = 0;
    let executionStart = 0;
    for (;;) {
      const { events, next_after } = await this.runs.events(runId, after, PAGE);
      for (const e of events) if (e.type === "state" && e.data.state === "INPROGRESS") executionStart = e.seq;
      after = next_after;
      if (events.length < PAGE) break;
    }
    const followed: Followed = { binding, after: Math.max(0, executionStart), calls: new Map() };
    this.followed.set(runId, followed);
    return followed;
  }

  private async report(runId: string, followed: Followed, events: RunEvent[]): Promise<void> {
    const where = {
      organizationId: followed.binding.workspace,
      sessionId: followed.binding.channel,
      stream: `thread:${runId}:${threadKey(followed.binding)}`,
    };
    const messages: OutboxMessage[] = [];
    // The thought of the agent's last message, while unsent: a plan is shown once, in its elicitation (the
    // executor commits the plan with the wait, so both come in one read).
    let lastThought: OutboxMessage | undefined;
    for (const event of events) {
      if (
        event.type === "message" &&
        event.data.role === "assistant" &&
        typeof event.data.text === "string"
      ) {
        followed.lastMessage = event.data.text;
      }
      if (event.type === "state" && event.data.state === "BLOCKED") {
        const status = event.data.status_message as { reason?: string; message?: string } | undefined;
        if (status?.reason === "awaiting_approval" && lastThought)
          messages.splice(messages.indexOf(lastThought), 1);
        lastThought = undefined;
        messages.push({
          ...activityMessage(
            `linear-elicitation:${runId}:${event.seq}`,
            where,
            elicitationActivity(status, followed.lastMessage),
          ),
          threadKey: threadKey(followed.binding),
        });
        continue;
      }
      const step = stepActivity(event, followed.calls);
      if (!step) continue;
      const message = {
        ...activityMessage(`linear-step:${runId}:${event.seq}`, where, step.content, {
          ...(step.ephemeral ? { ephemeral: true } : {}),
        }),
        threadKey: threadKey(followed.binding),
      };
      messages.push(message);
      lastThought = event.type === "message" ? message : undefined;
    }
    if (messages.length > 0) await this.store.enqueueOutbox(runId, messages);
  }
}

import type { AnyChunk } from "@slack/types";
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import type { RunEvent } from "../../model/run.ts";
import { stateWord } from "../../model/run-wording.ts";
import type { ThreadBinding } from "../../model/thread-binding.ts";
import type { RunItem } from "../../runs/run-item.ts";
import type { RunsApi } from "../../runs/runs-api.ts";
import type { Store } from "../../store/store.ts";
import { activityStatus, chunksOf, type TaskIds } from "./progress-chunks.ts";

/** Events read at once while following a run. */
const READ_BATCH = 200;
/** Chunks sent in one call: a run seen first mid-way sends its tasks so far in a few calls. */
const CHUNKS_PER_CALL = 40;
/** Changes that come together (a burst of events) go out in one Slack call per run. */
const COALESCE_MS = 300;

export type ProgressStore = Pick<Store, "listEvents" | "getThreadBinding" | "signals">;

interface Followed {
  binding: ThreadBinding;
  /** `assistant`: a DM's assistant thread (status line); `stream`: a channel's thread; `card`: streaming failed. */
  mode: "assistant" | "stream" | "card";
  /** The last event read. */
  seq: number;
  tasks: TaskIds;
  /** Chunks of the current execution not sent yet. */
  pending: AnyChunk[];
  /** The latest event that says what the agent is doing. */
  latest?: RunEvent;
  /** The streamed message (chat.startStream's ts). */
  streamTs?: string;
  status?: string;
  titled: boolean;
}

/**
 * Slack's agent surface while a run works (docs/surfaces.md, "Slack's agent surface"): in an assistant
 * thread (a DM with the app) the thread's status line says what the agent is doing and is cleared at the
 * end, and the thread is named after the run; in a channel's thread the run's steps stream into one
 * message (chat.startStream / appendStream / stopStream: a task per tool call, the plan with a task per
 * step). It follows Slack's runs in progress through RunsApi and their transcripts in the store, woken by
 * the store's signals with a polling backstop.
 *
 * The status card and the final reply (the notifier's, through the outbox) are the durable record and are
 * sent as before: where streaming is not available or a stream call fails, the thread stops streaming and
 * the card carries the run, so nothing is lost. What this follows is kept in memory: after a restart a run
 * in progress starts a new stream message.
 */
export class SlackAgentProgress {
  private readonly deps: {
    client: WebClient;
    runs: Pick<RunsApi, "list" | "get">;
    store: ProgressStore;
    log: Logger;
    pollMs: number;
  };
  private readonly followed = new Map<string, Followed>();
  private timer: NodeJS.Timeout | undefined;
  private backstop: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private readonly wake = () => this.schedule();

  constructor(deps: SlackAgentProgress["deps"]) {
    this.deps = deps;
  }

  start(): void {
    this.stopped = false;
    this.deps.store.signals.on("event_appended", this.wake);
    this.deps.store.signals.on("run_changed", this.wake);
    this.backstop = setInterval(this.wake, Math.max(this.deps.pollMs, 1000));
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.deps.store.signals.off("event_appended", this.wake);
    this.deps.store.signals.off("run_changed", this.wake);
    clearInterval(this.backstop);
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.running) {
        this.again = true;
        return;
      }
      this.running = this.tick()
        .catch((err: unknown) => this.deps.log.warn({ err }, "following Slack's runs failed"))
        .finally(() => {
          this.running = undefined;
          if (this.again) {
            this.again = false;
            this.schedule();
          }
        });
    }, COALESCE_MS);
  }

  private async tick(): Promise<void> {
    const { runs } = await this.deps.runs.list({ state: ["INPROGRESS"], source: "SLACK", limit: 100 });
    const live = new Set<string>();
    for (const run of runs) {
      live.add(run.run_id);
      await this.guard(run.run_id, () => this.advance(run));
    }
    for (const runId of [...this.followed.keys()]) {
      if (live.has(runId)) continue;
      await this.guard(runId, async () => this.finish(await this.deps.runs.get(runId)));
      this.followed.delete(runId);
    }
  }

  /** One run's failure is logged and leaves the others alone. */
  private async guard(runId: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.deps.log.warn({ err, runId }, "showing a run's progress in Slack failed");
    }
  }

  private async advance(run: RunItem): Promise<void> {
    const f = this.followed.get(run.run_id) ?? (await this.follow(run));
    if (!f) return;
    await this.read(run.run_id, f);
    if (f.mode === "assistant") {
      if (!f.titled) {
        await this.deps.client.assistant.threads.setTitle({
          channel_id: f.binding.channel,
          thread_ts: f.binding.thread!,
          title: run.title,
        });
        f.titled = true;
      }
      const status = activityStatus(f.latest);
      if (status !== f.status) {
        await this.deps.client.assistant.threads.setStatus({
          channel_id: f.binding.channel,
          thread_ts: f.binding.thread!,
          status,
        });
        f.status = status;
      }
      return;
    }
    if (f.mode !== "stream") return;
    await this.streaming(f, async () => {
      if (!f.streamTs) {
        const started = await this.deps.client.chat.startStream({
          channel: f.binding.channel,
          thread_ts: f.binding.thread!,
          // Outside a DM Slack streams to a person: the one who asked for the run.
          recipient_user_id: f.binding.requester,
          recipient_team_id: f.binding.workspace,
          task_display_mode: "timeline",
          chunks: [{ type: "plan_update", title: run.title }, ...f.pending.splice(0, CHUNKS_PER_CALL)],
        });
        if (!started.ts) throw new Error("chat.startStream answered without a ts");
        f.streamTs = started.ts;
      }
      while (f.pending.length > 0) {
        await this.deps.client.chat.appendStream({
          channel: f.binding.channel,
          ts: f.streamTs,
          chunks: f.pending.splice(0, CHUNKS_PER_CALL),
        });
      }
    });
  }

  /** The run's Slack thread, once it has one; a slash command's run gets its thread with its card. */
  private async follow(run: RunItem): Promise<Followed | undefined> {
    const binding = await this.deps.store.getThreadBinding(run.run_id);
    if (binding?.platform !== "slack" || !binding.thread) return undefined;
    const f: Followed = {
      binding,
      // DM channel ids start with D: there the app's threads are assistant threads.
      mode: binding.channel.startsWith("D") ? "assistant" : "stream",
      seq: 0,
      tasks: { titles: new Map() },
      pending: [],
      titled: false,
    };
    this.followed.set(run.run_id, f);
    return f;
  }

  /** Reads the events after `f.seq`: the chunks of the current execution and the latest activity. */
  private async read(runId: string, f: Followed): Promise<void> {
    for (;;) {
      const events = await this.deps.store.listEvents(runId, f.seq, READ_BATCH);
      for (const event of events) {
        f.seq = event.seq;
        if (event.type === "state" && event.data.state === "INPROGRESS") {
          // A new execution (a follow-up): its steps start a new list.
          f.pending = [];
          f.tasks = { titles: new Map() };
          f.latest = undefined;
          continue;
        }
        if (["tool_call", "tool_result", "message"].includes(event.type)) f.latest = event;
        if (f.mode === "stream") f.pending.push(...chunksOf(event, f.tasks));
      }
      if (events.length < READ_BATCH) return;
    }
  }

  /** The end of the run in its thread: the status line cleared, or the stream stopped with the outcome. */
  private async finish(run: RunItem): Promise<void> {
    const f = this.followed.get(run.run_id);
    if (!f) return;
    await this.read(run.run_id, f);
    if (f.mode === "assistant") {
      // An empty status clears the thread's "is working…" line.
      await this.deps.client.assistant.threads.setStatus({
        channel_id: f.binding.channel,
        thread_ts: f.binding.thread!,
        status: "",
      });
      return;
    }
    if (f.mode !== "stream" || !f.streamTs) return;
    // The status message is the run's text: escaped as Slack asks, so it cannot mention or link.
    const said = (run.status_message?.message ?? "")
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;");
    const outcome = `*${stateWord(run.state)}*${said ? `: ${said}` : ""}`;
    await this.streaming(f, async () => {
      while (f.pending.length > CHUNKS_PER_CALL) {
        await this.deps.client.chat.appendStream({
          channel: f.binding.channel,
          ts: f.streamTs!,
          chunks: f.pending.splice(0, CHUNKS_PER_CALL),
        });
      }
      await this.deps.client.chat.stopStream({
        channel: f.binding.channel,
        ts: f.streamTs!,
        chunks: [...f.pending.splice(0), { type: "markdown_text", text: outcome }],
      });
    });
  }

  /** A stream call that fails ends streaming in that thread: the status card carries the run from then on. */
  private async streaming(f: Followed, calls: () => Promise<void>): Promise<void> {
    try {
      await calls();
    } catch (err) {
      f.mode = "card";
      f.pending = [];
      this.deps.log.warn(
        { err, channel: f.binding.channel, error: (err as { data?: { error?: string } }).data?.error },
        "streaming a run's progress to Slack failed; its status card carries it",
      );
    }
  }
}

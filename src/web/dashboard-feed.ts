import type { ServerResponse } from "node:http";
import type { RunRecord } from "../model/run.ts";
import type { Store } from "../store/store.ts";
import { bindingsOf, renderRow } from "./dashboard-rows.ts";

export type FeedStore = Pick<Store, "signals" | "listRuns" | "countRunsByState" | "loadNotifierState">;

/** A burst of changes within this window is read and sent once. */
const COALESCE_MS = 2;
/** Counts are a scan of the team's runs: at most one read per team this often, the latest state winning. */
const COUNTS_MS = 1_000;
/** A batch naming more of a team's runs than this is not sent row by row: pages re-read what they show. */
const MAX_ROWS_PER_BATCH = 100;
const KEEPALIVE_MS = 15_000;
/** How often the sessions behind open streams are looked up again (a sign-out ends its streams). */
const SESSION_CHECK_MS = 60_000;
/** A watcher that has not taken this much of what was sent is dropped; its page reconnects and re-reads. */
const MAX_BUFFERED_BYTES = 512 * 1024;

export interface DashboardFeedOptions {
  /** Whether the session a stream was opened with is still live (not signed out, not expired). */
  sessionLive: (sessionCookie: string) => Promise<boolean>;
  now?: () => number;
  /** DISPATCH_STALL_AFTER_S in ms, for the rows it renders. */
  stallAfterMs: number;
  log?: { warn(obj: object, msg: string): void };
  coalesceMs?: number;
  countsMs?: number;
  keepaliveMs?: number;
  sessionCheckMs?: number;
}

interface Watcher {
  teamId: string;
  res: ServerResponse;
  sessionCookie: string;
  expiresAt: number;
}

/**
 * The live side of the dashboard (issue 15): one listener on the store's `run_changed` signal for the
 * whole process, and the open dashboards (SSE streams) grouped by team. A burst of changes is coalesced;
 * each batch reads the changed runs once per team that has watchers (listRuns restricted to the team and
 * to the batch's ids, so another team's run ids never reach a stream), renders their rows once, and writes
 * the same frame to every watcher of the team: a change costs O(watchers) writes and O(teams) reads,
 * never a read per watcher. The team's counts follow, read at most once per COUNTS_MS.
 *
 * On PostgreSQL the signal comes from any replica (LISTEN/NOTIFY); after the listener reconnects it is
 * emitted with an empty run id, meaning "anything may have changed": every page is then told to re-read
 * the rows it shows (`resync`), as a page that reconnects its stream is.
 */
export class DashboardFeed {
  private readonly store: FeedStore;
  private readonly opts: DashboardFeedOptions;
  private readonly now: () => number;
  private readonly stallAfterMs: number;
  private readonly teams = new Map<string, Set<Watcher>>();
  private pending = new Set<string>();
  private everything = false;
  private flushTimer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private readonly countsDue = new Map<string, NodeJS.Timeout>();
  private readonly countsLast = new Map<string, number>();
  private keepalive: NodeJS.Timeout | undefined;
  private sessionCheck: NodeJS.Timeout | undefined;
  private eventId = 0;
  private stopped = false;
  private readonly onChanged = (runId: string) => this.changed(runId);

  constructor(store: FeedStore, opts: DashboardFeedOptions) {
    this.store = store;
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    this.stallAfterMs = opts.stallAfterMs;
    store.signals.on("run_changed", this.onChanged);
    this.keepalive = setInterval(() => this.broadcast(": keepalive\n\n"), opts.keepaliveMs ?? KEEPALIVE_MS);
    this.sessionCheck = setInterval(() => void this.checkSessions(), opts.sessionCheckMs ?? SESSION_CHECK_MS);
    this.keepalive.unref();
    this.sessionCheck.unref();
  }

  /**
   * Adds an open stream (headers already written) for the team; `resync` when the page reconnected after
   * missing frames (Last-Event-ID): it gets the counts and is told to re-read its rows. Returns the function
   * that removes it; the stream's close removes it too.
   */
  watch(watcher: Watcher, opts: { resync?: boolean } = {}): () => void {
    if (this.stopped) {
      watcher.res.end();
      return () => {};
    }
    let watchers = this.teams.get(watcher.teamId);
    if (!watchers) {
      watchers = new Set();
      this.teams.set(watcher.teamId, watchers);
    }
    watchers.add(watcher);
    const remove = () => {
      const set = this.teams.get(watcher.teamId);
      set?.delete(watcher);
      if (set?.size === 0) this.teams.delete(watcher.teamId);
    };
    watcher.res.on("close", remove);
    if (opts.resync) {
      this.send(watcher, this.frame("resync", {}));
      void this.counts(watcher.teamId, [watcher]);
    }
    return remove;
  }

  /** Ends every stream and stops listening (server shutdown): pages see the stream end and retry later. */
  stop(): void {
    this.stopped = true;
    this.store.signals.off("run_changed", this.onChanged);
    clearTimeout(this.flushTimer);
    clearInterval(this.keepalive);
    clearInterval(this.sessionCheck);
    for (const timer of this.countsDue.values()) clearTimeout(timer);
    this.countsDue.clear();
    for (const watchers of this.teams.values()) for (const w of watchers) w.res.end();
    this.teams.clear();
  }

  /** Resolves once every change signalled so far has been sent (tests and benchmarks wait on this). */
  async settled(): Promise<void> {
    while (this.flushTimer || this.flushing) {
      if (this.flushing) await this.flushing;
      else await new Promise((resolve) => setTimeout(resolve, this.opts.coalesceMs ?? COALESCE_MS));
    }
  }

  private changed(runId: string): void {
    if (this.stopped || this.teams.size === 0) return;
    if (runId === "") this.everything = true;
    else this.pending.add(runId);
    this.schedule();
  }

  private schedule(): void {
    // One batch at a time: what arrives while one is read waits for the next (natural back-pressure).
    if (this.flushTimer || this.flushing) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.flushing = this.flush().finally(() => {
        this.flushing = undefined;
        if (this.pending.size || this.everything) this.schedule();
      });
    }, this.opts.coalesceMs ?? COALESCE_MS);
  }

  private async flush(): Promise<void> {
    const ids = [...this.pending];
    const everything = this.everything;
    this.pending = new Set();
    this.everything = false;
    const teams = [...this.teams.keys()];
    await Promise.all(
      teams.map(async (teamId) => {
        try {
          if (everything || ids.length > MAX_ROWS_PER_BATCH) {
            this.broadcastTeam(teamId, this.frame("resync", {}));
            this.countsSoon(teamId);
            return;
          }
          const { runs } = await this.store.listRuns(teamId, {
            ids,
            limit: ids.length,
            sortBy: "updated_at",
            sortOrder: "desc",
          });
          if (runs.length === 0) return;
          this.broadcastTeam(teamId, this.frame("runs", { runs: await this.rowsOf(runs) }));
          this.countsSoon(teamId);
        } catch (err) {
          // The pages miss this change until the next one (or their next load): say so, do not crash.
          this.opts.log?.warn({ err, teamId }, "dashboard feed could not read changed runs");
        }
      }),
    );
  }

  private async rowsOf(runs: RunRecord[]) {
    const ctx = {
      now: this.now(),
      bindings: await bindingsOf(this.store, runs),
      stallAfterMs: this.stallAfterMs,
    };
    return runs.map((run) => ({
      id: run.id,
      state: run.state,
      created_at: run.createdAt,
      row: renderRow(run, ctx),
    }));
  }

  /** The team's counts now if none were sent for COUNTS_MS, else once that much time has passed. */
  private countsSoon(teamId: string): void {
    if (this.countsDue.has(teamId)) return;
    const wait = Math.max(
      0,
      (this.countsLast.get(teamId) ?? 0) + (this.opts.countsMs ?? COUNTS_MS) - this.now(),
    );
    const timer = setTimeout(() => {
      this.countsDue.delete(teamId);
      this.countsLast.set(teamId, this.now());
      void this.counts(teamId);
    }, wait);
    this.countsDue.set(teamId, timer);
  }

  private async counts(teamId: string, only?: Watcher[]): Promise<void> {
    if (!this.teams.has(teamId)) return;
    try {
      const counts = await this.store.countRunsByState(teamId);
      const frame = this.frame("counts", counts);
      if (only) for (const w of only) this.send(w, frame);
      else this.broadcastTeam(teamId, frame);
    } catch (err) {
      this.opts.log?.warn({ err, teamId }, "dashboard feed could not count runs");
    }
  }

  private frame(event: string, data: unknown): string {
    this.eventId += 1;
    return `id: ${this.eventId}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
  }

  private broadcastTeam(teamId: string, frame: string): void {
    for (const w of this.teams.get(teamId) ?? []) this.send(w, frame);
  }

  private broadcast(frame: string): void {
    for (const watchers of this.teams.values()) for (const w of watchers) this.send(w, frame);
  }

  private send(w: Watcher, frame: string): void {
    if (w.res.destroyed) return;
    if (w.res.writableLength > MAX_BUFFERED_BYTES) {
      // A page that stopped reading: it reconnects (EventSource retries) and re-reads its rows then.
      w.res.destroy();
      return;
    }
    w.res.write(frame);
  }

  /** Ends the streams of sessions that expired or were signed out, looking each session up once. */
  private async checkSessions(): Promise<void> {
    const now = this.now();
    const bySession = new Map<string, Watcher[]>();
    for (const watchers of this.teams.values()) {
      for (const w of watchers) {
        if (w.expiresAt <= now) w.res.end();
        else bySession.set(w.sessionCookie, [...(bySession.get(w.sessionCookie) ?? []), w]);
      }
    }
    for (const [cookie, watchers] of bySession) {
      try {
        if (!(await this.opts.sessionLive(cookie))) for (const w of watchers) w.res.end();
      } catch (err) {
        this.opts.log?.warn({ err }, "dashboard feed could not check a session; keeping its streams");
      }
    }
  }
}

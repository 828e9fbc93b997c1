import type { ServerResponse } from "node:http";
import type { AudienceFilter } from "../model/audience.ts";
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
/** A watcher that has not taken this much of what was sent is dropped; its page reconnects and re-reads. */
const MAX_BUFFERED_BYTES = 512 * 1024;

export interface DashboardFeedOptions {
  /**
   * The audience key (audienceKey) of the session a stream was opened with, as it is now; undefined when
   * the session is gone (signed out, expired). A stream whose viewer's audience changed is ended: its page
   * reconnects and reads what it may see now.
   */
  sessionScope: (sessionCookie: string) => Promise<string | undefined>;
  now?: () => number;
  /** DISPATCH_STALL_AFTER_S in ms, for the rows it renders. */
  stallAfterMs: number;
  log?: { warn(obj: object, msg: string): void };
  coalesceMs?: number;
  countsMs?: number;
  keepaliveMs?: number;
  /**
   * How often the sessions behind open streams are looked up again, and their viewers' audiences derived
   * again: a sign-out, or leaving a channel, ends their streams.
   */
  sessionCheckMs: number;
}

interface Watcher {
  teamId: string;
  /** Which of the team's runs this viewer sees (RunAccess); undefined: all of them (an admin). */
  audience: AudienceFilter | undefined;
  /** audienceKey(teamId, audience): watchers with the same key share every read. */
  scope: string;
  res: ServerResponse;
  sessionCookie: string;
  expiresAt: number;
}

/**
 * The live side of the dashboard (docs/surfaces.md): one listener on the store's `run_changed` signal for the
 * whole process, and the open dashboards (SSE streams) grouped by scope: a team and the audience of its
 * runs a viewer sees (RunAccess; an admin sees all). A burst of changes is coalesced; each batch reads the
 * changed runs once per scope that has watchers (listRuns restricted to the team, to the audience and to
 * the batch's ids, so a run the viewer may not see never reaches their stream), renders their rows once,
 * and writes the same frame to every watcher of the scope: a change costs O(watchers) writes and
 * O(scopes) reads, never a read per watcher. The scope's counts follow, read at most once per COUNTS_MS.
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
  private readonly scopes = new Map<string, Set<Watcher>>();
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
    this.sessionCheck = setInterval(() => void this.checkSessions(), opts.sessionCheckMs);
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
    let watchers = this.scopes.get(watcher.scope);
    if (!watchers) {
      watchers = new Set();
      this.scopes.set(watcher.scope, watchers);
    }
    watchers.add(watcher);
    const remove = () => {
      const set = this.scopes.get(watcher.scope);
      set?.delete(watcher);
      if (set?.size === 0) this.scopes.delete(watcher.scope);
    };
    watcher.res.on("close", remove);
    if (opts.resync) {
      this.send(watcher, this.frame("resync", {}));
      void this.counts(watcher.scope, [watcher]);
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
    for (const watchers of this.scopes.values()) for (const w of watchers) w.res.end();
    this.scopes.clear();
  }

  /** Resolves once every change signalled so far has been sent (tests and benchmarks wait on this). */
  async settled(): Promise<void> {
    while (this.flushTimer || this.flushing) {
      if (this.flushing) await this.flushing;
      else await new Promise((resolve) => setTimeout(resolve, this.opts.coalesceMs ?? COALESCE_MS));
    }
  }

  private changed(runId: string): void {
    if (this.stopped || this.scopes.size === 0) return;
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
    const scopes = [...this.scopes.keys()];
    await Promise.all(
      scopes.map(async (scope) => {
        const viewer = this.viewerOf(scope);
        if (!viewer) return;
        try {
          if (everything || ids.length > MAX_ROWS_PER_BATCH) {
            this.broadcastScope(scope, this.frame("resync", {}));
            this.countsSoon(scope);
            return;
          }
          const { runs } = await this.store.listRuns(viewer.teamId, {
            ids,
            limit: ids.length,
            sortBy: "updated_at",
            sortOrder: "desc",
            ...(viewer.audience ? { audience: viewer.audience } : {}),
          });
          if (runs.length === 0) return;
          this.broadcastScope(scope, this.frame("runs", { runs: await this.rowsOf(runs) }));
          this.countsSoon(scope);
        } catch (err) {
          // The pages miss this change until the next one (or their next load): say so, do not crash.
          this.opts.log?.warn({ err, teamId: viewer.teamId }, "dashboard feed could not read changed runs");
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

  /** The team and audience every watcher of a scope shares (from any one of them). */
  private viewerOf(scope: string): Pick<Watcher, "teamId" | "audience"> | undefined {
    for (const w of this.scopes.get(scope) ?? []) return w;
    return undefined;
  }

  /** The scope's counts now if none were sent for COUNTS_MS, else once that much time has passed. */
  private countsSoon(scope: string): void {
    if (this.countsDue.has(scope)) return;
    const wait = Math.max(
      0,
      (this.countsLast.get(scope) ?? 0) + (this.opts.countsMs ?? COUNTS_MS) - this.now(),
    );
    const timer = setTimeout(() => {
      this.countsDue.delete(scope);
      this.countsLast.set(scope, this.now());
      void this.counts(scope);
    }, wait);
    this.countsDue.set(scope, timer);
  }

  private async counts(scope: string, only?: Watcher[]): Promise<void> {
    const viewer = this.viewerOf(scope);
    if (!viewer) return;
    try {
      const counts = await this.store.countRunsByState(viewer.teamId, viewer.audience);
      const frame = this.frame("counts", counts);
      if (only) for (const w of only) this.send(w, frame);
      else this.broadcastScope(scope, frame);
    } catch (err) {
      this.opts.log?.warn({ err, teamId: viewer.teamId }, "dashboard feed could not count runs");
    }
  }

  private frame(event: string, data: unknown): string {
    this.eventId += 1;
    return `id: ${this.eventId}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
  }

  private broadcastScope(scope: string, frame: string): void {
    for (const w of this.scopes.get(scope) ?? []) this.send(w, frame);
  }

  private broadcast(frame: string): void {
    for (const watchers of this.scopes.values()) for (const w of watchers) this.send(w, frame);
  }

  private send(w: Watcher, frame: string): void {
    // Ended (signed out, audience changed) or gone: a write now would throw.
    if (w.res.destroyed || w.res.writableEnded) return;
    if (w.res.writableLength > MAX_BUFFERED_BYTES) {
      // A page that stopped reading: it reconnects (EventSource retries) and re-reads its rows then.
      w.res.destroy();
      return;
    }
    w.res.write(frame);
  }

  /**
   * Ends the streams of sessions that expired or were signed out, and of viewers whose audience changed
   * (they left a channel, lost a repository permission), looking each session up once.
   */
  private async checkSessions(): Promise<void> {
    const now = this.now();
    const bySession = new Map<string, Watcher[]>();
    for (const watchers of this.scopes.values()) {
      for (const w of watchers) {
        if (w.expiresAt <= now) w.res.end();
        else bySession.set(w.sessionCookie, [...(bySession.get(w.sessionCookie) ?? []), w]);
      }
    }
    for (const [cookie, watchers] of bySession) {
      try {
        const scope = await this.opts.sessionScope(cookie);
        for (const w of watchers) if (w.scope !== scope) w.res.end();
      } catch (err) {
        this.opts.log?.warn({ err }, "dashboard feed could not check a session; keeping its streams");
      }
    }
  }
}

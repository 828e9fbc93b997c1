import type { Logger } from "pino";
import type { RunRecord } from "../model/run.ts";
import { isTerminal } from "../model/run-state.ts";
import { DEFAULT_STALL_AFTER_MS, stalledFor } from "../model/stall.ts";
import { type ThreadBinding, threadKey } from "../model/thread-binding.ts";
import type { RunItem } from "../runs/run-item.ts";
import type { RunsApi } from "../runs/runs-api.ts";
import { type RunView, waitsForApproval, withPlan } from "../runs/waiting-run.ts";
import type {
  CardState,
  NotifierCursor,
  NotifierState,
  OutboxMessage,
  RunProgress,
  Store,
} from "../store/store.ts";
import { type DeliveryOutcome, OutboxDeliverer, type OutboxOptions } from "./outbox.ts";
import type { NotifierPlatform } from "./platform.ts";

export interface NotifierOptions {
  /** Polling interval of the run changes (a poke starts a tick sooner). */
  tickMs: number;
  /**
   * At most one card edit per run per this window, by platform, where it overrides the surface's own
   * (each surface knows its platform's limits). A longer window only delays what a person sees; the first
   * post is never delayed. Read by the surfaces when they build their platforms.
   */
  editIntervalMs: Readonly<Record<string, number>>;
  /**
   * Each tick re-reads changes this far behind its high-water mark: a change committed late with an older
   * updated_at (a slow writer, another replica, clock skew) is still seen. Per-run card state makes the
   * re-read free of side effects.
   */
  lookbackMs: number;
  /** A run without a thread binding yet (bound just after creation) is looked at again this long. */
  bindGraceMs: number;
  pageSize: number;
  outbox: Partial<OutboxOptions>;
  /** A run in progress with no transcript event for this long is shown stalled (DISPATCH_STALL_AFTER_S). */
  stallAfterMs: number;
  /**
   * How often runs crossing that threshold (or making progress again) are looked for: nothing in the store
   * changes when a run goes quiet. Default min(stallAfterMs / 5, 30 s).
   */
  stallCheckMs?: number;
}

export const DEFAULT_NOTIFIER_OPTIONS: NotifierOptions = {
  tickMs: 1000,
  editIntervalMs: {},
  lookbackMs: 5000,
  bindGraceMs: 30_000,
  pageSize: 200,
  outbox: {},
  stallAfterMs: DEFAULT_STALL_AFTER_MS,
};

/**
 * Appended to the fingerprint of a card that shows a stall, so that the card state alone tells whether the
 * card says "no progress": the stall check then re-reads only runs whose card is wrong.
 */
const STALL_MARK = "~stalled";

const CURSOR = "notifier";
const EPOCH = "1970-01-01T00:00:00.000Z";

/**
 * Reports runs back to every thread bound to them (docs/architecture.md; docs/surfaces.md, one run, many
 * threads). Each tick reads the runs changed since its high-water mark through RunsApi (`updated_after`,
 * sorted by updated_at ascending: one query per tick whatever the number of runs), compares what each
 * thread's card (a chat status card, a tracker's tracking comment) would show with what it last showed, and
 * records the difference (card post/edit, terminal reply, reaction) in the outbox in one atomic step per
 * thread. The OutboxDeliverer sends it through the thread's platform.
 */
export class Notifier {
  readonly outbox: OutboxDeliverer;
  private readonly runs: RunsApi;
  private readonly store: Store;
  private readonly log: Logger;
  private readonly opts: NotifierOptions;
  private readonly platforms = new Map<string, NotifierPlatform>();
  private running = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private poked = false;
  private stallLoop: Promise<void> | undefined;
  private wakeStallCheck: (() => void) | undefined;
  /** When the last stall check started; undefined until the first, which looks at every run in progress. */
  private lastStallCheck: number | undefined;
  /** The plans of runs waiting for approval, by run, as of the run's updated_at: read once per wait. */
  private readonly plans = new Map<string, { updatedAt: string; view: RunView }>();

  constructor(deps: {
    runsApi: RunsApi;
    store: Store;
    /** The platforms it reports to (each integration folder provides its own). */
    platforms: readonly NotifierPlatform[];
    log: Logger;
    options?: Partial<NotifierOptions>;
    owner?: string;
    onDelivery?: (kind: string, outcome: DeliveryOutcome) => void;
  }) {
    this.runs = deps.runsApi;
    this.store = deps.store;
    this.log = deps.log.child({ component: "notifier" });
    this.opts = { ...DEFAULT_NOTIFIER_OPTIONS, ...deps.options };
    for (const p of deps.platforms) this.platforms.set(p.platform, p);
    this.outbox = new OutboxDeliverer({
      store: deps.store,
      platforms: deps.platforms,
      log: deps.log,
      options: this.opts.outbox,
      ...(deps.owner ? { owner: deps.owner } : {}),
      ...(deps.onDelivery ? { onOutcome: deps.onDelivery } : {}),
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    // A hint to tick now; the interval remains the backstop (and the only clock with a remote RunsApi).
    this.store.signals.on("run_changed", this.onRunChanged);
    this.outbox.start();
    this.loop = this.run();
    this.stallLoop = this.runStallChecks();
  }

  private readonly onRunChanged = () => this.poke();

  /** A run changed or a thread was bound: tick soon instead of at the next interval. */
  poke(): void {
    this.poked = true;
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.store.signals.off("run_changed", this.onRunChanged);
    this.wakeUp?.();
    this.wakeStallCheck?.();
    await this.loop;
    await this.stallLoop;
    await this.outbox.stop();
  }

  /** Stops as a crash would: claimed outbox rows stay leased until their lease expires. */
  async kill(): Promise<void> {
    this.running = false;
    this.store.signals.off("run_changed", this.onRunChanged);
    this.wakeUp?.();
    this.wakeStallCheck?.();
    await this.outbox.kill();
    await this.loop;
    await this.stallLoop;
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.poked = false;
      try {
        await this.tick();
      } catch (err) {
        if (!this.running) break;
        this.log.warn({ err }, "notifier tick failed");
      }
      if (!this.running) break;
      if (!this.poked) await this.sleep(this.opts.tickMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = undefined;
        done();
      };
    });
  }

  /**
   * One pass over the changed runs, found by their threads, not by where they came from: a run asked for
   * in a chat thread whose pull request is bound to it reports to both. Public so tests (and a single-shot CLI) can drive it.
   */
  async tick(now = Date.now()): Promise<{ changed: number }> {
    const cursor = (await this.store.getNotifierCursor(CURSOR)) ?? { updatedAt: EPOCH, runId: "" };
    const since = new Date(Math.max(0, Date.parse(cursor.updatedAt) - this.opts.lookbackMs)).toISOString();
    // A surface binds the thread of a run it starts right after creating it: such a run is looked at
    // again for a while. Other runs (the API's, a schedule's: bound in the transaction that creates them)
    // report nowhere until a thread is bound to them, which moves their updated_at.
    const bindsAfterCreate = new Set([...this.platforms.values()].map((p) => p.source));
    let highest: NotifierCursor = cursor;
    let hold: string | undefined;
    let changed = 0;
    let page: string | undefined;
    do {
      const { runs, next_cursor } = await this.runs.list({
        updated_after: since,
        sort_by: "updated_at",
        sort_order: "asc",
        limit: this.opts.pageSize,
        ...(page ? { cursor: page } : {}),
      });
      const state = await this.store.loadNotifierState(runs.map((r) => r.run_id));
      // Only a run in progress whose last change is older than the threshold can have stalled (its
      // progress is at least that change); a run this store does not know (remote mode) never shows one.
      const stallBefore = now - this.opts.stallAfterMs;
      const progress = await this.store.getRunProgress(
        runs
          .filter((r) => r.state === "INPROGRESS" && Date.parse(r.updated_at) <= stallBefore)
          .map((r) => r.run_id),
      );
      // A page's changes are recorded together: SQLite's group commit gives them one fsync, not one each.
      const applied: Array<Promise<number>> = [];
      for (const run of runs) {
        if (after(run, highest)) highest = { updatedAt: run.updated_at, runId: run.run_id };
        const entry = state.get(run.run_id);
        if (!entry?.bindings.length) {
          if (
            bindsAfterCreate.has(run.source) &&
            now - Date.parse(run.updated_at) < this.opts.bindGraceMs &&
            (!hold || run.updated_at < hold)
          ) {
            hold = run.updated_at;
          }
          continue;
        }
        const stalledMs = this.stalledMs(run, progress.get(run.run_id), now);
        const threads = this.threadsOf(entry);
        applied.push(
          this.view(run).then(async (view) => {
            const done = await Promise.all(threads.map((t) => this.apply(t, view, now, stalledMs)));
            return done.filter(Boolean).length;
          }),
        );
      }
      for (const recorded of await Promise.all(applied)) changed += recorded;
      page = next_cursor;
    } while (page);
    let next = highest;
    if (hold && hold < next.updatedAt) next = { updatedAt: hold, runId: "" };
    if (next.updatedAt !== cursor.updatedAt || next.runId !== cursor.runId) {
      await this.store.setNotifierCursor(CURSOR, next);
    }
    return { changed };
  }

  /**
   * The run as its cards show it: with its plan while the plan waits for approval (docs/surfaces.md,
   * "Waiting for you"), read once for each time the run changes.
   */
  private async view(run: RunItem): Promise<RunView> {
    if (!waitsForApproval(run)) {
      this.plans.delete(run.run_id);
      return run;
    }
    const known = this.plans.get(run.run_id);
    if (known?.updatedAt === run.updated_at) return known.view;
    let unread = false;
    const view = await withPlan(this.runs, run, (err) => {
      unread = true;
      this.log.warn({ err, runId: run.run_id }, "could not read the plan of a run waiting for approval");
    });
    // Unread, the card points to the run page for now, and a later tick tries again.
    if (!unread) this.plans.set(run.run_id, { updatedAt: run.updated_at, view });
    return view;
  }

  /** The run's threads this notifier reports to (those of a surface served here, not ended), each with its card. */
  private threadsOf(entry: NotifierState): ReportedThread[] {
    const origin = entry.bindings[0];
    const threads: ReportedThread[] = [];
    for (const binding of entry.bindings) {
      const platform = this.platforms.get(binding.platform);
      // An ended thread (a merged pull request) follows the run no more.
      if (!platform || binding.ended) continue;
      const key = threadKey(binding);
      threads.push({ platform, binding, key, origin: binding === origin, card: entry.cards.get(key) });
    }
    return threads;
  }

  /** How long the run has gone without progress, when it is stalled; undefined without a known progress. */
  private stalledMs(run: RunItem, lastEventAt: string | undefined, now: number): number | undefined {
    if (lastEventAt === undefined) return undefined;
    return stalledFor(
      { state: run.state as RunRecord["state"], updatedAt: run.updated_at, lastEventAt },
      now,
      this.opts.stallAfterMs,
    );
  }

  private stallCheckMs(): number {
    return this.opts.stallCheckMs ?? Math.max(1, Math.min(this.opts.stallAfterMs / 5, 30_000));
  }

  private async runStallChecks(): Promise<void> {
    while (this.running) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.stallCheckMs());
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.wakeStallCheck = () => {
          this.wakeStallCheck = undefined;
          done();
        };
      });
      if (!this.running) break;
      try {
        await this.checkStalls();
      } catch (err) {
        if (!this.running) break;
        this.log.warn({ err }, "stall check failed");
      }
    }
  }

  /**
   * Stalls are never silent, yet nothing in the store changes when a run goes quiet, and an event
   * leaves updated_at alone: so this looks, through the store's index of runs in progress by progress
   * (not a scan of runs), for runs that crossed DISPATCH_STALL_AFTER_S since the last check and for runs
   * that made progress since then, and re-renders those whose card says the wrong thing. The first check
   * looks at every run in progress (after a restart, or a card another replica drew). Public for tests.
   */
  async checkStalls(now = Date.now()): Promise<{ changed: number }> {
    const stallAfter = this.opts.stallAfterMs;
    const threshold = new Date(now - stallAfter).toISOString();
    const last = this.lastStallCheck;
    this.lastStallCheck = now;
    // The look-back covers events committed late with an earlier time (a slow writer, clock skew).
    const margin = this.opts.lookbackMs + this.stallCheckMs();
    const quiet = await this.progressIn({
      before: threshold,
      ...(last === undefined ? {} : { after: new Date(last - stallAfter - margin).toISOString() }),
    });
    const moving = await this.progressIn({
      after: last === undefined ? threshold : maxIso(threshold, new Date(last - margin).toISOString()),
    });
    let changed = 0;
    for (const [ids, wantStalled] of [
      [quiet, true],
      [moving, false],
    ] as const) {
      const runIds = [...ids.keys()];
      for (let i = 0; i < runIds.length; i += this.opts.pageSize) {
        const page = runIds.slice(i, i + this.opts.pageSize);
        const state = await this.store.loadNotifierState(page);
        for (const runId of page) {
          const entry = state.get(runId);
          // Without a card yet the main tick draws the first one; a card already right needs nothing.
          const wrong = (entry ? this.threadsOf(entry) : []).filter(
            (t) => t.card && t.card.fingerprint.endsWith(STALL_MARK) !== wantStalled,
          );
          if (wrong.length === 0) continue;
          const run = await this.runs.get(runId).catch(() => undefined);
          if (!run || isTerminal(run.state)) continue; // the main tick reports the end
          const stalledMs = this.stalledMs(run, ids.get(runId), now);
          for (const thread of wrong) if (await this.apply(thread, run, now, stalledMs)) changed++;
        }
      }
    }
    if (changed > 0) this.log.debug({ changed }, "stall check re-rendered cards");
    return { changed };
  }

  /** The runs in progress whose latest event is in the range (id → its time), every page of them. */
  private async progressIn(range: { after?: string; before?: string }): Promise<Map<string, string>> {
    const ids = new Map<string, string>();
    let cursor: RunProgress | undefined;
    for (;;) {
      const page = await this.store.listRunsByProgress({
        ...range,
        limit: this.opts.pageSize,
        ...(cursor ? { cursor } : {}),
      });
      for (const p of page) ids.set(p.runId, p.lastEventAt);
      if (page.length < this.opts.pageSize) return ids;
      cursor = page.at(-1);
    }
  }

  /**
   * Records what changed for one thread of a run; false when nothing did (or another notifier recorded it
   * first). Every thread's card shows the run's state; a terminal state's reply (and reaction) goes to the
   * origin, to a thread someone asked from since its last reply, and to a thread that never had one
   * (docs/surfaces.md, where replies go).
   */
  private async apply(thread: ReportedThread, run: RunView, now: number, stalledMs: number | undefined) {
    const { platform, binding, key, card } = thread;
    if (card && card.runUpdatedAt > run.updated_at) return false; // an older read than what we have
    const stalled = stalledMs !== undefined;
    const fingerprint = platform.fingerprint(run, stalled) + (stalled ? STALL_MARK : "");
    const finished = isTerminal(run.state) && run.finished_at ? run.finished_at : undefined;
    const needFinal = finished !== undefined && card?.lastFinal !== finished;
    const cardChanged = fingerprint !== card?.fingerprint;
    if (!cardChanged && !needFinal) return false;

    const target = platform.target(binding);
    const stream = `thread:${run.run_id}:${key}`;
    const messages: OutboxMessage[] = [];
    if (needFinal && repliesHere(thread)) {
      messages.push({
        dedupeKey: `final:${run.run_id}:${key}:${finished}`,
        kind: "reply",
        stream,
        target,
        payload: platform.finalReply(run, binding),
      });
      const reaction = platform.outcomeReaction(run, binding);
      if (reaction) {
        messages.push({
          dedupeKey: `react:${run.run_id}:${key}:${finished}`,
          kind: "reaction",
          stream,
          target,
          payload: reaction,
        });
      }
    }
    const recorded = await this.store.recordCardChange({
      runId: run.run_id,
      threadKey: key,
      expectedVersion: card?.version ?? 0,
      fingerprint,
      runUpdatedAt: run.updated_at,
      lastFinal: needFinal ? finished : (card?.lastFinal ?? null),
      ...(cardChanged
        ? {
            card: {
              stream: `card:${run.run_id}:${key}`,
              target,
              payload: platform.card(run, binding, now, stalledMs),
              editIntervalMs: platform.editIntervalMs,
            },
          }
        : {}),
      messages,
      now: new Date(now).toISOString(),
    });
    if (recorded && cardChanged && card?.lastCardAt) {
      // An edit inside the window is due when the window ends: wake the deliverer then, not at its next poll.
      this.outbox.wakeAt(Date.parse(card.lastCardAt) + platform.editIntervalMs);
    }
    if (recorded) {
      this.log.debug(
        { runId: run.run_id, thread: key, state: run.state, card: cardChanged, final: needFinal },
        "card change",
      );
    }
    return recorded;
  }
}

/** One thread of a run as the notifier reports to it. */
interface ReportedThread {
  platform: NotifierPlatform;
  binding: ThreadBinding;
  key: string;
  /** The thread the run was asked in. */
  origin: boolean;
  card: CardState | undefined;
}

/** Whether a terminal state's reply goes to this thread (see Notifier.apply). */
function repliesHere({ origin, binding, card }: ReportedThread): boolean {
  if (origin || !card?.lastFinal) return true;
  return binding.askedAt != null && binding.askedAt > card.lastFinal;
}

function after(run: RunItem, mark: NotifierCursor): boolean {
  return run.updated_at > mark.updatedAt || (run.updated_at === mark.updatedAt && run.run_id > mark.runId);
}

function maxIso(a: string, b: string): string {
  return a > b ? a : b;
}

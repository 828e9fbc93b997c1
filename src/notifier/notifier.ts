import type { Logger } from "pino";
import { isTerminal } from "../model/run-state.ts";
import type { ThreadBinding } from "../model/thread-binding.ts";
import type { RunItem } from "../runs/run-item.ts";
import type { RunsApi } from "../runs/runs-api.ts";
import type { CardState, NotifierCursor, OutboxMessage, Store } from "../store/store.ts";
import { type DeliveryOutcome, OutboxDeliverer, type OutboxOptions } from "./outbox.ts";
import type { NotifierPlatform } from "./platform.ts";

/** Runs fired by a schedule: reported where the schedule says (its thread binding), on any platform. */
const SCHEDULED_SOURCE = "SCHEDULED_AGENT";

export interface NotifierOptions {
  /** Polling interval of the run changes (a poke starts a tick sooner). */
  tickMs: number;
  /** At most one Slack card edit per run per this window (~50 chat.update per minute per workspace). */
  editIntervalMs: number;
  /** The same for GitHub tracking comments (INTEGRATIONS.md: at most one edit per 10 s). */
  githubEditIntervalMs: number;
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
}

export const DEFAULT_NOTIFIER_OPTIONS: NotifierOptions = {
  tickMs: 1000,
  editIntervalMs: 5000,
  githubEditIntervalMs: 10_000,
  lookbackMs: 5000,
  bindGraceMs: 30_000,
  pageSize: 200,
  outbox: {},
};

const CURSOR = "notifier";
const EPOCH = "1970-01-01T00:00:00.000Z";

/**
 * Reports runs started from Slack and GitHub back to their thread or issue (DESIGN.md "notifier"). Each
 * tick reads the runs changed since its high-water mark through RunsApi (`updated_after`, sorted by
 * updated_at ascending: one query per platform per tick whatever the number of runs), compares what each
 * card (Slack status card, GitHub tracking comment) would show with what it last showed, and records the
 * difference (card post/edit, terminal reply, reaction) in the outbox in one atomic step. The
 * OutboxDeliverer sends it through the platform's transport.
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
    await this.loop;
    await this.outbox.stop();
  }

  /** Stops as a crash would: claimed outbox rows stay leased until their lease expires. */
  async kill(): Promise<void> {
    this.running = false;
    this.store.signals.off("run_changed", this.onRunChanged);
    this.wakeUp?.();
    await this.outbox.kill();
    await this.loop;
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

  /** One pass over the changed runs. Public so tests (and a single-shot CLI) can drive it. */
  async tick(now = Date.now()): Promise<{ changed: number }> {
    const cursor = (await this.store.getNotifierCursor(CURSOR)) ?? { updatedAt: EPOCH, runId: "" };
    const since = new Date(Math.max(0, Date.parse(cursor.updatedAt) - this.opts.lookbackMs)).toISOString();
    let highest: NotifierCursor = cursor;
    let hold: string | undefined;
    let changed = 0;
    // A schedule made in a channel fires runs bound to it: each platform reports those too.
    const lists = [...this.platforms.values()].flatMap((platform) =>
      [platform.source, SCHEDULED_SOURCE].map((source) => ({ platform, source })),
    );
    for (const { platform, source } of lists) {
      let page: string | undefined;
      do {
        const { runs, next_cursor } = await this.runs.list({
          updated_after: since,
          sort_by: "updated_at",
          sort_order: "asc",
          source,
          limit: this.opts.pageSize,
          ...(page ? { cursor: page } : {}),
        });
        const state = await this.store.loadNotifierState(runs.map((r) => r.run_id));
        for (const run of runs) {
          if (after(run, highest)) highest = { updatedAt: run.updated_at, runId: run.run_id };
          const entry = state.get(run.run_id);
          const binding = entry?.binding?.platform === platform.platform ? entry.binding : undefined;
          if (!binding) {
            // The integration binds the thread right after creating the run: look again for a while. A
            // scheduled run is bound in the transaction that creates it, or reports nowhere.
            if (
              source !== SCHEDULED_SOURCE &&
              now - Date.parse(run.updated_at) < this.opts.bindGraceMs &&
              (!hold || run.updated_at < hold)
            ) {
              hold = run.updated_at;
            }
            continue;
          }
          if (await this.apply(platform, run, binding, entry?.card, now)) changed++;
        }
        page = next_cursor;
      } while (page);
    }
    let next = highest;
    if (hold && hold < next.updatedAt) next = { updatedAt: hold, runId: "" };
    if (next.updatedAt !== cursor.updatedAt || next.runId !== cursor.runId) {
      await this.store.setNotifierCursor(CURSOR, next);
    }
    return { changed };
  }

  /** Records what changed for one run; false when nothing did (or another notifier recorded it first). */
  private async apply(
    platform: NotifierPlatform,
    run: RunItem,
    binding: ThreadBinding,
    card: CardState | undefined,
    now: number,
  ) {
    if (card && card.runUpdatedAt > run.updated_at) return false; // an older read than what we have
    const fingerprint = platform.fingerprint(run);
    const finished = isTerminal(run.state) && run.finished_at ? run.finished_at : undefined;
    const needFinal = finished !== undefined && card?.lastFinal !== finished;
    const cardChanged = fingerprint !== card?.fingerprint;
    if (!cardChanged && !needFinal) return false;

    const target = platform.target(binding);
    const thread = `thread:${run.run_id}`;
    const messages: OutboxMessage[] = [];
    if (needFinal) {
      messages.push({
        dedupeKey: `final:${run.run_id}:${finished}`,
        kind: "reply",
        stream: thread,
        target,
        payload: platform.finalReply(run, binding),
      });
      const reaction = platform.outcomeReaction(run, binding);
      if (reaction) {
        messages.push({
          dedupeKey: `react:${run.run_id}:${finished}`,
          kind: "reaction",
          stream: thread,
          target,
          payload: reaction,
        });
      }
    }
    const recorded = await this.store.recordCardChange({
      runId: run.run_id,
      expectedVersion: card?.version ?? 0,
      fingerprint,
      runUpdatedAt: run.updated_at,
      lastFinal: needFinal ? finished : (card?.lastFinal ?? null),
      ...(cardChanged
        ? {
            card: {
              stream: `card:${run.run_id}`,
              target,
              payload: platform.card(run, binding, now),
              editIntervalMs: platform.editIntervalMs,
            },
          }
        : {}),
      messages,
      now: new Date(now).toISOString(),
    });
    if (recorded) {
      this.log.debug(
        { runId: run.run_id, state: run.state, card: cardChanged, final: needFinal },
        "card change",
      );
    }
    return recorded;
  }
}

function after(run: RunItem, mark: NotifierCursor): boolean {
  return run.updated_at > mark.updatedAt || (run.updated_at === mark.updatedAt && run.run_id > mark.runId);
}

import { randomUUID } from "node:crypto";
import pRetry, { AbortError } from "p-retry";
import type { Logger } from "pino";
import type { OutboxRow, Store } from "../store/store.ts";
import { inSpan } from "../telemetry/spans.ts";
import { type NotifierPlatform, SendError, targetPlatform } from "./platform.ts";

export interface OutboxOptions {
  /** Rows delivered at once (across all targets). */
  concurrency: number;
  /** How long a claimed row stays ours without a new attempt; another instance takes it over after that. */
  leaseMs: number;
  /** Attempts per message (persisted, so a restart does not reset them) before it is dead-lettered. */
  maxAttempts: number;
  /** Exponential backoff with jitter: base × 2^n × [1, 2), capped at `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Polling backstop for due rows (enqueues in this process wake the deliverer at once). */
  pollMs: number;
}

export const DEFAULT_OUTBOX_OPTIONS: OutboxOptions = {
  concurrency: 16,
  leaseMs: 60_000,
  maxAttempts: 8,
  retryBaseMs: 1000,
  retryMaxMs: 30_000,
  pollMs: 500,
};

export type DeliveryOutcome = "sent" | "retry" | "rate_limited" | "dead";

class LeaseLost extends Error {}

/**
 * Delivers the persisted outbox through each surface's platform `send`. Rows are claimed atomically
 * with a lease, so two instances on one store never send the same row; each row's stream (a run's card, a run's thread) goes out in order,
 * while different streams go out concurrently, so one slow or rate-limited channel holds back nothing else.
 * Transient failures are retried with p-retry (exponential backoff, jitter); a 429 hands the row back
 * with `not_before` = Retry-After and pauses that channel only; attempts are bounded, then dead letter.
 */
export class OutboxDeliverer {
  readonly owner: string;
  private readonly store: Store;
  private readonly senders = new Map<string, Pick<NotifierPlatform, "send">>();
  private readonly log: Logger;
  private readonly opts: OutboxOptions;
  private readonly onOutcome: ((kind: string, outcome: DeliveryOutcome) => void) | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly pausedUntil = new Map<string, number>();
  private readonly abort = new AbortController();
  private running = false;
  private killed = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private wakePending = false;
  /** When rows recorded here fall due (throttled card edits): the loop wakes then, not at its next poll. */
  private dueTimes: number[] = [];
  /** When the latest claim began: due times up to it were covered by that claim. */
  private lastClaimAt = 0;

  constructor(deps: {
    store: Store;
    /** Who sends a row, by the platform part of its target. */
    platforms: ReadonlyArray<Pick<NotifierPlatform, "platform" | "send">>;
    log: Logger;
    options?: Partial<OutboxOptions>;
    owner?: string;
    onOutcome?: (kind: string, outcome: DeliveryOutcome) => void;
  }) {
    this.store = deps.store;
    for (const p of deps.platforms) this.senders.set(p.platform, p);
    this.log = deps.log.child({ component: "outbox" });
    this.opts = { ...DEFAULT_OUTBOX_OPTIONS, ...deps.options };
    this.owner = deps.owner ?? `outbox-${randomUUID()}`;
    this.onOutcome = deps.onOutcome;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    // The store announces enqueues (in this process now; across replicas once a backend publishes them).
    this.store.signals.on("outbox_enqueued", this.onEnqueued);
    this.loop = this.run();
  }

  private readonly onEnqueued = () => this.poke();

  /** A row recorded with a later due time (a card edit inside its window) falls due at `at` (epoch ms). */
  wakeAt(at: number): void {
    if (!this.dueTimes.includes(at)) this.dueTimes.push(at);
    this.poke();
  }

  /** Something was enqueued or finished: look for due rows now. */
  poke(): void {
    this.wakePending = true;
    this.wakeUp?.();
  }

  /** Graceful: stop claiming, let attempts under way end, hand rows waiting for a retry back at once. */
  async stop(): Promise<void> {
    this.running = false;
    this.store.signals.off("outbox_enqueued", this.onEnqueued);
    this.abort.abort(new Error("outbox stopping"));
    this.poke();
    await this.loop;
    await Promise.allSettled([...this.inFlight]);
  }

  /** Like a crash: stop at once and leave claimed rows to lease expiry (tests of restart recovery). */
  async kill(): Promise<void> {
    this.killed = true;
    await this.stop();
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.wakePending = false;
      let claimed = 0;
      const free = this.opts.concurrency - this.inFlight.size;
      if (free > 0) {
        try {
          const now = Date.now();
          this.lastClaimAt = now;
          for (const [target, until] of this.pausedUntil) if (until <= now) this.pausedUntil.delete(target);
          const rows = await this.store.claimOutbox(this.owner, {
            limit: free,
            leaseMs: this.opts.leaseMs,
            excludeTargets: [...this.pausedUntil.keys()],
          });
          claimed = rows.length;
          for (const row of rows) this.track(this.deliver(row));
        } catch (err) {
          if (!this.running) break;
          this.log.warn({ err }, "outbox claim failed");
        }
      }
      if (claimed > 0 && claimed === free) continue;
      if (this.wakePending) continue;
      await this.sleep(this.nextWakeMs());
    }
  }

  private nextWakeMs(): number {
    let ms = this.opts.pollMs;
    const now = Date.now();
    for (const until of this.pausedUntil.values()) ms = Math.min(ms, Math.max(1, until - now));
    // A due time up to the latest claim's start was covered by that claim; a later one needs a claim.
    this.dueTimes = this.dueTimes.filter((at) => at > this.lastClaimAt);
    for (const at of this.dueTimes) ms = Math.min(ms, Math.max(1, at - now));
    return ms;
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

  private track(delivery: Promise<void>): void {
    // deliver() records every outcome itself; what still escapes (the store closed under it) is logged,
    // and the row's lease brings it back.
    const p = delivery.catch((err: unknown) => {
      if (this.running)
        this.log.error({ err }, "outbox delivery failed; the row will be retried after its lease");
    });
    this.inFlight.add(p);
    void p.finally(() => {
      this.inFlight.delete(p);
      this.poke();
    });
  }

  private async deliver(row: OutboxRow): Promise<void> {
    const log = this.log.child({ outboxId: row.id, runId: row.runId, kind: row.kind, key: row.dedupeKey });
    const o = this.opts;
    let attempt = row.attempts;
    try {
      const result = await pRetry(
        async () => {
          const n = await this.store.beginOutboxAttempt(row.id, this.owner, o.leaseMs);
          if (n === undefined) throw new AbortError(new LeaseLost("lease lost"));
          attempt = n;
          try {
            return await this.send(row);
          } catch (err) {
            const e = err instanceof SendError ? err : new SendError("retryable", String(err));
            // Rate limits and permanent errors leave the retry loop: a 429 must not hold this slot.
            if (e.kind !== "retryable" || n >= o.maxAttempts) throw new AbortError(e);
            throw e;
          }
        },
        {
          retries: Math.max(0, o.maxAttempts - row.attempts - 1),
          factor: 2,
          minTimeout: o.retryBaseMs,
          maxTimeout: o.retryMaxMs,
          randomize: true,
          signal: this.abort.signal,
          onFailedAttempt: ({ error, attemptNumber, retryDelay }) => {
            this.onOutcome?.(row.kind, "retry");
            log.warn(
              { error: error.message, attempt: attemptNumber, retry_in_ms: retryDelay },
              "notifier delivery failed",
            );
          },
        },
      );
      const ok = await this.store.completeOutbox(row.id, this.owner, result);
      if (ok) this.onOutcome?.(row.kind, "sent");
      else log.warn("outbox row was taken over before it was marked sent");
    } catch (err) {
      if (err instanceof LeaseLost) return;
      if (this.abort.signal.aborted && !(err instanceof SendError)) {
        // Stopping during a backoff wait: hand the row back now, unless this is a simulated crash.
        if (!this.killed)
          await this.safe(this.store.retryOutbox(row.id, this.owner, new Date().toISOString(), null));
        return;
      }
      const e = err instanceof SendError ? err : new SendError("retryable", String(err));
      if (e.kind === "rate_limited" && attempt < o.maxAttempts) {
        const until = Date.now() + (e.retryAfterMs ?? o.retryBaseMs);
        this.pausedUntil.set(row.target, Math.max(this.pausedUntil.get(row.target) ?? 0, until));
        this.onOutcome?.(row.kind, "rate_limited");
        log.info(
          { retry_after_ms: e.retryAfterMs, target: row.target },
          "rate limited: retrying after Retry-After",
        );
        if (!this.killed)
          await this.safe(
            this.store.retryOutbox(row.id, this.owner, new Date(until).toISOString(), e.message),
          );
        return;
      }
      if (this.killed) return;
      await this.safe(this.store.deadLetterOutbox(row.id, this.owner, e.message));
      this.onOutcome?.(row.kind, "dead");
      log.error(
        { error: e.message, attempts: attempt, target: row.target },
        "notifier message dead-lettered",
      );
    }
  }

  private async safe(p: Promise<unknown>): Promise<void> {
    try {
      await p;
    } catch (err) {
      this.log.warn({ err }, "outbox bookkeeping failed (the lease will expire and the row be retried)");
    }
  }

  /** One call through the row's platform. */
  private async send(row: OutboxRow): Promise<{ cardRef?: string; thread?: string }> {
    const sender = this.senders.get(targetPlatform(row.target));
    if (!sender) throw new SendError("permanent", `no platform sends to target ${row.target}`);
    const attributes = {
      "dispatch.run.id": row.runId,
      "dispatch.notifier.kind": row.kind,
      "dispatch.notifier.target": row.target,
    };
    return inSpan(`notifier send ${targetPlatform(row.target)}`, attributes, () => sender.send(row));
  }
}

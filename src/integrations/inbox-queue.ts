import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import type { InboundDelivery, Store } from "../store/store.ts";

/** Attempts per delivery: a handling that keeps failing is given up (and logged) after these. */
const MAX_ATTEMPTS = 5;
/** The wait before a failed delivery's next attempt, doubling from this. */
const RETRY_BASE_MS = 1_000;

export type InboxStore = Pick<
  Store,
  "acceptInbound" | "claimInboundDeliveries" | "finishInboundDelivery" | "releaseInboundDelivery"
>;

export interface InboxQueueOptions {
  /** The surface whose deliveries these are (its platform name). */
  source: string;
  store: InboxStore;
  /** Handles one delivery; a throw is a failed attempt, retried with backoff. */
  handle: (delivery: InboundDelivery) => Promise<void>;
  /** How long a claimed delivery is held: after a crash, its work is picked up once this has passed. */
  leaseMs: number;
  /** How often the inbox is looked at for deliveries nobody holds (a crashed owner's, a retry's). */
  pollMs: number;
  /** Deliveries handled at once. */
  concurrency: number;
  log: Logger;
}

/**
 * The work of acknowledged deliveries, taken from the persisted inbox: a route stores a verified delivery
 * before it answers and then calls `kick`; this queue claims it with a lease, handles it and marks it done.
 * A delivery acknowledged just before a crash is still in the inbox, and its lease runs out, so after a
 * restart (or on another replica) it is handled then. A handling retried that way must be idempotent:
 * the RunsApi calls it makes carry idempotency keys derived from the delivery.
 */
export class InboxQueue {
  private readonly opts: InboxQueueOptions;
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly inFlight = new Set<Promise<void>>();
  /** Ids of the deliveries being handled here. */
  private readonly handling = new Set<number>();
  private pass: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(opts: InboxQueueOptions) {
    this.opts = opts;
  }

  /** Starts handling, beginning with what an earlier process left in the inbox. */
  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.kick(), this.opts.pollMs);
    this.timer.unref();
    this.kick();
  }

  /** Looks at the inbox now: a delivery was just stored, or a slot came free. */
  kick(): void {
    if (this.stopped) return;
    if (this.pass) {
      this.again = true;
      return;
    }
    this.pass = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.claimAndStart())
      .catch((err: unknown) => this.opts.log.warn({ err }, "could not read the inbox; retrying"))
      .finally(() => {
        this.pass = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Stops claiming and waits for the deliveries being handled; the rest stay in the inbox. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.idle();
  }

  /** Resolves once no delivery is being claimed or handled by this process. */
  async idle(): Promise<void> {
    while (this.pass || this.inFlight.size > 0) await Promise.allSettled([this.pass, ...this.inFlight]);
  }

  private async claimAndStart(): Promise<void> {
    const free = this.opts.concurrency - this.inFlight.size;
    if (free <= 0) return;
    const deliveries = await this.opts.store.claimInboundDeliveries(this.owner, {
      source: this.opts.source,
      limit: free,
      leaseMs: this.opts.leaseMs,
      maxAttempts: MAX_ATTEMPTS,
    });
    for (const delivery of deliveries) {
      // Still being handled here after its lease ran out: claiming it again extended the lease.
      if (this.handling.has(delivery.id)) continue;
      this.handling.add(delivery.id);
      const work = this.run(delivery).finally(() => {
        this.handling.delete(delivery.id);
        this.inFlight.delete(work);
        this.kick();
      });
      this.inFlight.add(work);
    }
  }

  private async run(delivery: InboundDelivery): Promise<void> {
    const { store, log } = this.opts;
    const about = { delivery: delivery.deliveryId, kind: delivery.kind, attempt: delivery.attempts };
    try {
      await this.opts.handle(delivery);
    } catch (err) {
      const last = delivery.attempts >= MAX_ATTEMPTS;
      log.error({ err, ...about }, last ? "delivery handling failed; giving up" : "delivery handling failed");
      const retryAt = new Date(Date.now() + RETRY_BASE_MS * 2 ** (delivery.attempts - 1)).toISOString();
      await store
        .releaseInboundDelivery(delivery.id, this.owner, retryAt)
        .catch((e: unknown) => log.warn({ err: e, ...about }, "could not hand a delivery back"));
      return;
    }
    // If this fails the lease runs out and the delivery is handled again: idempotently.
    await store
      .finishInboundDelivery(delivery.id, this.owner)
      .catch((err: unknown) => log.warn({ err, ...about }, "could not mark a delivery handled"));
  }
}

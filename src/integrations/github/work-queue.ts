import type { Logger } from "pino";

/** Deliveries handled at once (each is a few store writes and at most one GitHub call). */
const WORK_CONCURRENCY = 4;

/**
 * The work of acknowledged deliveries, handled a few at a time after the current acknowledgements: a burst
 * of webhooks is answered first (GitHub's 10 s deadline, our < 50 ms target) and then worked through,
 * without a burst of permission calls at GitHub. Nobody waits for the work's answer, so a failure is logged
 * here; shutdown and tests wait for it so nothing is cut off mid-call.
 */
export class WorkQueue {
  private readonly log: Logger;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly waiting: Array<() => Promise<void>> = [];
  private active = 0;

  constructor(log: Logger) {
    this.log = log;
  }

  enqueue(work: () => Promise<unknown>): void {
    let release!: () => void;
    const done = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.inFlight.add(done);
    this.waiting.push(async () => {
      try {
        await work();
      } catch (err) {
        this.log.error({ err }, "GitHub webhook handling failed");
      } finally {
        this.inFlight.delete(done);
        release();
      }
    });
    setImmediate(() => this.drain());
  }

  /** Resolves when no work is left, including work enqueued while waiting. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private drain(): void {
    while (this.active < WORK_CONCURRENCY && this.waiting.length > 0) {
      const next = this.waiting.shift()!;
      this.active += 1;
      void next().finally(() => {
        this.active -= 1;
        this.drain();
      });
    }
  }
}

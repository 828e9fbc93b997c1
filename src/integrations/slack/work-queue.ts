import type { Logger } from "pino";

/**
 * The work a listener starts after acknowledging Slack. Nobody waits for its answer, so a failure is
 * logged here; shutdown and tests wait for it so nothing is cut off mid-call.
 */
export class WorkQueue {
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly log: Logger;

  constructor(log: Logger) {
    this.log = log;
  }

  track(work: Promise<unknown>): void {
    const p = work.catch((err: unknown) => this.log.error({ err }, "Slack request failed"));
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  /** Resolves when the work started so far is done. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  /** Resolves when no work is left, including work started while waiting. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }
}

/**
 * How long after a step ends its checkpoint waits for the execution to go on. A turn whose last step it
 * was ends within a few milliseconds (its last words and the end's commit), and an ended run needs no
 * checkpoint (its end drops it); an agent that goes on spends far longer on its next step (a model call)
 * than this.
 */
export const STEP_SETTLE_MS = 25;

/**
 * Why a save under way stops: the execution ended. One reason for every schedule: abort() without one
 * builds a DOMException with its stack each time it is called (twice per run), ≈ 1 % of a worker's CPU.
 */
const EXECUTION_ENDED = new Error("the execution ended");

/**
 * When a run's checkpoint is taken (docs/architecture.md, "Runs survive their worker"): after every agent
 * step (STEP_SETTLE_MS after it), and at least every interval while the agent works. One save at a time:
 * steps that end while one runs are covered by one more save after it, not by one each. Once the execution
 * has ended here, a save under way is told to give up (its signal): the run's end dropped the checkpoint,
 * and the store would refuse the write anyway.
 */
export class CheckpointSchedule {
  private readonly save: (signal: AbortSignal) => Promise<void>;
  private readonly ended = new AbortController();
  private readonly timer: NodeJS.Timeout;
  /** The save after the last step, while it settles. */
  private settling: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(save: (signal: AbortSignal) => Promise<void>, intervalMs: number) {
    this.save = save;
    this.timer = setInterval(() => this.request(), intervalMs);
    this.timer.unref();
  }

  /** An agent step ended: a save once it has settled (one for the steps that end meanwhile). */
  stepEnded(): void {
    if (this.stopped || this.settling) return;
    this.settling = setTimeout(() => {
      this.settling = undefined;
      this.request();
    }, STEP_SETTLE_MS);
    this.settling.unref();
  }

  /** Takes one more checkpoint after any under way (the last one before the run moves). */
  async flush(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.settling);
    await this.running;
    await this.save(this.ended.signal);
  }

  /** No more checkpoints (the execution ended here); a save under way stops early. */
  async stop(): Promise<void> {
    this.end();
    await this.running;
  }

  /** As stop(), without waiting for a save under way to return. */
  end(): void {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.settling);
    if (!this.ended.signal.aborted) this.ended.abort(EXECUTION_ENDED);
  }

  private request(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.save(this.ended.signal);
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = undefined;
    });
  }
}

/**
 * When a run's checkpoint is taken (docs/architecture.md, "Runs survive their worker"): after every agent
 * step, and at least every interval while the agent works. One save at a time: steps that end while one
 * runs are covered by one more save after it, not by one each. Once the execution has ended here, a save
 * under way is told to give up (its signal): the run's end dropped the checkpoint, and the store would
 * refuse the write anyway.
 */
export class CheckpointSchedule {
  private readonly save: (signal: AbortSignal) => Promise<void>;
  private readonly ended = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(save: (signal: AbortSignal) => Promise<void>, intervalMs: number) {
    this.save = save;
    this.timer = setInterval(() => this.request(), intervalMs);
    this.timer.unref();
  }

  /** An agent step ended. */
  stepEnded(): void {
    this.request();
  }

  /** Takes one more checkpoint after any under way (the last one before the run moves). */
  async flush(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
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
    this.ended.abort();
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

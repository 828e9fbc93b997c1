/** How long an interrupted run waits for a follow-up when its config has no idle_timeout_minutes. */
export const DEFAULT_IDLE_AFTER_INTERRUPT_MS = 10 * 60_000;

/** Between checks for a follow-up while waiting: a backstop for a missed `followup_added` signal. */
const FOLLOWUP_POLL_MS = 1000;

/**
 * The agent's turns within one execution. Each turn gets its own signal, which aborts with the
 * execution's (cancel, lost lease, shutdown, limits) or alone when the run is interrupted
 * (POST /agent/runs/{id}/interrupt, docs/api.md): the harness stops that turn as it stops for a cancel, but
 * the run, its sandbox and its workspace stay, and the execution waits for a follow-up to start the next
 * turn. Interrupts are counted on the run; a count higher than the one last seen stops the turn under way.
 */
export class TurnControl {
  private readonly execution: AbortSignal;
  private seen: number;
  private turn: AbortController | undefined;
  private stoppedByInterrupt = false;
  private wake: (() => void) | undefined;

  constructor(execution: AbortSignal, interrupts: number) {
    this.execution = execution;
    this.seen = interrupts;
  }

  /** The signal of a new turn. */
  begin(): AbortSignal {
    const turn = new AbortController();
    this.turn = turn;
    this.stoppedByInterrupt = false;
    if (this.execution.aborted) turn.abort(this.execution.reason);
    else this.execution.addEventListener("abort", () => turn.abort(this.execution.reason), { once: true });
    return turn.signal;
  }

  /** Whether the last turn was stopped by an interrupt (and not by the execution's own stop). */
  get interrupted(): boolean {
    return this.stoppedByInterrupt && !this.execution.aborted;
  }

  /** The run's interrupt count as last read: a higher one stops the turn under way, if any. */
  observe(interrupts: number | undefined): void {
    const count = interrupts ?? 0;
    if (count <= this.seen) return;
    this.seen = count;
    const turn = this.turn;
    if (turn && !turn.signal.aborted) {
      this.stoppedByInterrupt = true;
      turn.abort("interrupted");
    }
  }

  /**
   * Stops the turn under way as an interrupt does, except that the execution decides what follows (the
   * run reached its budget: it waits for more, budget-gate.ts).
   */
  stopTurn(reason: string): void {
    const turn = this.turn;
    if (turn && !turn.signal.aborted) turn.abort(reason);
  }

  /** A follow-up may have arrived: a wait for one checks now. */
  nudge(): void {
    this.wake?.();
  }

  /**
   * Waits up to `idleMs` for follow-ups (`take` hands them over) and returns their messages; none when the
   * time is up or the execution stops first.
   */
  async waitForFollowups(take: () => Promise<string[]>, idleMs: number): Promise<string[]> {
    const deadline = Date.now() + idleMs;
    for (;;) {
      const taken = await take();
      if (taken.length || this.execution.aborted) return taken;
      const left = deadline - Date.now();
      if (left <= 0) return [];
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.execution.removeEventListener("abort", done);
          this.wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, Math.min(FOLLOWUP_POLL_MS, left));
        this.execution.addEventListener("abort", done, { once: true });
        this.wake = done;
      });
    }
  }
}

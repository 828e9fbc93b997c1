import type { Logger } from "pino";
import type { RunEventType } from "../model/run.ts";
import type { NewRunEvent, Store } from "../store/store.ts";

/**
 * How long an event that may wait (isHeld, note) waits for the execution's next write before it is written on
 * its own: what a person watching sees of the agent's words, at most this much later.
 */
export const HOLD_MS = 200;
/**
 * How long a tool's result waits for the execution's next write: the next tool call, or the end of the
 * turn, which then carries it (one commit, not two). A result is a step's end, so it waits briefly: what
 * follows it (a checkpoint, a person watching) waits as long.
 */
export const RESULT_HOLD_MS = 50;

/** Thrown into the harness by a write of a worker that no longer holds the run (lease fencing). */
export class RunMovedError extends Error {
  constructor() {
    super("this worker no longer holds the run");
  }
}

export interface ExecutionTranscriptOptions {
  store: Pick<Store, "appendWorkerEvents" | "appendEvent">;
  runId: string;
  workerId: string;
  log: Logger;
  /** Whether the run was cancelled: what the execution still records of it is kept, unfenced. */
  cancelled(): boolean;
  /** A fenced write was refused: resolves true when the run was cancelled, false when another worker has it. */
  refused(): Promise<boolean>;
  /** Whether an event may wait for the next write (not while the worker drains: a step end stops it). */
  mayHold(): boolean;
  /** A step of the agent (a tool result, an answer) is durable: a checkpoint, or where a draining worker stops. */
  stepEnded(): void;
  /** How long the agent's words and a tool's result wait for the next write (HOLD_MS, RESULT_HOLD_MS). */
  holdMs?: { words: number; result: number };
}

/**
 * The transcript as one execution writes it (docs/architecture.md, "Runs survive their worker"): every
 * write fenced by the worker's claim, and one commit per agent step. A tool call (the step under way,
 * which a resume names) is written at once, as is anything else a harness or a stage of the execution
 * says; a tool's result and the agent's words (holdFor) and the execution's own notes wait for the next
 * write — the tool call after them, the start of the agent, the end of its turn (finishExecution) — or
 * their hold time, whichever comes first. Nothing is shown before it is durable: a held event is not
 * written, so not visible, until that commit. Writes keep their order.
 */
export class ExecutionTranscript {
  private readonly opts: ExecutionTranscriptOptions;
  private held: NewRunEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** When the held events are written on their own (epoch ms), while some are held. */
  private due = Number.POSITIVE_INFINITY;
  /** Held events wait for the next write however long it takes (keepForCommit), until it comes. */
  private keep = false;
  /** The writes under way, in order: each one starts after the one before. */
  private writes: Promise<unknown> = Promise.resolve();

  private readonly holdMs: { words: number; result: number };

  constructor(opts: ExecutionTranscriptOptions) {
    this.opts = opts;
    this.holdMs = opts.holdMs ?? { words: HOLD_MS, result: RESULT_HOLD_MS };
  }

  /** Appends an event: at once, or with the next write when it may wait (isHeld). */
  async emit(type: RunEventType, data: Record<string, unknown>): Promise<void> {
    const holdMs = holdFor(type, data, this.holdMs);
    if (holdMs !== undefined && this.opts.mayHold() && !this.opts.cancelled()) {
      this.hold({ type, data }, holdMs);
      return;
    }
    await this.write([...this.take(), { type, data }]);
  }

  /** A note of the execution's own (how its workspace or sandbox stands): written with the next write. */
  note(type: RunEventType, data: Record<string, unknown>): void {
    this.hold({ type, data }, this.holdMs.words);
  }

  /** Writes what is held (before a store call that appends events of its own, and at the end). */
  async flush(): Promise<void> {
    const events = this.take();
    if (events.length > 0) await this.write(events);
    else await this.writes;
  }

  /**
   * For a store call that writes the held events in its own transaction (startAgent, finishExecution):
   * waits for the writes under way, then hands the held events over. `extra` go after them.
   */
  async forCommit(extra: NewRunEvent[] = []): Promise<NewRunEvent[]> {
    const events = [...this.take(), ...extra];
    await this.writes.catch(() => {});
    return events;
  }

  /**
   * What is held waits for the next write however long it takes: the end of a turn after which the run
   * waits for a person, whose last words (a plan) are committed with the wait, so that whoever follows the
   * run sees them with it (a plan shown once, in the question that asks to approve it).
   */
  keepForCommit(): void {
    this.cancelTimer();
    this.keep = true;
  }

  /**
   * Writes `events` a store call could not (it found the run no longer this worker's): kept when the run
   * was cancelled, as every write after a cancel is; nothing when another worker has it.
   */
  async rewrite(events: NewRunEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.write(events).catch((err) => {
      if (!(err instanceof RunMovedError)) throw err;
    });
  }

  /** The events a store call wrote: a step that ended among them is durable now. */
  written(events: readonly NewRunEvent[]): void {
    if (events.some((e) => endsStep(e.type, e.data))) this.opts.stepEnded();
  }

  /** The execution ends: what is held is written (what a lost run's worker writes is refused, quietly). */
  async close(): Promise<void> {
    await this.flush().catch((err) => {
      if (!(err instanceof RunMovedError)) this.opts.log.warn({ err }, "writing the transcript failed");
    });
  }

  private hold(event: NewRunEvent, ms: number): void {
    this.held.push(event);
    if (this.keep) return;
    // Held events are written together, when the first of them is due.
    const due = Date.now() + ms;
    if (due >= this.due) return;
    this.cancelTimer();
    this.due = due;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.due = Number.POSITIVE_INFINITY;
      this.flush().catch((err) => {
        if (!(err instanceof RunMovedError)) this.opts.log.warn({ err }, "writing the transcript failed");
      });
    }, ms);
  }

  private cancelTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.due = Number.POSITIVE_INFINITY;
  }

  private take(): NewRunEvent[] {
    this.cancelTimer();
    this.keep = false;
    const events = this.held;
    this.held = [];
    return events;
  }

  private write(events: NewRunEvent[]): Promise<void> {
    const next = this.writes.catch(() => {}).then(() => this.append(events));
    this.writes = next;
    return next;
  }

  private async append(events: NewRunEvent[]): Promise<void> {
    const { store, runId, workerId } = this.opts;
    if (this.opts.cancelled()) return this.appendUnfenced(events);
    if (!(await store.appendWorkerEvents(runId, workerId, events))) {
      // Refused: cancelled (not yet seen by this execution: what it still records of the cancelled run
      // is kept, such as a push already under way), or held by another worker now.
      if (!(await this.opts.refused())) throw new RunMovedError();
      return this.appendUnfenced(events);
    }
    this.written(events);
  }

  private async appendUnfenced(events: NewRunEvent[]): Promise<void> {
    for (const event of events) await this.opts.store.appendEvent(this.opts.runId, event.type, event.data);
  }
}

/**
 * How long an event may wait for the next write; undefined for one written at once. The agent's words
 * (HOLD_MS): nothing depends on them being durable before the next write, which comes at once (the tool
 * call they announce, the end of the turn). A tool's result (RESULT_HOLD_MS): the agent goes on to its next
 * call or ends its turn, and a result lost with its worker is a step run again on the next (run-resume.ts),
 * as a crash during the step would be. Whoever reads the transcript for them (delivery's summary, the plan)
 * flushes first.
 */
function holdFor(
  type: RunEventType,
  data: Record<string, unknown>,
  holdMs: { words: number; result: number },
): number | undefined {
  if (type === "message" && data.role === "assistant") return holdMs.words;
  if (type === "tool_result") return holdMs.result;
  return undefined;
}

/** The end of an agent's step: a tool's result or an answer. */
function endsStep(type: RunEventType, data: Record<string, unknown>): boolean {
  return type === "tool_result" || (type === "message" && data.role === "assistant");
}

import type { Logger } from "pino";
import type { RemotePolicy } from "../delivery/remote-access.ts";
import type { DeliveryTarget } from "../delivery/repository-checkout.ts";
import type { RunRecord } from "../model/run.ts";
import type { Sandbox } from "../sandbox/sandbox.ts";
import { CheckpointSchedule } from "./checkpoint-schedule.ts";
import { RunCheckpoints, type RunCheckpointsOptions } from "./run-checkpoints.ts";

/**
 * The checkpoints of one execution (docs/architecture.md, "Runs survive their worker"): put back when the
 * run moved here, taken after every agent step and at least every interval once the agent works, the last
 * one before the run is handed on, and removed once the run ended here (a checkpoint only serves a run in
 * progress). One RunCheckpoints per execution: it remembers the hidden ref it last pushed.
 */
export class ExecutionCheckpoints {
  private readonly checkpoints: RunCheckpoints;
  private readonly intervalMs: number;
  private readonly log: Logger;
  private schedule: CheckpointSchedule | undefined;
  /** Whether this execution saved or restored one (then there is one to remove). */
  private held = false;

  constructor(opts: RunCheckpointsOptions & { intervalMs: number }) {
    const { intervalMs, ...options } = opts;
    this.checkpoints = new RunCheckpoints(options);
    this.intervalMs = intervalMs;
    this.log = opts.log;
  }

  /** The checkpoints of this execution, or none when the worker takes none (no interval configured). */
  static open(opts: {
    run: RunRecord;
    workerId: string;
    store: RunCheckpointsOptions["store"];
    workspace: string;
    sandbox: Sandbox;
    log: Logger;
    diskQuota?: RunCheckpointsOptions["diskQuota"];
    checkpointIntervalMs?: number;
    delivery?: { remotes: RemotePolicy };
    target?: DeliveryTarget & { base: string };
    token?: string | undefined;
  }): ExecutionCheckpoints | undefined {
    if (opts.checkpointIntervalMs === undefined) return undefined;
    return new ExecutionCheckpoints({
      store: opts.store,
      workerId: opts.workerId,
      run: opts.run,
      workspace: opts.workspace,
      ...(opts.diskQuota ? { diskQuota: opts.diskQuota } : {}),
      log: opts.log,
      intervalMs: opts.checkpointIntervalMs,
      ...(opts.target && opts.delivery
        ? {
            repository: {
              target: opts.target,
              token: opts.token,
              remotes: opts.delivery.remotes,
              sandbox: opts.sandbox,
            },
          }
        : {}),
    });
  }

  /**
   * Where a run that moved here resumes from (docs/architecture.md, "Runs survive their worker"): its own
   * workspace when this machine still has it, else its latest checkpoint put back. Empty for a run that
   * did not move.
   */
  static async resumeFrom(
    run: RunRecord,
    created: boolean,
    checkpoints: ExecutionCheckpoints | undefined,
  ): Promise<string> {
    if (!run.resuming || !run.agentStarted) return "";
    if (!created) return "in this worker's copy of its workspace";
    return (
      (await checkpoints?.restore()) ??
      "without a checkpoint (this worker takes none): its workspace starts over"
    );
  }

  /** Whether checkpoints are being taken (the agent works). */
  get started(): boolean {
    return this.schedule !== undefined;
  }

  /**
   * For a run that moved here into a new workspace: its latest checkpoint put back. How the transcript says
   * where the run resumed from.
   */
  async restore(): Promise<string> {
    const restored = await this.checkpoints.restore();
    if (restored.restored) {
      this.held = true;
      return `from its checkpoint of ${restored.takenAt}`;
    }
    return restored.reason
      ? `without its checkpoint (${restored.reason}): its workspace starts over`
      : "without a checkpoint (none had been taken): its workspace starts over";
  }

  /** The agent works: a checkpoint after each of its steps, and at least every interval. */
  start(): void {
    this.schedule ??= new CheckpointSchedule((signal) => this.save(signal), this.intervalMs);
  }

  stepEnded(): void {
    this.schedule?.stepEnded();
  }

  /**
   * The last checkpoint before the run waits for a person (whichever worker continues it starts from
   * here), taken before the wait is committed: once it is, the store refuses this worker's writes. The
   * schedule ends with it; `start()` begins another if the execution goes on after all.
   */
  async beforeWait(): Promise<void> {
    const schedule = this.schedule;
    this.schedule = undefined;
    await schedule?.flush();
  }

  /**
   * The execution ended the run, and the store dropped its checkpoint with it: a save under way gives up
   * at its next phase now, not when the execution has closed its sandbox and stops (`stop`). A step's
   * checkpoint that the end of the run overtook otherwise went on to its snapshot and fenced write.
   */
  runEnded(): void {
    this.schedule?.end();
  }

  /** The last checkpoint, with the step that just ended, before the run moves to another worker. */
  async handOver(): Promise<void> {
    await this.schedule?.flush();
  }

  /**
   * No more checkpoints: the run left (`keep`), or ended here (`drop` removes the run's checkpoint;
   * `dropped`: the store dropped its row with the run's end, and only the hidden ref is left to remove).
   */
  async stop(checkpoint: "keep" | "drop" | "dropped"): Promise<void> {
    await this.schedule?.stop();
    if (checkpoint !== "keep" && this.held)
      await this.checkpoints
        .discard({ stored: checkpoint === "drop" })
        .catch((err) => this.log.warn({ err }, "removing the checkpoint failed"));
  }

  private async save(signal: AbortSignal): Promise<void> {
    try {
      const saved = await this.checkpoints.save(signal);
      if (saved.saved) this.held = true;
      else if (!signal.aborted) this.log.info({ reason: saved.reason }, "no checkpoint taken");
    } catch (err) {
      this.log.warn({ err }, "taking a checkpoint failed");
    }
  }
}

import { hostname } from "node:os";
import type { Logger } from "pino";
import { v7 as uuidv7 } from "uuid";
import type { HarnessRegistry } from "../harnesses/harness.ts";
import type { RunRecord } from "../model/run.ts";
import { DEFAULT_BLOCKED_TIMEOUT_S, unansweredStatus } from "../model/run-gates.ts";
import { HANDED_BACK_MESSAGE } from "../model/run-resume.ts";
import type { NextClaim, Store } from "../store/store.ts";
import type { ExecutionDeps } from "./execution-deps.ts";
import { RunExecution } from "./run-execution.ts";

export interface ExecutorOptions {
  store: Store;
  harnesses: HarnessRegistry;
  dataDir: string;
  slots: number;
  leaseMs: number;
  pollIntervalMs: number;
  log: Logger;
  /** The sandbox every run's commands go through. */
  sandboxes: ExecutionDeps["sandboxes"];
  /** Configured environments by id (dispatch.config.yaml). */
  environments?: ExecutionDeps["environments"];
  /** Resolves skills left for execution time (remote repos). */
  skills?: ExecutionDeps["skills"];
  /** The most a run's workspace may hold on disk (DISPATCH_RUN_DISK_QUOTA_MB). */
  diskQuota?: ExecutionDeps["diskQuota"];
  /** Delivery of runs that name a repository (GITHUB_SERVER_URL, the GitHub integration's pull requests). */
  delivery?: ExecutionDeps["delivery"];
  /** Model prices (run costs), DISPATCH_MAX_COST_USD (a run's default cost limit) and the budgets. */
  cost?: Pick<ExecutionDeps, "prices" | "defaultMaxCostUsd" | "budgets">;
  /** DISPATCH_CHECKPOINT_INTERVAL_S (ms); no checkpoints are taken when absent. */
  checkpointIntervalMs?: number;
  /** DISPATCH_MAX_RESUMES: resumes of an execution after lost workers before it ends ERROR (default 3). */
  maxResumes?: number;
  /** DISPATCH_BLOCKED_TIMEOUT_S: a run waiting for a person longer than this is cancelled. */
  blockedTimeoutS?: number;
}

/**
 * Claims QUEUED runs, and runs waiting to be resumed, into a fixed number of slots. It wakes at once when
 * the store signals a queued run or a slot frees (a run's end is committed, with the claim of the next run
 * for its slot in the same write; a freed slot claims nothing once the queue was found empty, until the
 * next signal), with a polling backstop for runs queued elsewhere; the same tick recovers runs whose lease
 * expired (any node may do it). Each claim holds the run under its own id (the worker's and a claim
 * number): the id every write of the execution is fenced by.
 */
export class Executor {
  readonly workerId = `${hostname()}:${process.pid}:${uuidv7().slice(-8)}`;
  private readonly opts: ExecutorOptions;
  private readonly log: Logger;
  private readonly active = new Set<RunExecution>();
  /**
   * The executions holding a slot. A run's slot is free once its end is committed (RunExecution.slotFree):
   * the next run is claimed while the last one's sandbox is still being released, not after.
   */
  private readonly occupying = new Set<RunExecution>();
  /**
   * Each run's latest execution in this process, until it has ended. A run cancelled and followed up at
   * once is claimed again while its last execution is still stopping: the next one starts only after it,
   * since both would use the same workspace and the same cgroup.
   */
  private readonly latest = new Map<string, Promise<void>>();
  /** Claimed runs waiting for their previous execution to end: they hold a slot too. */
  private waiting = 0;
  private running = false;
  private filling = false;
  private fillAgain = false;
  /** `run_queued` signals heard so far: one heard while a claim found nothing means the queue is not empty. */
  private queuedSignals = 0;
  /** The last claims found nothing and no run was signalled since: a freed slot claims nothing until one is. */
  private drained = false;
  private timer: NodeJS.Timeout | undefined;
  private claims = 0;

  constructor(opts: ExecutorOptions) {
    this.opts = opts;
    this.log = opts.log.child({ component: "executor" });
  }

  get activeRuns(): number {
    return this.occupying.size + this.waiting;
  }

  async start(): Promise<void> {
    this.running = true;
    await this.recover();
    this.opts.store.signals.on("run_queued", this.onQueued);
    this.timer = setInterval(() => {
      // The backstop for a run made claimable without a signal here (a notification lost on reconnect).
      this.drained = false;
      void this.recover().then(() => this.fill());
    }, this.opts.pollIntervalMs);
    void this.fill();
  }

  /**
   * Stops claiming and drains (docs/architecture.md, "Runs survive their worker"): each running agent may
   * end its current step (up to `graceMs`), then its run is checkpointed and handed back, still INPROGRESS,
   * for another worker (or this one after a restart) to resume.
   */
  async stop(graceMs: number): Promise<void> {
    this.running = false;
    clearInterval(this.timer);
    this.opts.store.signals.off("run_queued", this.onQueued);
    for (const execution of this.active) execution.drain(graceMs);
    await Promise.all([...this.latest.values()]);
    // Closed sandboxes' files are removed after their runs' slots were freed: gone before Dispatch is.
    await this.opts.sandboxes.released();
  }

  private readonly onQueued = () => {
    this.queuedSignals += 1;
    this.drained = false;
    void this.fill();
  };

  private async recover(): Promise<void> {
    try {
      const changed = await this.opts.store.recoverExpiredLeases(this.opts.maxResumes);
      for (const run of changed) {
        this.log.warn(
          { runId: run.id, state: run.state, resumes: run.resumes ?? 0 },
          "recovered a run whose worker lease expired",
        );
      }
      const timeoutS = this.opts.blockedTimeoutS ?? DEFAULT_BLOCKED_TIMEOUT_S;
      const unanswered = await this.opts.store.cancelUnansweredRuns(
        new Date(Date.now() - timeoutS * 1000).toISOString(),
        (run) => unansweredStatus(run.statusMessage, timeoutS),
      );
      for (const run of unanswered)
        this.log.info({ runId: run.id }, "cancelled a run nobody answered in time");
    } catch (err) {
      this.log.error({ err }, "lease recovery failed");
    }
  }

  private async fill(): Promise<void> {
    if (this.filling) {
      this.fillAgain = true;
      return;
    }
    this.filling = true;
    try {
      do {
        this.fillAgain = false;
        while (this.running && !this.drained && this.activeRuns < this.opts.slots) {
          // One claim per free slot, all at once: on SQLite they share one group commit (one sync) instead
          // of a commit each in turn; on PostgreSQL SKIP LOCKED gives each its own run.
          const free = this.opts.slots - this.activeRuns;
          const signalsBefore = this.queuedSignals;
          const claims = await Promise.allSettled(
            Array.from({ length: free }, () =>
              this.opts.store.claimNextRun(`${this.workerId}/${++this.claims}`, this.opts.leaseMs),
            ),
          );
          let claimed = 0;
          for (const claim of claims) {
            if (claim.status === "fulfilled" && claim.value) {
              this.launch(claim.value);
              claimed += 1;
            }
          }
          const failed = claims.find((c) => c.status === "rejected");
          if (failed) throw failed.reason;
          if (claimed < free) {
            // Nothing left to claim, and no run was signalled meanwhile: the slots freed from now on
            // wait for the next signal (or poll) instead of each asking the store again.
            if (this.queuedSignals === signalsBefore) this.drained = true;
            break;
          }
        }
      } while (this.fillAgain && this.running);
    } catch (err) {
      this.log.error({ err }, "claiming runs failed; retrying at the next tick");
    } finally {
      this.filling = false;
    }
  }

  /**
   * The claim a run's end makes for the slot it frees, in the end's own write (one round trip less per run
   * while runs are waiting): none once the queue was found empty (as fill(), until a run is signalled) or
   * while stopping. Not finding one does not mark the queue empty: the claim fill() makes next does.
   */
  private claimWithEnd(): NextClaim | undefined {
    if (!this.running || this.drained) return undefined;
    return { workerId: `${this.workerId}/${++this.claims}`, leaseMs: this.opts.leaseMs };
  }

  /** Starts the claimed run's execution once the run's previous one in this process (if any) has ended. */
  private launch(run: RunRecord): void {
    const previous = this.latest.get(run.id);
    if (previous) this.waiting += 1;
    const finished = (async () => {
      if (previous) {
        await previous;
        this.waiting -= 1;
      }
      // Claimed as the worker began to stop: another worker resumes it.
      if (!this.running) {
        await this.opts.store.handBackRun(run.id, run.workerId!, HANDED_BACK_MESSAGE);
        return;
      }
      const execution = new RunExecution(run, {
        store: this.opts.store,
        harnesses: this.opts.harnesses,
        dataDir: this.opts.dataDir,
        workerId: run.workerId!,
        leaseMs: this.opts.leaseMs,
        heartbeatMs: Math.min(this.opts.pollIntervalMs, Math.floor(this.opts.leaseMs / 3)),
        log: this.opts.log,
        sandboxes: this.opts.sandboxes,
        ...(this.opts.environments ? { environments: this.opts.environments } : {}),
        ...(this.opts.skills ? { skills: this.opts.skills } : {}),
        ...(this.opts.diskQuota ? { diskQuota: this.opts.diskQuota } : {}),
        ...(this.opts.delivery ? { delivery: this.opts.delivery } : {}),
        ...this.opts.cost,
        ...(this.opts.checkpointIntervalMs !== undefined
          ? { checkpointIntervalMs: this.opts.checkpointIntervalMs }
          : {}),
        claimWithEnd: () => this.claimWithEnd(),
      });
      this.active.add(execution);
      this.occupying.add(execution);
      void Promise.race([execution.slotFree, execution.done]).then((next) => {
        this.occupying.delete(execution);
        // The run its end claimed takes the slot at once; fill() claims for any other slot free.
        if (next) this.launch(next);
        void this.fill();
      });
      await execution.done;
      this.active.delete(execution);
    })().catch((err) => this.log.error({ err, runId: run.id }, "execution could not start"));
    this.latest.set(run.id, finished);
    void finished.then(() => {
      if (this.latest.get(run.id) === finished) this.latest.delete(run.id);
      void this.fill();
    });
  }
}

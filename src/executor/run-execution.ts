import type { Logger } from "pino";
import { NO_BUDGETS } from "../config-budgets.ts";
import type { HarnessContext, HarnessOutcome } from "../harnesses/harness.ts";
import type { AttachmentInfo } from "../model/attachment.ts";
import type { RequestUsage, RunEventType, RunRecord, StatusMessage } from "../model/run.ts";
import { executionMode } from "../model/run-mode.ts";
import { HANDED_BACK_MESSAGE } from "../model/run-resume.ts";
import type { Sandbox } from "../sandbox/sandbox.ts";
import type { NewRunEvent, RunPatch } from "../store/store.ts";
import { phase } from "../telemetry/spans.ts";
import { DiskQuotaWatcher, diskQuotaExceeded } from "../workspace/disk-quota.ts";
import { prepareEnvironment } from "../workspace/environments.ts";
import { prepareWorkspace } from "../workspace/workspace.ts";
import { BudgetGate } from "./budget-gate.ts";
import { ExecutionCheckpoints } from "./execution-checkpoints.ts";
import { ExecutionDelivery } from "./execution-delivery.ts";
import type { ExecutionDeps } from "./execution-deps.ts";
import { outcomeTransition } from "./execution-outcome.ts";
import { traceExecution } from "./execution-trace.ts";
import { ExecutionTranscript, RunMovedError } from "./execution-transcript.ts";
import { recordPlan } from "./plan-approval.ts";
import type { RunCost } from "./run-cost.ts";
import { readAttachments, readTranscript } from "./run-history.ts";
import { inputBeforeMove, RESUME_NOTE, resumedEvent, stepsInFlight } from "./run-resume.ts";
import { withSkill } from "./run-skill.ts";
import { DEFAULT_IDLE_AFTER_INTERRUPT_MS, TurnControl } from "./turn-control.ts";

export type StopReason = "cancelled" | "lease_lost" | "shutdown" | "disk_quota" | "cost_limit";

/**
 * One claimed run, from workspace to recorded outcome: renews the lease, hands follow-ups to the
 * harness, stops it when the run is cancelled or the lease is lost, and ends the execution with a
 * compare-and-set so that a cancel written first always wins.
 */
export class RunExecution {
  readonly run: RunRecord;
  readonly done: Promise<void>;
  /**
   * Settled once this execution has ended its run in the store (finished, or waiting for a person): the
   * run no longer needs its slot while its sandbox is released. It settles with the next run when the end
   * claimed one for the slot (deps.claimWithEnd). An execution that ends otherwise frees it with `done`.
   */
  readonly slotFree: Promise<RunRecord | undefined>;
  private freeSlot!: (next: RunRecord | undefined) => void;
  private readonly controller = new AbortController();
  private readonly deps: ExecutionDeps;
  private readonly log: Logger;
  private followupHint = true;
  /** The attachments' list read with the start, for the harness's first look until a follow-up is taken. */
  private attachmentsListed: AttachmentInfo[] | undefined;
  private readonly delivery: ExecutionDelivery;
  /** Set by drain(): the run is handed back at the end of the agent's current step. */
  private draining = false;
  private drainTimer: NodeJS.Timeout | undefined;
  private checkpoints: ExecutionCheckpoints | undefined;
  /**
   * Set as this execution ends the run (the state it writes may not land: a cancel written first wins):
   * from then on the run leaving INPROGRESS is its own doing, not a sign that another worker has it.
   */
  private ended = false;
  /** Set when finishExecution ended the run (and dropped its stored checkpoint in the same step). */
  private finished = false;
  /** Set as this execution leaves the run BLOCKED, waiting for a person: its checkpoint stays. */
  private blocked = false;
  /** Set when the workspace went over its disk quota: how the run ends once the harness has stopped. */
  private overQuota: RunPatch["statusMessage"];
  /** The agent's last message in this execution: in plan mode, its plan (committed with the wait). */
  private lastWords = "";
  /** Set when the run went over its cost limit: how it ends once the harness has stopped. */
  private overBudget: RunPatch["statusMessage"];
  /** The run's cost (its earlier executions' and this one's model calls); set once the agent may start. */
  private cost: RunCost | undefined;
  /** The run's budget: its limits, spend, and the answer to an earlier pause; set with the cost. */
  private budget: BudgetGate | undefined;
  /** The agent's turns: each one's signal, stopped alone by an interrupt. */
  private readonly turns: TurnControl;
  /** What the execution appends to the transcript: fenced, one commit per agent step. */
  private readonly transcript: ExecutionTranscript;

  constructor(run: RunRecord, deps: ExecutionDeps) {
    this.run = run;
    this.deps = deps;
    this.log = deps.log.child({ component: "executor", runId: run.id });
    this.turns = new TurnControl(this.controller.signal, run.interrupts ?? 0);
    this.transcript = new ExecutionTranscript({
      store: deps.store,
      runId: run.id,
      workerId: deps.workerId,
      log: this.log,
      cancelled: () => this.stopReason === "cancelled",
      refused: async () => {
        await this.checkOwnership();
        if (this.stopReason === "cancelled") return true;
        this.lost();
        return false;
      },
      mayHold: () => !this.draining,
      stepEnded: () => {
        if (this.draining) this.stop("shutdown");
        else this.checkpoints?.stepEnded();
      },
    });
    this.delivery = new ExecutionDelivery({
      run,
      deps,
      log: this.log,
      emit: (type, data) => this.emit(type, data),
      failBeforeStart: (message, errorCode) => this.failBeforeStart(message, errorCode),
    });
    this.slotFree = new Promise((resolve) => {
      this.freeSlot = resolve;
    });
    this.done = traceExecution(run, deps.store, () => this.execute()).catch((err) => {
      this.log.error({ err }, "execution crashed");
    });
  }

  stop(reason: StopReason): void {
    clearTimeout(this.drainTimer);
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  /**
   * The worker is shutting down: the agent's current step may end (up to `graceMs`), then the execution
   * stops, checkpoints the run and hands it back for another worker to resume. An agent not yet started
   * stops at once.
   */
  drain(graceMs: number): void {
    if (this.draining) return;
    this.draining = true;
    if (!this.checkpoints?.started) {
      this.stop("shutdown"); // the agent has not started: nothing to let finish
      return;
    }
    this.drainTimer = setTimeout(() => this.stop("shutdown"), graceMs);
  }

  get stopReason(): StopReason | undefined {
    return this.controller.signal.aborted ? (this.controller.signal.reason as StopReason) : undefined;
  }

  private async execute(): Promise<void> {
    const { store, workerId } = this.deps;
    const run = this.run;
    const signal = this.controller.signal;
    // Checked once the write that signalled has returned here: this execution's own end is not re-read.
    const onChange = (id: string) => {
      if (id === run.id) setImmediate(() => this.checkOwnership().catch((e) => this.backgroundFailed(e)));
    };
    const onFollowup = (id: string) => {
      if (id !== run.id) return;
      this.followupHint = true;
      this.turns.nudge();
    };
    store.signals.on("run_changed", onChange);
    store.signals.on("followup_added", onFollowup);
    const heartbeat = setInterval(
      () => this.heartbeat().catch((err) => this.backgroundFailed(err)),
      this.deps.heartbeatMs,
    );
    let sandbox: Sandbox | undefined;
    let quotaWatcher: DiskQuotaWatcher | undefined;
    const preparing = phase("prepare workspace");
    try {
      const { path: workspace, created } = await prepareWorkspace(this.deps.dataDir, run.id);
      quotaWatcher = this.watchDiskQuota(workspace);
      if (created && run.execution > 1) {
        this.transcript.note("log", {
          level: "info",
          phase: "workspace",
          message:
            "The earlier workspace of this run was cleaned up (workspaces of finished runs are removed after " +
            "DISPATCH_WORKSPACE_RETENTION_HOURS); this execution starts in an empty workspace",
        });
      }
      const type = run.agentConfig.harness?.type ?? "scripted";
      const harness = this.deps.harnesses.get(type);
      if (!harness) {
        const available = this.deps.harnesses.types().join(", ");
        await this.failBeforeStart(
          `harness "${type}" is not available on this server (available: ${available}); create the run with config.harness.type set to one of them`,
          "harness_unavailable",
        );
        return;
      }
      const environmentId = run.agentConfig.environment_id;
      const environment = environmentId ? this.deps.environments?.[environmentId] : undefined;
      if (environmentId && !environment) {
        await this.failBeforeStart(
          `environment "${environmentId}" is not configured on this server (any more); configure it in dispatch.config.yaml or create the run without config.environment_id`,
          "environment_unavailable",
        );
        return;
      }
      sandbox = await this.deps.sandboxes.create({
        workspace,
        runId: run.id,
        agentNetwork: environment?.agent_network ?? false,
      });
      if (this.deps.sandboxes.warning) {
        this.transcript.note("log", {
          level: "warn",
          phase: "sandbox",
          message: this.deps.sandboxes.warning,
        });
      }
      const repository = await this.delivery.checkout(workspace, created, signal);
      if (!repository) return;
      this.checkpoints = ExecutionCheckpoints.open({
        ...this.deps,
        run,
        workspace,
        sandbox,
        log: this.log,
        ...(repository.target ? { target: repository.target, token: this.delivery.token } : {}),
      });
      const restored = await ExecutionCheckpoints.resumeFrom(run, created, this.checkpoints);
      // A cleaned-up workspace is prepared again, as on the run's first execution.
      if (environmentId && environment && (run.execution === 1 || created)) {
        const prepared = await prepareEnvironment({
          id: environmentId,
          environment,
          workspace: sandbox.workspace,
          sandbox,
          // The repository checked out above is its creator's: no setup command runs next to the host's
          // network in a workspace that holds it.
          setupNetwork: repository.target ? "public" : "host",
          signal,
          emit: (type, data) => this.emit(type, data),
        });
        if (!prepared.ok) {
          if (!prepared.aborted) await this.failBeforeStart(prepared.message, prepared.errorCode);
          return;
        }
      }
      const agentRun = await withSkill(
        repository.target
          ? { ...run, agentConfig: { ...run.agentConfig, base_branch: repository.target.base } }
          : run,
        {
          store,
          workerId,
          ...(this.deps.skills ? { skills: this.deps.skills } : {}),
          signal,
          emit: (type, data) => this.emit(type, data),
          fail: (message, errorCode) => this.failBeforeStart(message, errorCode),
        },
      );
      if (!agentRun) return;
      preparing.end();
      this.budget = await BudgetGate.open({
        run,
        store,
        workerId,
        prices: this.deps.prices,
        rules: { budgets: this.deps.budgets ?? NO_BUDGETS, defaultMaxCostUsd: this.deps.defaultMaxCostUsd },
        log: this.log,
        emit: (type, data) => this.emit(type, data),
        stopTurn: () => this.turns.stopTurn("budget"),
        fail: (status) => {
          this.overBudget = status;
          this.stop("cost_limit");
        },
      });
      this.cost = this.budget.cost;
      // A run that moved here continues its execution: the agent had started on the worker before. One
      // that was answered (it waited for a person) continues it with the answer.
      const moved = (run.resuming === "shutdown" || run.resuming === "worker_lost") && run.agentStarted;
      const answered = run.resuming === "answered";
      const prompt = run.execution === 1 && run.prompt && !answered ? [run.prompt] : [];
      let resume: HarnessContext["resume"];
      let opening: NewRunEvent[] = [];
      if (moved && run.resuming) {
        const inFlight = stepsInFlight(await readTranscript(store, run.id));
        opening = [{ type: "log", data: resumedEvent(run.resuming, restored, inFlight) }];
        resume = { reason: run.resuming, note: RESUME_NOTE };
      } else if (prompt.length) opening = [{ type: "message", data: { role: "user", text: run.prompt } }];
      // startAgent hands over every follow-up committed before it: the harness's first look finds none
      // waiting unless one is signalled after this line.
      this.followupHint = false;
      // The start also answers the run's attachments, read after the follow-ups it took (theirs are among
      // them): the harness's first look need not wait for a list of its own.
      const started = await store.startAgent(run.id, workerId, await this.transcript.forCommit(opening));
      if (!started) return;
      const waiting = started.followups;
      this.attachmentsListed = started.attachments;
      const given = moved
        ? await inputBeforeMove(store, run)
        : { input: [...prompt, ...waiting.map((f) => f.message)], modes: waiting.map((f) => f.mode) };
      const mode = answered
        ? executionMode(Number.POSITIVE_INFINITY, undefined, given.modes)
        : executionMode(run.execution, run.mode, given.modes);
      let input = await this.budget.input(given.input);
      this.checkpoints?.start();

      for (;;) {
        let outcome: HarnessOutcome;
        try {
          outcome =
            this.budget.beforeTurn() ??
            (await harness.run({
              run: agentRun,
              workspace,
              sandbox,
              input,
              ...(resume ? { resume } : {}),
              mode,
              signal: this.turns.begin(),
              emit: (type, data) => this.emit(type, data),
              takeFollowups: () => this.takeFollowups(),
              transcript: async () => {
                await this.transcript.flush();
                return readTranscript(this.deps.store, this.run.id);
              },
              attachments: () => {
                // Later looks read again: a follow-up taken since may have brought attachments.
                const list = this.attachmentsListed;
                this.attachmentsListed = undefined;
                return readAttachments(this.deps.store, this.run, list);
              },
              ...(this.cost ? { cost: this.cost } : {}),
              log: this.deps.log.child({ runId: run.id }),
            }));
        } catch (err) {
          if (signal.aborted) return;
          if (err instanceof RunMovedError) return;
          this.log.error({ err }, "harness failed");
          await this.finish(undefined, err);
          return;
        }
        outcome = await this.budget.afterTurn(outcome); // stopped at its budget: it waits for more
        resume = undefined; // a later turn (a follow-up) is not a move
        // What a command wrote since the last measurement counts too: no run finishes over its quota.
        if (!signal.aborted) await quotaWatcher?.checkNow();
        if (signal.aborted) {
          // Cancelled or lost (the run's state is someone else's to set) or over the disk quota (set below,
          // once the sandbox is released), but the tokens were spent.
          if (outcome.usage) await store.recordUsage(run.id, this.withCost(outcome.usage), workerId);
          // A cancelled run's changes are kept as a patch; nothing is pushed after a cancel.
          if (repository.target && this.stopReason === "cancelled") {
            await this.transcript.flush();
            await this.delivery
              .deliver(repository.target, workspace, sandbox, outcome, input, signal)
              .catch((err) => this.log.warn({ err }, "keeping the patch of a cancelled run failed"));
          }
          return;
        }
        if (this.turns.interrupted) {
          if (outcome.usage) await store.recordUsage(run.id, this.withCost(outcome.usage), workerId);
          const next = await this.awaitFollowupAfterInterrupt();
          if (signal.aborted) return;
          if (next.length) {
            input = next;
            continue;
          }
          outcome = {
            status: "succeeded",
            message: "Interrupted; no follow-up came before the run's idle timeout",
            ...(outcome.usage ? { usage: outcome.usage } : {}),
          };
        }
        // The agent waits for an answer, or its plan for approval: the run waits (model/run-gates.ts).
        const asked = outcome.status === "succeeded" ? outcome.waitFor : undefined;
        // A plan changes nothing, so nothing is delivered (the repository stays as it was); a question is
        // not the end of the work.
        if (repository.target && mode !== "plan" && !asked) {
          await this.transcript.flush(); // delivery's summary is the agent's last words: durable first
          const delivered = await this.delivery.deliver(
            repository.target,
            workspace,
            sandbox,
            outcome,
            input,
            signal,
          );
          if (signal.aborted) return;
          outcome = delivered;
        }
        if (asked || mode === "plan") this.transcript.keepForCommit(); // its last words go with the wait
        const waitFor = asked
          ? { message: asked.message, error_code: asked.reason, retryable: false }
          : mode === "plan" && outcome.status === "succeeded"
            ? await recordPlan(store, run, this.lastWords)
            : undefined;
        // Waiting, it is resumed from its last checkpoint: taken while this worker still holds the run.
        if (waitFor) await this.checkpoints?.beforeWait();
        const pending = await this.finish(outcome, undefined, waitFor);
        if (pending.length === 0) return;
        // Follow-ups arrived as the agent finished: the same execution continues with them.
        this.checkpoints?.start();
        this.attachmentsListed = undefined;
        input = pending;
      }
    } finally {
      preparing.end();
      clearTimeout(this.drainTimer);
      // The agent's last words, when the turn ended without finishExecution (cancelled, stopped, lost).
      await this.transcript.close();
      if (this.stopReason === "shutdown") {
        // The last checkpoint, with the step that just ended, then the run moves on: INPROGRESS throughout.
        await this.checkpoints?.handOver();
        await store.handBackRun(run.id, workerId, HANDED_BACK_MESSAGE);
      }
      quotaWatcher?.stop();
      await sandbox?.close?.().catch((err) => this.log.warn({ err }, "releasing the sandbox failed"));
      clearInterval(heartbeat);
      store.signals.off("run_changed", onChange);
      store.signals.off("followup_added", onFollowup);
      // Only now, with the harness and its processes gone, does the run end: FAILED, like a time limit.
      if (this.overQuota) {
        await store.transition(run.id, "fail", { statusMessage: this.overQuota }, { workerId });
      } else if (this.overBudget) {
        await store.transition(run.id, "fail", { statusMessage: this.overBudget }, { workerId });
      }
      const endedHere = this.ended || this.overQuota || this.overBudget || this.stopReason === "cancelled";
      // finishExecution dropped the stored checkpoint with the run's end; any other end leaves it here to drop.
      if (this.stopReason !== "shutdown" && !this.blocked)
        await this.checkpoints?.stop(endedHere ? (this.finished ? "dropped" : "drop") : "keep");
    }
  }

  /** Stops the execution when the run holds more on disk than its quota allows (runDiskPaths). */
  private watchDiskQuota(workspace: string): DiskQuotaWatcher | undefined {
    const quota = this.deps.diskQuota;
    if (!quota || quota.limitBytes <= 0) return undefined;
    return new DiskQuotaWatcher({
      workspace,
      quota,
      log: this.log,
      onExceeded: (usedBytes) => {
        if (this.controller.signal.aborted) return;
        this.log.warn(
          { usedBytes, limitBytes: quota.limitBytes },
          "workspace over its disk quota; stopping the run",
        );
        this.overQuota = diskQuotaExceeded(usedBytes, quota.limitBytes);
        this.stop("disk_quota");
      },
    });
  }

  /** Usage as recorded on the run: with its inference_cost when the run's cost is known. */
  private withCost(usage: RequestUsage): RequestUsage {
    return this.cost ? this.cost.withCost(usage) : usage;
  }

  /** FAILED before the agent started (environment or skill problems); a cancel written first wins. */
  private async failBeforeStart(message: string, errorCode: string): Promise<void> {
    this.ended = true;
    await this.transcript.flush();
    await this.deps.store.transition(
      this.run.id,
      "fail",
      { statusMessage: { message, error_code: errorCode, retryable: false } },
      { workerId: this.deps.workerId },
    );
  }

  /** Appends to the transcript (execution-transcript.ts): fenced by this worker's claim on the run. */
  private emit(type: RunEventType, data: Record<string, unknown>): Promise<void> {
    if (type === "message" && data.role === "assistant") this.lastWords = String(data.text ?? "");
    return this.transcript.emit(type, data);
  }

  private async takeFollowups(): Promise<string[]> {
    if (!this.followupHint) return [];
    this.followupHint = false;
    const taken = await this.deps.store.takePendingFollowups(
      this.run.id,
      this.run.execution,
      this.deps.workerId,
    );
    if (taken.length > 0) this.attachmentsListed = undefined;
    return taken.map((f) => f.message);
  }

  /**
   * Records the outcome, or that the run waits for a person (`waitFor`), unless follow-ups are waiting;
   * returns those follow-ups' messages.
   */
  private async finish(
    outcome: HarnessOutcome | undefined,
    fault?: unknown,
    waitFor?: StatusMessage,
  ): Promise<string[]> {
    const { trigger, patch } = outcomeTransition(outcome, fault, waitFor);
    if (outcome?.usage) patch.requestUsage = this.withCost(outcome.usage);
    // The turn's last words go with its end: one commit.
    const events = await this.transcript.forCommit();
    const { store, workerId } = this.deps;
    const result = await store.finishExecution(this.run.id, workerId, trigger, patch, events, {
      next: this.deps.claimWithEnd?.(),
      held: this.run,
    });
    if (result.run) this.freeSlot(result.next);
    if (result.run?.state === "BLOCKED") this.blocked = true;
    else if (result.run) {
      this.ended = this.finished = true;
      this.checkpoints?.runEnded();
    } else if (result.pending.length > 0)
      this.transcript.written(events); // the agent goes on: a checkpoint
    // Refused (cancelled, not yet seen here, or lost): the words are kept as any write after a cancel is.
    else await this.transcript.rewrite(events);
    return result.pending.map((f) => f.message);
  }

  /** After an interrupted turn: the run stays INPROGRESS, its sandbox up, until a follow-up or its idle timeout. */
  private async awaitFollowupAfterInterrupt(): Promise<string[]> {
    const minutes = this.run.agentConfig.idle_timeout_minutes;
    const idleMs = minutes !== undefined ? minutes * 60_000 : DEFAULT_IDLE_AFTER_INTERRUPT_MS;
    await this.emit("log", {
      level: "info",
      phase: "interrupt",
      message: `The agent's turn was stopped; the run waits up to ${Math.round(idleMs / 60_000)} minutes for a follow-up`,
    });
    return this.turns.waitForFollowups(() => this.takeFollowups(), idleMs);
  }

  /** A heartbeat or ownership check failed (the store is unreachable): the next tick tries again. */
  private backgroundFailed(err: unknown): void {
    this.log.warn({ err }, "lease heartbeat failed; retrying at the next tick");
  }

  private async heartbeat(): Promise<void> {
    this.followupHint = true;
    const owned = await this.deps.store.renewLease(this.run.id, this.deps.workerId, this.deps.leaseMs);
    if (!owned) await this.checkOwnership();
  }

  private async checkOwnership(): Promise<void> {
    if (this.controller.signal.aborted || this.ended || this.blocked) return;
    const current = await this.deps.store.getRun(this.run.teamId, this.run.id);
    if (current?.state === "INPROGRESS" && current.workerId === this.deps.workerId) {
      this.turns.observe(current.interrupts);
      return;
    }
    if (!current) return;
    if (current.state === "CANCELLED") this.stop("cancelled");
    else this.lost();
  }

  /** Another worker holds the run now, or it ended without this one: nothing more is written to it. */
  private lost(): void {
    if (this.controller.signal.aborted) return;
    this.log.warn("this worker no longer holds the run (its lease ran out); its execution stops");
    this.stop("lease_lost");
  }
}

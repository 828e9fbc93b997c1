import type { Logger } from "pino";
import type { EnvironmentSettings } from "../config-file.ts";
import type { RunEvent, RunRecord } from "../model/run.ts";
import type { RunPatch, Store } from "../store/store.ts";
import { type DiskQuota, DiskQuotaWatcher, diskQuotaExceeded } from "./disk-quota.ts";
import { prepareEnvironment } from "./environments.ts";
import type { HarnessOutcome, HarnessRegistry } from "./harness.ts";
import { PlainSandbox } from "./plain-sandbox.ts";
import type { Sandbox } from "./sandbox.ts";
import type { SandboxProvider } from "./sandbox-provider.ts";
import { joinBasePrompt, type SkillResolver } from "./skills.ts";
import { prepareWorkspace } from "./workspace.ts";

export interface ExecutionDeps {
  store: Store;
  harnesses: HarnessRegistry;
  dataDir: string;
  workerId: string;
  leaseMs: number;
  /** How often the lease is renewed and ownership re-checked (the backstop for missed signals). */
  heartbeatMs: number;
  /** The service's logger: the execution logs as the executor, the harness as itself. */
  log: Logger;
  /** Where the run's commands execute (bubblewrap or a plain subprocess); plain when absent. */
  sandboxes?: SandboxProvider;
  /** Configured environments (dispatch.config.yaml `environments`), by id. */
  environments?: Record<string, EnvironmentSettings>;
  /** Resolves skills that could not be resolved when the run was created (remote repos). */
  skills?: SkillResolver;
  /** The most a run's workspace may hold on disk; none when absent or 0. */
  diskQuota?: DiskQuota;
}

export type StopReason = "cancelled" | "lease_lost" | "shutdown" | "disk_quota";

/**
 * One claimed run, from workspace to recorded outcome: renews the lease, hands follow-ups to the
 * harness, stops it when the run is cancelled or the lease is lost, and ends the execution with a
 * compare-and-set so that a cancel written first always wins.
 */
export class RunExecution {
  readonly run: RunRecord;
  readonly done: Promise<void>;
  private readonly controller = new AbortController();
  private readonly deps: ExecutionDeps;
  private readonly log: Logger;
  private followupHint = true;
  /** Set when the workspace went over its disk quota: how the run ends once the harness has stopped. */
  private overQuota: RunPatch["statusMessage"];

  constructor(run: RunRecord, deps: ExecutionDeps) {
    this.run = run;
    this.deps = deps;
    this.log = deps.log.child({ component: "executor", runId: run.id });
    this.done = this.execute().catch((err) => {
      this.log.error({ err }, "execution crashed");
    });
  }

  stop(reason: StopReason): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  get stopReason(): StopReason | undefined {
    return this.controller.signal.aborted ? (this.controller.signal.reason as StopReason) : undefined;
  }

  private async execute(): Promise<void> {
    const { store, workerId } = this.deps;
    const run = this.run;
    const signal = this.controller.signal;

    const onChange = (id: string) => {
      if (id === run.id) this.checkOwnership().catch((err) => this.backgroundFailed(err));
    };
    const onFollowup = (id: string) => {
      if (id === run.id) this.followupHint = true;
    };
    store.signals.on("run_changed", onChange);
    store.signals.on("followup_added", onFollowup);
    const heartbeat = setInterval(
      () => this.heartbeat().catch((err) => this.backgroundFailed(err)),
      this.deps.heartbeatMs,
    );
    let sandbox: Sandbox | undefined;
    let quotaWatcher: DiskQuotaWatcher | undefined;
    try {
      const { path: workspace, created } = await prepareWorkspace(this.deps.dataDir, run.id);
      quotaWatcher = this.watchDiskQuota(workspace);
      if (created && run.execution > 1) {
        await this.emit("log", {
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
        await store.transition(
          run.id,
          "fail",
          {
            statusMessage: {
              message: `harness "${type}" is not available on this server (available: ${available}); create the run with config.harness.type set to one of them`,
              error_code: "harness_unavailable",
              retryable: false,
            },
          },
          { workerId },
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
      sandbox = this.deps.sandboxes
        ? await this.deps.sandboxes.create({
            workspace,
            runId: run.id,
            agentNetwork: environment?.agent_network ?? false,
          })
        : new PlainSandbox(workspace, run.id);
      if (this.deps.sandboxes?.warning) {
        await this.emit("log", { level: "warn", phase: "sandbox", message: this.deps.sandboxes.warning });
      }
      // A cleaned-up workspace is prepared again, as on the run's first execution.
      if (environmentId && environment && (run.execution === 1 || created)) {
        const prepared = await prepareEnvironment({
          id: environmentId,
          environment,
          workspace: sandbox.workspace,
          sandbox,
          signal,
          emit: (type, data) => this.emit(type, data),
        });
        if (!prepared.ok) {
          if (!prepared.aborted) await this.failBeforeStart(prepared.message, prepared.errorCode);
          return;
        }
      }
      const agentRun = await this.withSkill(run, signal);
      if (!agentRun) return;
      const waiting = await store.startAgent(run.id, workerId);
      if (!waiting) return;
      let input = [
        ...(run.execution === 1 && run.prompt ? [run.prompt] : []),
        ...waiting.map((f) => f.message),
      ];
      if (run.execution === 1 && run.prompt) await this.emit("message", { role: "user", text: run.prompt });

      for (;;) {
        let outcome: HarnessOutcome;
        try {
          outcome = await harness.run({
            run: agentRun,
            workspace,
            sandbox,
            input,
            signal,
            emit: (type, data) => this.emit(type, data),
            takeFollowups: () => this.takeFollowups(),
            transcript: () => this.transcript(),
            log: this.deps.log.child({ runId: run.id }),
          });
        } catch (err) {
          if (signal.aborted) return;
          this.log.error({ err }, "harness failed");
          await this.finish(undefined, err);
          return;
        }
        // What a command wrote since the last measurement counts too: no run finishes over its quota.
        if (!signal.aborted) await quotaWatcher?.checkNow();
        if (signal.aborted) {
          // Cancelled or lost (the run's state is someone else's to set) or over the disk quota (set below,
          // once the sandbox is released), but the tokens were spent.
          if (outcome.usage) await store.recordUsage(run.id, outcome.usage);
          return;
        }
        const pending = await this.finish(outcome);
        if (pending.length === 0) return;
        // Follow-ups arrived as the agent finished: the same execution continues with them.
        input = pending;
      }
    } finally {
      quotaWatcher?.stop();
      await sandbox?.close?.().catch((err) => this.log.warn({ err }, "releasing the sandbox failed"));
      clearInterval(heartbeat);
      store.signals.off("run_changed", onChange);
      store.signals.off("followup_added", onFollowup);
      // Only now, with the harness and its processes gone, does the run end: FAILED, like a time limit.
      if (this.overQuota) {
        await store.transition(run.id, "fail", { statusMessage: this.overQuota }, { workerId });
      }
    }
  }

  /** Stops the execution when its workspace holds more than the disk quota allows. */
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

  /** FAILED before the agent started (environment or skill problems); a cancel written first wins. */
  private async failBeforeStart(message: string, errorCode: string): Promise<void> {
    await this.deps.store.transition(
      this.run.id,
      "fail",
      { statusMessage: { message, error_code: errorCode, retryable: false } },
      { workerId: this.deps.workerId },
    );
  }

  /**
   * The run as the harness sees it: a skill that could only be fetched now (a remote repo) becomes its
   * base prompt and name. Undefined when the skill cannot be found (the run has FAILED) or on abort.
   */
  private async withSkill(run: RunRecord, signal: AbortSignal): Promise<RunRecord | undefined> {
    const spec = run.agentConfig.skill_spec;
    if (!spec || run.agentSkill || !this.deps.skills) return run;
    const found = await this.deps.skills.resolve(spec, signal);
    if (signal.aborted) return undefined;
    if (found.kind !== "found") {
      await this.failBeforeStart(
        found.kind === "not_found" ? found.message : `skill "${spec}" could not be resolved`,
        "skill_not_found",
      );
      return undefined;
    }
    const { skill } = found;
    await this.emit("log", {
      level: "info",
      phase: "skill",
      message: `Skill "${skill.name}" loaded from ${skill.fullPath}`,
    });
    const agentConfig = {
      ...run.agentConfig,
      base_prompt: joinBasePrompt(skill.body, run.agentConfig.base_prompt),
      name: run.agentConfig.name ?? skill.name,
    };
    const agentSkill = {
      name: skill.name,
      ...(skill.description ? { description: skill.description } : {}),
      full_path: skill.fullPath,
    };
    // On the run for everyone to see, and for later executions, which then need not fetch it again.
    if (!(await this.deps.store.recordSkill(run.id, this.deps.workerId, agentConfig, agentSkill)))
      return undefined;
    return { ...run, agentConfig, agentSkill };
  }

  private async emit(
    type: Parameters<Store["appendEvent"]>[1],
    data: Record<string, unknown>,
  ): Promise<void> {
    await this.deps.store.appendEvent(this.run.id, type, data);
  }

  private async transcript(): Promise<RunEvent[]> {
    const events: RunEvent[] = [];
    for (;;) {
      const page = await this.deps.store.listEvents(this.run.id, events.at(-1)?.seq ?? 0, 1000);
      events.push(...page);
      if (page.length < 1000) return events;
    }
  }

  private async takeFollowups(): Promise<string[]> {
    if (!this.followupHint) return [];
    this.followupHint = false;
    const taken = await this.deps.store.takePendingFollowups(this.run.id, this.run.execution);
    return taken.map((f) => f.message);
  }

  /** Records the outcome unless follow-ups are waiting; returns those follow-ups' messages. */
  private async finish(outcome: HarnessOutcome | undefined, fault?: unknown): Promise<string[]> {
    const patch: RunPatch = {};
    let trigger: "succeed" | "fail" | "error";
    if (!outcome) {
      trigger = "error";
      patch.statusMessage = {
        message: `Internal fault while running the agent: ${fault instanceof Error ? fault.message : String(fault)}`,
        error_code: "internal_error",
        retryable: true,
      };
    } else if (outcome.status === "succeeded") {
      trigger = "succeed";
    } else {
      trigger = "fail";
      patch.statusMessage = {
        message: outcome.message,
        error_code: outcome.errorCode ?? "agent_failed",
        retryable: false,
      };
    }
    if (outcome?.usage) patch.requestUsage = outcome.usage;
    const result = await this.deps.store.finishExecution(this.run.id, this.deps.workerId, trigger, patch);
    return result.pending.map((f) => f.message);
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
    if (this.controller.signal.aborted) return;
    const current = await this.deps.store.getRun(this.run.teamId, this.run.id);
    if (!current || (current.state === "INPROGRESS" && current.workerId === this.deps.workerId)) return;
    this.stop(current.state === "CANCELLED" ? "cancelled" : "lease_lost");
  }
}

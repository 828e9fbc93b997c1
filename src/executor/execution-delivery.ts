import { existsSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { type DeliveryOutcome, deliverChanges, outcomeWords } from "../delivery/deliver.ts";
import { checkoutRepository, type DeliveryTarget } from "../delivery/repository-checkout.ts";
import type { HarnessOutcome } from "../harnesses/harness.ts";
import { isGitHubRepository, remoteUrl } from "../model/repository.ts";
import type { RunEventType, RunRecord } from "../model/run.ts";
import type { Sandbox } from "../sandbox/sandbox.ts";
import { measureDiskUsage, runDiskPaths } from "../workspace/disk-quota.ts";
import type { ExecutionDeps } from "./execution-deps.ts";
import { ownBranchClaim, readTranscript } from "./run-history.ts";

/** What the execution lends its delivery: its run, its dependencies, and how it writes and fails. */
export interface DeliveryContext {
  run: RunRecord;
  deps: ExecutionDeps;
  log: Logger;
  emit(type: RunEventType, data: Record<string, unknown>): Promise<void>;
  /** FAILED before the agent started; a cancel written first wins. */
  failBeforeStart(message: string, errorCode: string): Promise<void>;
}

/** The run's repository in its workspace (docs/delivery.md): checked out before the agent, delivered after. */
export class ExecutionDelivery {
  private readonly ctx: DeliveryContext;
  /** The git token minted for this execution's repository (never stored, never in the sandbox). */
  token: string | undefined;

  constructor(ctx: DeliveryContext) {
    this.ctx = ctx;
  }

  /**
   * Fetches the run's repository and, in a new workspace, checks the work branch out (docs/delivery.md).
   * Undefined when the run cannot go on (it has FAILED, or the execution was stopped).
   */
  async checkout(
    workspace: string,
    created: boolean,
    signal: AbortSignal,
  ): Promise<{ target?: DeliveryTarget & { base: string } } | undefined> {
    const config = this.ctx.run.agentConfig;
    if (!config.repository) return {};
    const delivery = this.ctx.deps.delivery;
    if (!delivery) {
      await this.ctx.failBeforeStart(
        `This server cannot work in repositories (no delivery configured); create the run without config.repository`,
        "repository_unavailable",
      );
      return undefined;
    }
    const target: DeliveryTarget = {
      repository: config.repository,
      remote: remoteUrl(config.repository, delivery.serverUrl),
      ...(config.base_branch ? { base: config.base_branch } : {}),
      ...(config.branch ? { branch: config.branch } : {}),
      mode: config.delivery ?? "branch",
    };
    let token: string | undefined;
    try {
      token = isGitHubRepository(target.repository)
        ? await delivery.pullRequests?.gitToken(target.repository)
        : undefined;
    } catch (err) {
      this.ctx.log.warn({ err }, "minting a token for the repository failed");
      await this.ctx.failBeforeStart(
        `Could not get a GitHub token for ${target.repository}: ${err instanceof Error ? err.message : String(err)}. Is the GitHub App installed on it?`,
        "repository_unavailable",
      );
      return undefined;
    }
    // A first execution whose agent never ran (re-queued after a lost worker) starts the checkout over.
    const fresh = created || (this.ctx.run.execution === 1 && !existsSync(join(workspace, ".git")));
    if (fresh && !created) {
      for (const entry of await readdir(workspace))
        await rm(join(workspace, entry), { recursive: true, force: true });
    }
    const result = await checkoutRepository({
      target,
      workspace,
      fresh,
      token,
      remotes: delivery.remotes,
      gitAuthor: delivery.gitAuthor,
      signal,
      emit: this.ctx.emit,
      log: this.ctx.log,
      claimExistingBranch: () =>
        ownBranchClaim(this.ctx.deps.store, this.ctx.run, target, delivery.pullRequests, signal),
    });
    if (!result.ok) {
      if (!result.aborted) await this.ctx.failBeforeStart(result.message, result.errorCode);
      return undefined;
    }
    if (config.base_branch !== result.base) {
      const agentConfig = { ...config, base_branch: result.base };
      if (
        !(await this.ctx.deps.store.recordAgentConfig(this.ctx.run.id, this.ctx.deps.workerId, agentConfig))
      )
        return undefined;
    }
    this.token = token;
    return { target: { ...target, base: result.base, ...(result.claim ? { claim: result.claim } : {}) } };
  }

  /**
   * Delivers the execution's changes and says how the run ends: a succeeded agent succeeds only when its
   * work was delivered; a failed (or cancelled) one keeps its patch and its own failure.
   */
  async deliver(
    target: DeliveryTarget & { base: string },
    workspace: string,
    sandbox: Sandbox,
    outcome: HarnessOutcome,
    input: string[],
    signal: AbortSignal,
  ): Promise<HarnessOutcome> {
    const delivery = this.ctx.deps.delivery!;
    const { store, workerId, leaseMs } = this.ctx.deps;
    // Pushed and opened only by the worker that holds the run: one that lost it while it was cut off (its
    // lease ran out, another worker continues the run) publishes nothing (lease fencing).
    const publish =
      outcome.status === "succeeded" &&
      !signal.aborted &&
      (await store.renewLease(this.ctx.run.id, workerId, leaseMs));
    const transcript = await readTranscript(store, this.ctx.run.id);
    const summary = String(
      transcript.findLast((e) => e.type === "message" && e.data.role === "assistant")?.data.text ?? "",
    );
    const followup =
      this.ctx.run.execution > 1 || input[0] !== this.ctx.run.prompt ? input.join("\n") : undefined;
    const quotaLeftBytes = await this.diskQuotaLeft(workspace);
    let result: DeliveryOutcome;
    try {
      result = await deliverChanges({
        run: this.ctx.run,
        target: { ...target, branch: target.branch ?? target.base },
        workspace,
        sandbox,
        publish,
        token: this.token,
        remotes: delivery.remotes,
        log: this.ctx.log,
        pullRequests: delivery.pullRequests,
        gitAuthor: delivery.gitAuthor,
        prDraft: delivery.prDraft,
        sessionLink: delivery.sessionLink(this.ctx.run),
        summary,
        followup,
        ...(quotaLeftBytes !== undefined ? { quotaLeftBytes } : {}),
        signal,
        recordArtifact: async (artifact, file) => {
          await this.ctx.deps.store.recordArtifact(this.ctx.run.id, artifact, file);
        },
        emit: this.ctx.emit,
      });
    } catch (err) {
      this.ctx.log.error({ err }, "delivery crashed");
      result = {
        kind: "failed",
        message: `Delivery failed: ${err instanceof Error ? err.message : String(err)}`,
      };
    }
    await this.ctx.emit("log", {
      level: result.kind === "failed" ? "error" : "info",
      phase: "delivery",
      message: outcomeWords(result),
    });
    if (outcome.status !== "succeeded") return outcome;
    if (result.kind === "failed") {
      return {
        status: "failed",
        message: result.message,
        errorCode: "delivery_failed",
        ...(outcome.usage ? { usage: outcome.usage } : {}),
      };
    }
    return { ...outcome, message: outcomeWords(result) };
  }

  /** What the run may still write to disk under its quota; undefined without a quota. */
  private async diskQuotaLeft(workspace: string): Promise<number | undefined> {
    const quota = this.ctx.deps.diskQuota;
    if (!quota || quota.limitBytes <= 0) return undefined;
    const used = await measureDiskUsage(runDiskPaths(workspace), quota.limitBytes);
    return Math.max(0, quota.limitBytes - used.bytes);
  }
}

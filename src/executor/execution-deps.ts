import type { Logger } from "pino";
import type { BudgetsSettings } from "../config-budgets.ts";
import type { EnvironmentSettings } from "../config-file.ts";
import type { PullRequestHost } from "../delivery/pull-request-host.ts";
import type { RemotePolicy } from "../delivery/remote-access.ts";
import type { HarnessRegistry } from "../harnesses/harness.ts";
import type { PriceTable } from "../model/pricing.ts";
import type { RunRecord } from "../model/run.ts";
import type { SandboxProvider } from "../sandbox/sandbox-provider.ts";
import type { NextClaim, Store } from "../store/store.ts";
import type { DiskQuota } from "../workspace/disk-quota.ts";
import type { SkillResolver } from "../workspace/skills.ts";

/** What an execution (RunExecution) works with: the store, the agents, the sandbox, the settings. */
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
  /** Where the run's commands execute: bubblewrap, or plain subprocesses only with DISPATCH_SANDBOX=none. */
  sandboxes: SandboxProvider;
  /** Configured environments (dispatch.config.yaml `environments`), by id. */
  environments?: Record<string, EnvironmentSettings>;
  /** Resolves skills that could not be resolved when the run was created (remote repos). */
  skills?: SkillResolver;
  /** The most a run's workspace may hold on disk; none when absent or 0. */
  diskQuota?: DiskQuota;
  /** Delivery of runs that name a repository (docs/delivery.md); such runs fail when absent. */
  delivery?: DeliveryDeps;
  /** Prices of models (pricing.ts): a run's inference_cost; none is recorded when absent. */
  prices?: PriceTable;
  /** DISPATCH_MAX_COST_USD: the cost limit of a run without config.max_cost_usd; none when absent. */
  defaultMaxCostUsd?: number;
  /** dispatch.config.yaml `budgets:` (docs/runtime.md, "Budgets"); none when absent. */
  budgets?: BudgetsSettings;
  /**
   * DISPATCH_CHECKPOINT_INTERVAL_S: the longest time between two checkpoints of a working run (one is also
   * taken after every agent step), so that another worker can resume it. None are taken when absent.
   */
  checkpointIntervalMs?: number;
  /**
   * Asked as the run's end is written: a claim for the slot it frees, made in the same write
   * (ExecutorRecords.finishExecution), or undefined when the executor wants none (stopping, queue empty).
   */
  claimWithEnd?: () => NextClaim | undefined;
}

export interface DeliveryDeps {
  /** GITHUB_SERVER_URL. */
  serverUrl: string;
  /** Which other remotes runs may reach (git.allowed_hosts) and how their names resolve. */
  remotes: RemotePolicy;
  gitAuthor: { name: string; email: string };
  prDraft: boolean;
  /** Tokens and pull requests (the GitHub integration); absent without GitHub credentials. */
  pullRequests?: PullRequestHost;
  sessionLink(run: RunRecord): string;
}

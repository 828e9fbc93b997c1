import { join } from "node:path";
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { PullRequestHost } from "../delivery/pull-request-host.ts";
import { type Lookup, systemLookup } from "../delivery/remote-access.ts";
import { Executor } from "../executor/executor.ts";
import type { BuiltinHarnessOptions } from "../harnesses/builtin/builtin-harness.ts";
import { configModelResolver } from "../harnesses/builtin/models.ts";
import { ClaudeHarness } from "../harnesses/external/claude.ts";
import { CodexHarness } from "../harnesses/external/codex.ts";
import type { ExternalHarnessOptions } from "../harnesses/external/external-harness.ts";
import { GeminiHarness } from "../harnesses/external/gemini.ts";
import { HarnessRegistry } from "../harnesses/harness.ts";
import { LazyHarness } from "../harnesses/lazy-harness.ts";
import { ScriptedHarness } from "../harnesses/scripted.ts";
import type { RunRecord } from "../model/run.ts";
import {
  createSandboxProvider,
  type SandboxProvider,
  SandboxUnavailableError,
} from "../sandbox/sandbox-provider.ts";
import type { Store } from "../store/store.ts";
import { DEFAULT_DISK_CHECK_INTERVAL_MS } from "../workspace/disk-quota.ts";
import { SkillResolver } from "../workspace/skills.ts";

/**
 * The sandbox, decided once before anything else starts (worker role): DISPATCH_SANDBOX=bwrap stops
 * start-up when bubblewrap cannot run; `auto` without it keeps the process up but starts no run, and
 * `runsRefused` says why (the API refuses new runs with it instead of leaving them QUEUED). No sandbox is
 * opened where this process executes no runs.
 */
export async function openSandbox(
  config: Config,
  log: Logger,
): Promise<{ sandboxes?: SandboxProvider; runsRefused?: string }> {
  if (!config.roles.has("worker") || config.maxConcurrentRuns <= 0) return {};
  try {
    const sandboxes = await createSandboxProvider({
      mode: config.sandbox.mode,
      ...(config.sandbox.bwrapPath ? { bwrapPath: config.sandbox.bwrapPath } : {}),
      // Everything Dispatch reads secrets from, in case it lies in what the sandbox shows (/usr, /etc…).
      hide: [
        config.dataDir,
        ...["", "-wal", "-shm"].map((suffix) => `${config.databasePath}${suffix}`),
        ...config.sandbox.secretFiles,
      ],
      limits: { memoryBytes: config.sandbox.memoryBytes, pidsMax: config.sandbox.pidsMax },
      log,
    });
    return { sandboxes };
  } catch (err) {
    if (!(err instanceof SandboxUnavailableError) || config.sandbox.mode === "bwrap") throw err;
    const serveApi = config.roles.has("api");
    log.error(
      { sandbox: "unavailable" },
      `${err.message}. This process claims no run${serveApi ? "; its API serves, but refuses new runs and follow-ups" : ""}.`,
    );
    return { runsRefused: err.message };
  }
}

/** Where skills are found and cached (the run service resolves local ones at create, the executor all). */
export function skillResolver(config: Config): SkillResolver {
  return new SkillResolver(config.settings.skills, { cacheDir: join(config.dataDir, "skills-cache") });
}

/**
 * Every agent this server runs: scripted, the builtin agent (the AI SDK and MCP, loaded by the first run
 * that uses it), and the external agent CLIs, which reach their provider through Dispatch's model gateway.
 */
export function buildHarnesses(
  config: Config,
  opts: { builtin?: Partial<BuiltinHarnessOptions>; external?: Omit<ExternalHarnessOptions, "provider"> },
): HarnessRegistry {
  const external = {
    allowedModels: config.settings.models.gateway_allowed,
    maxSteps: config.settings.builtin.max_steps,
    defaultMaxRunMinutes: config.settings.builtin.max_run_minutes,
    ...opts.external,
  };
  return new HarnessRegistry()
    .register(new ScriptedHarness())
    .register(
      new LazyHarness("builtin", async () => {
        const { BuiltinHarness } = await import("../harnesses/builtin/builtin-harness.ts");
        return new BuiltinHarness({
          resolveModel: configModelResolver(config.models),
          maxSteps: config.settings.builtin.max_steps,
          defaultMaxRunMinutes: config.settings.builtin.max_run_minutes,
          mcpAllowedUrls: config.settings.mcp.allowed_urls,
          toolLimits: {
            commandTimeoutMs: config.settings.builtin.command_timeout_seconds * 1000,
            maxCommandTimeoutMs: config.settings.builtin.command_timeout_seconds * 10_000,
          },
          ...opts.builtin,
        });
      }),
    )
    .register(new ClaudeHarness({ provider: config.models.anthropic, ...external }))
    .register(new CodexHarness({ provider: config.models.openai, ...external }))
    .register(new GeminiHarness({ provider: config.models.gemini, ...external }));
}

/** The worker role: the executor, claiming runs into the sandbox, started. */
export async function startWorker(deps: {
  config: Config;
  log: Logger;
  store: Store;
  sandboxes: SandboxProvider;
  harnesses: HarnessRegistry;
  skills: SkillResolver;
  /** Opening pull requests, when a surface lends it (GitHub). */
  pullRequests: PullRequestHost | undefined;
  publicUrl: () => string;
  diskCheckIntervalMs?: number;
  lookup?: Lookup;
}): Promise<Executor> {
  const { config } = deps;
  const executor = new Executor({
    store: deps.store,
    harnesses: deps.harnesses,
    dataDir: config.dataDir,
    slots: config.maxConcurrentRuns,
    leaseMs: config.leaseMs,
    maxResumes: config.resume.maxResumes,
    blockedTimeoutS: config.blockedTimeoutS,
    checkpointIntervalMs: config.resume.checkpointIntervalMs,
    pollIntervalMs: config.pollIntervalMs,
    log: deps.log,
    sandboxes: deps.sandboxes,
    environments: config.settings.environments,
    skills: deps.skills,
    diskQuota: {
      limitBytes: config.disk.runQuotaBytes,
      intervalMs: deps.diskCheckIntervalMs ?? DEFAULT_DISK_CHECK_INTERVAL_MS,
    },
    delivery: {
      serverUrl: config.delivery.serverUrl,
      remotes: { allowedHosts: config.settings.git.allowed_hosts, lookup: deps.lookup ?? systemLookup },
      gitAuthor: config.delivery.gitAuthor,
      prDraft: config.delivery.prDraft,
      ...(deps.pullRequests ? { pullRequests: deps.pullRequests } : {}),
      sessionLink: (run: RunRecord) => `${deps.publicUrl()}/sessions/${run.sessionId}`,
    },
    cost: {
      prices: config.cost.prices,
      budgets: config.cost.budgets,
      ...(config.cost.defaultMaxCostUsd !== undefined
        ? { defaultMaxCostUsd: config.cost.defaultMaxCostUsd }
        : {}),
    },
  });
  await executor.start();
  return executor;
}

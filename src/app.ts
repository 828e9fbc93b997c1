import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { ArtifactLinks, loadSigningKey } from "./api/artifact-links.ts";
import { Metrics } from "./api/metrics.ts";
import { agentRoutes } from "./api/routes/agents.ts";
import { artifactRoutes } from "./api/routes/artifacts.ts";
import { environmentRoutes } from "./api/routes/environments.ts";
import { identityRoutes } from "./api/routes/identities.ts";
import { modelRoutes } from "./api/routes/models.ts";
import { runRoutes } from "./api/routes/runs.ts";
import { systemRoutes } from "./api/routes/system.ts";
import { buildServer } from "./api/server.ts";
import { ensureAdminKey } from "./auth/bootstrap.ts";
import { AgentCatalog } from "./catalog/agents.ts";
import { EnvironmentCatalog } from "./catalog/environments.ts";
import { listModels } from "./catalog/models.ts";
import type { Config } from "./config.ts";
import { DEFAULT_DISK_CHECK_INTERVAL_MS } from "./executor/disk-quota.ts";
import { Executor } from "./executor/executor.ts";
import { HarnessRegistry } from "./executor/harness.ts";
import { BuiltinHarness, type BuiltinHarnessOptions } from "./executor/harnesses/builtin/builtin-harness.ts";
import { configModelResolver } from "./executor/harnesses/builtin/models.ts";
import { ScriptedHarness } from "./executor/harnesses/scripted.ts";
import { createSandboxProvider, type SandboxProvider } from "./executor/sandbox-provider.ts";
import { listLocalSkills } from "./executor/skill-catalog.ts";
import { SkillResolver } from "./executor/skills.ts";
import { removeExpiredWorkspaces } from "./executor/workspace-retention.ts";
import { IdentityService } from "./identities/identity-service.ts";
import {
  createGitHubIntegration,
  GITHUB_PRINCIPAL,
  GitHubClients,
  type GitHubIntegration,
  GitHubPullRequests,
} from "./integrations/github/index.ts";
import { githubNotifierPlatform } from "./integrations/github/notifier-platform.ts";
import {
  createSlackIntegration,
  SLACK_PRINCIPAL,
  type SlackIntegration,
} from "./integrations/slack/index.ts";
import { slackNotifierPlatform } from "./integrations/slack/notifier-platform.ts";
import { renderStatusCard } from "./integrations/slack/status-card.ts";
import { WebApiSlackPoster } from "./integrations/slack/web-api.ts";
import {
  NOTIFIER_PRINCIPAL,
  Notifier,
  type NotifierOptions,
  type NotifierPlatform,
} from "./notifier/index.ts";
import { DEFAULT_NOTIFIER_OPTIONS } from "./notifier/notifier.ts";
import { HttpRunsApi } from "./runs/http-runs-api.ts";
import { RunService } from "./runs/run-service.ts";
import { inProcessRunsApiFor, type RunsApi } from "./runs/runs-api.ts";
import { SqliteStore } from "./store/sqlite/sqlite-store.ts";
import type { Store } from "./store/store.ts";
import { sessionPage } from "./web/session-page.ts";

const HOUSEKEEPING_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 3600_000;

export interface Dispatch {
  url: string;
  config: Config;
  store: Store;
  runService: RunService;
  executor: Executor | undefined;
  server: FastifyInstance;
  /** The Slack app, when SLACK_BOT_TOKEN is configured. */
  slack: SlackIntegration | undefined;
  /** The GitHub integration (POST /github/webhooks), when GITHUB_APP_ID or GITHUB_TOKEN is configured. */
  github: GitHubIntegration | undefined;
  /**
   * The notifier (Slack status cards and replies, GitHub tracking comments and final comments), when Slack
   * or GitHub is configured.
   */
  notifier: Notifier | undefined;
  /** The admin key generated at this start, if one was (printed once by `dispatch serve`). */
  generatedAdminKey: string | undefined;
  stop(): Promise<void>;
}

/** Wires the whole service from a configuration: store, run service, HTTP server and executor. */
export async function startDispatch(
  config: Config,
  log: Logger,
  opts: {
    notifier?: Partial<NotifierOptions>;
    /** Overrides for the builtin harness (tests inject a model resolver and short limits). */
    builtin?: Partial<BuiltinHarnessOptions>;
    /** GitHub client overrides (tests turn the request pacing off so that they need not wait). */
    github?: { throttle?: boolean };
    /** Pause between measurements of a running workspace's disk use (tests shorten it). */
    diskCheckIntervalMs?: number;
  } = {},
): Promise<Dispatch> {
  // The sandbox is decided once, before anything else starts: DISPATCH_SANDBOX=bwrap stops start-up here.
  const sandboxes: SandboxProvider | undefined =
    config.maxConcurrentRuns > 0
      ? await createSandboxProvider({
          mode: config.sandbox.mode,
          ...(config.sandbox.bwrapPath ? { bwrapPath: config.sandbox.bwrapPath } : {}),
          // Everything Dispatch reads secrets from, in case it lies in what the sandbox shows (/usr, /etc…).
          hide: [
            config.dataDir,
            ...["", "-wal", "-shm"].map((suffix) => `${config.databasePath}${suffix}`),
            ...config.sandbox.secretFiles,
          ],
          secrets: config.sandbox.secrets,
          limits: { memoryBytes: config.sandbox.memoryBytes, pidsMax: config.sandbox.pidsMax },
          log,
        })
      : undefined;
  const skills = new SkillResolver(config.settings.skills, {
    cacheDir: join(config.dataDir, "skills-cache"),
  });
  const store = new SqliteStore(config.databasePath, { busyTimeoutMs: config.sqliteBusyTimeoutMs });
  await store.migrate();
  const generatedAdminKey = await ensureAdminKey(store, config.adminApiKey);
  const runService = new RunService(store, {
    environmentIds: Object.keys(config.settings.environments),
    mcpAllowedUrls: config.settings.mcp.allowed_urls,
    skills,
    capacity: config.maxConcurrentRuns,
    delivery: {
      serverUrl: config.delivery.serverUrl,
      allowFileRemotes: config.delivery.allowFileRemotes,
      pullRequests: config.github !== undefined,
    },
    ...(config.defaultModel ? { defaultModel: config.defaultModel } : {}),
  });
  const harnesses = new HarnessRegistry().register(new ScriptedHarness()).register(
    new BuiltinHarness({
      resolveModel: configModelResolver(config.models),
      maxSteps: config.settings.builtin.max_steps,
      defaultMaxRunMinutes: config.settings.builtin.max_run_minutes,
      mcpAllowedUrls: config.settings.mcp.allowed_urls,
      toolLimits: {
        commandTimeoutMs: config.settings.builtin.command_timeout_seconds * 1000,
        maxCommandTimeoutMs: config.settings.builtin.command_timeout_seconds * 10_000,
      },
      ...opts.builtin,
    }),
  );

  let accepting = true;
  let publicUrl = config.publicUrl ?? "";
  const metrics = new Metrics(store);
  const server = buildServer({
    apiKeys: store,
    runService,
    metrics,
    logger: log,
    rateLimit: { perMinute: config.rateLimitPerMinute, burst: config.rateLimitBurst },
    http: config.http,
    isAccepting: () => accepting,
  });
  server.register(systemRoutes, {
    runService,
    metrics,
    isAccepting: () => accepting,
    disk: { dataDir: config.dataDir, minFreeBytes: config.disk.minFreeBytes },
  });
  server.register(runRoutes, { runService, publicUrl: () => publicUrl });
  const models = listModels(config.models);
  server.register(modelRoutes, { models: () => models });
  const environments = new EnvironmentCatalog(config.settings.environments, store, new Date());
  server.register(environmentRoutes, { environments });
  const agents = new AgentCatalog({
    skills: () => listLocalSkills(config.settings.skills, process.cwd()),
    environments: () => environments.names(),
    store,
  });
  server.register(agentRoutes, { agents });
  server.register(identityRoutes, { identities: new IdentityService(store) });
  const artifactLinks = new ArtifactLinks(await loadSigningKey(config.signingKey, config.dataDir));
  server.register(artifactRoutes, { store, links: artifactLinks, publicUrl: () => publicUrl });
  server.register(sessionPage, { runService, artifacts: store });
  // Slack: the app answers POST /slack/events (or connects in Socket Mode); the notifier reports back.
  // Remote mode: the integrations and the notifier front another Dispatch instead of this one.
  const remoteRuns = config.runService
    ? new HttpRunsApi({
        baseUrl: `${config.runService.url.replace(/\/+$/, "")}/api/v1`,
        apiKey: config.runService.apiKey,
      })
    : undefined;
  const runsApiFor = async (
    who: { id: string; displayName: string },
    role: "member" | "read",
  ): Promise<RunsApi> =>
    remoteRuns ?? (await inProcessRunsApiFor(runService, () => publicUrl, { ...who, role }));
  const slack = config.slack
    ? createSlackIntegration({
        config: config.slack,
        settings: config.settings.slack,
        runs: await runsApiFor(SLACK_PRINCIPAL, "member"),
        store,
        log,
        renderStatus: (run, binding) => renderStatusCard(run, binding ?? null, Date.now()),
        inbox: { leaseMs: config.leaseMs, pollMs: config.pollIntervalMs },
        repositories: {
          serverUrl: config.delivery.serverUrl,
          allowFileRemotes: config.delivery.allowFileRemotes,
        },
      })
    : undefined;
  slack?.register(server); // routes must exist before the server listens
  // GitHub: the integration answers POST /github/webhooks; the notifier reports back on the issue.
  const githubClients = config.github
    ? new GitHubClients({
        auth: config.github.auth,
        apiUrl: config.github.apiUrl,
        log,
        ...(opts.github?.throttle !== undefined ? { throttle: opts.github.throttle } : {}),
      })
    : undefined;
  const github =
    config.github && githubClients
      ? createGitHubIntegration({
          config: config.github,
          settings: config.settings.github,
          clients: githubClients,
          runs: await runsApiFor(GITHUB_PRINCIPAL, "member"),
          store,
          log,
          inbox: { leaseMs: config.leaseMs, pollMs: config.pollIntervalMs },
        })
      : undefined;
  github?.register(server);
  if (config.github) {
    log.info(
      { path: "/github/webhooks", auth: config.github.auth.kind, handle: `@${config.github.botHandle}` },
      "GitHub integration enabled",
    );
  }

  await server.listen({ host: config.host, port: config.port });
  const address = server.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  publicUrl ||= url;

  let executor: Executor | undefined;
  if (config.maxConcurrentRuns > 0) {
    executor = new Executor({
      store,
      harnesses,
      dataDir: config.dataDir,
      slots: config.maxConcurrentRuns,
      leaseMs: config.leaseMs,
      pollIntervalMs: config.pollIntervalMs,
      log,
      ...(sandboxes ? { sandboxes } : {}),
      environments: config.settings.environments,
      skills,
      diskQuota: {
        limitBytes: config.disk.runQuotaBytes,
        intervalMs: opts.diskCheckIntervalMs ?? DEFAULT_DISK_CHECK_INTERVAL_MS,
      },
      delivery: {
        serverUrl: config.delivery.serverUrl,
        gitAuthor: config.delivery.gitAuthor,
        prDraft: config.delivery.prDraft,
        ...(githubClients ? { pullRequests: new GitHubPullRequests(githubClients) } : {}),
        sessionLink: (run) => `${publicUrl}/sessions/${run.sessionId}`,
      },
    });
    await executor.start();
  }
  // Handle stored deliveries, also those acknowledged before a crash; connect in Socket Mode.
  await slack?.start();
  github?.start();
  // The notifier reports SLACK runs with the bot token and GITHUB_WEBHOOK runs through the GitHub clients.
  const notifierOptions = { ...DEFAULT_NOTIFIER_OPTIONS, ...opts.notifier };
  const platforms: NotifierPlatform[] = [];
  if (config.slack) {
    platforms.push(
      slackNotifierPlatform({
        slack: new WebApiSlackPoster(config.slack.botToken, { apiUrl: config.slackApiUrl, log }),
        store,
        editIntervalMs: notifierOptions.editIntervalMs,
      }),
    );
  }
  if (githubClients) {
    platforms.push(
      githubNotifierPlatform({
        clients: githubClients,
        store,
        editIntervalMs: notifierOptions.githubEditIntervalMs,
      }),
    );
  }
  const notifier =
    platforms.length > 0
      ? new Notifier({
          runsApi: await runsApiFor(NOTIFIER_PRINCIPAL, "read"),
          store,
          platforms,
          log,
          options: notifierOptions,
          onDelivery: (kind, outcome) => metrics.notifierDeliveries.inc({ kind, outcome }),
        })
      : undefined;
  notifier?.start();
  // Housekeeping: idempotency keys live 24 h (API.md); inbound dedupe keys and delivered outbox rows a week;
  // finished runs' workspaces DISPATCH_WORKSPACE_RETENTION_HOURS.
  const housekeeping = setInterval(() => {
    const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
    const retentionMs = config.disk.workspaceRetentionMs;
    Promise.all([
      store.pruneIdempotencyKeys(ago(DAY_MS)),
      store.pruneInbox(ago(7 * DAY_MS)),
      store.pruneOutbox(ago(7 * DAY_MS)),
      retentionMs > 0 &&
        removeExpiredWorkspaces({ store, dataDir: config.dataDir, finishedBefore: ago(retentionMs), log }),
    ]).catch((err) => log.warn({ err }, "housekeeping failed; retrying at the next interval"));
  }, HOUSEKEEPING_MS);
  housekeeping.unref();

  let stopping: Promise<void> | undefined;
  return {
    url,
    config,
    store,
    runService,
    executor,
    server,
    slack,
    github,
    notifier,
    generatedAdminKey,
    stop() {
      stopping ??= (async () => {
        accepting = false;
        clearInterval(housekeeping);
        await slack?.stop(); // lets acknowledged requests finish
        await github?.stop();
        await notifier?.stop(); // hands claimed outbox rows back
        await executor?.stop(config.shutdownGraceMs);
        await server.close();
        await store.close();
      })();
      return stopping;
    },
  };
}

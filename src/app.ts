import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { RunAccess } from "./access/run-access.ts";
import { ArtifactLinks, loadSigningKey } from "./api/artifact-links.ts";
import { Metrics } from "./api/metrics.ts";
import { agentRoutes } from "./api/routes/agents.ts";
import { artifactRoutes } from "./api/routes/artifacts.ts";
import { attachmentContentPath, attachmentRoutes } from "./api/routes/attachments.ts";
import { environmentRoutes } from "./api/routes/environments.ts";
import { identityRoutes } from "./api/routes/identities.ts";
import { modelRoutes } from "./api/routes/models.ts";
import { redirectRoutes } from "./api/routes/redirects.ts";
import { runRoutes } from "./api/routes/runs.ts";
import { scheduleRoutes } from "./api/routes/schedules.ts";
import { systemRoutes } from "./api/routes/system.ts";
import { buildServer } from "./api/server.ts";
import { ensureAdminKey } from "./auth/bootstrap.ts";
import { AgentCatalog } from "./catalog/agents.ts";
import { EnvironmentCatalog } from "./catalog/environments.ts";
import { listModels } from "./catalog/models.ts";
import type { Config } from "./config.ts";
import { type Lookup, systemLookup } from "./executor/delivery/remote-access.ts";
import { DEFAULT_DISK_CHECK_INTERVAL_MS } from "./executor/disk-quota.ts";
import { Executor } from "./executor/executor.ts";
import { HarnessRegistry } from "./executor/harness.ts";
import type { BuiltinHarnessOptions } from "./executor/harnesses/builtin/builtin-harness.ts";
import { configModelResolver } from "./executor/harnesses/builtin/models.ts";
import { ClaudeHarness } from "./executor/harnesses/external/claude.ts";
import { CodexHarness } from "./executor/harnesses/external/codex.ts";
import type { ExternalHarnessOptions } from "./executor/harnesses/external/external-harness.ts";
import { GeminiHarness } from "./executor/harnesses/external/gemini.ts";
import { ScriptedHarness } from "./executor/harnesses/scripted.ts";
import { LazyHarness } from "./executor/lazy-harness.ts";
import { unpricedModelOf } from "./executor/run-cost.ts";
import {
  createSandboxProvider,
  type SandboxProvider,
  SandboxUnavailableError,
} from "./executor/sandbox-provider.ts";
import { listLocalSkills } from "./executor/skill-catalog.ts";
import { SkillResolver } from "./executor/skills.ts";
import { removeExpiredWorkspaces } from "./executor/workspace-retention.ts";
import { IdentityService } from "./identities/identity-service.ts";
import type { GitHubIntegration } from "./integrations/github/index.ts";
import type { SlackIntegration } from "./integrations/slack/index.ts";
import {
  NOTIFIER_PRINCIPAL,
  Notifier,
  type NotifierOptions,
  type NotifierPlatform,
} from "./notifier/index.ts";
import { DEFAULT_NOTIFIER_OPTIONS } from "./notifier/notifier.ts";
import { RunService } from "./runs/run-service.ts";
import { inProcessRunsApiFor, type RunsApi } from "./runs/runs-api.ts";
import { ScheduleService } from "./schedules/schedule-service.ts";
import { Scheduler, type SchedulerOptions } from "./schedules/scheduler.ts";
import { openStore } from "./store/open-store.ts";
import type { Store } from "./store/store.ts";
import { GitHubSignIn } from "./web/auth/github-sign-in.ts";
import { WebSignIn } from "./web/auth/web-sign-in.ts";
import { sessionPage } from "./web/session-page.ts";
import { webApp } from "./web/web-app.ts";

const HOUSEKEEPING_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 3600_000;

/**
 * The Slack and GitHub integrations' modules, loaded only when they are configured: Bolt (with Socket
 * Mode, Express and undici) and Octokit are megabytes of memory a server without them would hold for
 * nothing. Their configuration is still checked at start, by loadConfig.
 */
async function loadSlackModules() {
  const [integration, notifier, statusCard, webApi] = await Promise.all([
    import("./integrations/slack/index.ts"),
    import("./integrations/slack/notifier-platform.ts"),
    import("./integrations/slack/status-card.ts"),
    import("./integrations/slack/web-api.ts"),
  ]);
  return { ...integration, ...notifier, ...statusCard, ...webApi };
}

async function loadGitHubModules() {
  const [integration, notifier] = await Promise.all([
    import("./integrations/github/index.ts"),
    import("./integrations/github/notifier-platform.ts"),
  ]);
  return { ...integration, ...notifier };
}

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
    /** Overrides for the external agent harnesses (claude, codex, gemini): tests shorten the limits. */
    external?: Omit<ExternalHarnessOptions, "provider">;
    /** GitHub client overrides (tests turn the request pacing off so that they need not wait). */
    github?: { throttle?: boolean };
    /** Pause between measurements of a running workspace's disk use (tests shorten it). */
    diskCheckIntervalMs?: number;
    /** The scheduler's clock and waits (tests run schedules on an accelerated clock). */
    scheduler?: Partial<Pick<SchedulerOptions, "now" | "speed" | "maxSleepMs" | "retryMs">>;
    /** The web app's clock (tests expire sign-in links and sessions without waiting). */
    web?: { now?: () => Date };
    /** How runs' git hosts resolve (tests give a name the addresses they choose); the system's DNS otherwise. */
    lookup?: Lookup;
  } = {},
): Promise<Dispatch> {
  const { roles } = config;
  const serveApi = roles.has("api");
  const runsExecutions = roles.has("worker") && config.maxConcurrentRuns > 0;
  /** What /readyz reports per role; each is `starting` until it runs. */
  const roleStates: Record<string, string> = Object.fromEntries([...roles].map((role) => [role, "starting"]));
  // The sandbox is decided once, before anything else starts: DISPATCH_SANDBOX=bwrap stops start-up here;
  // `auto` without bubblewrap keeps serving the API but starts no run (runsRefused says why).
  let sandboxes: SandboxProvider | undefined;
  let runsRefused: string | undefined;
  if (runsExecutions) {
    try {
      sandboxes = await createSandboxProvider({
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
    } catch (err) {
      if (!(err instanceof SandboxUnavailableError) || config.sandbox.mode === "bwrap") throw err;
      runsRefused = err.message;
      log.error(
        { sandbox: "unavailable" },
        `${err.message}. This process claims no run${serveApi ? "; its API serves, but refuses new runs and follow-ups" : ""}.`,
      );
    }
  }
  const skills = new SkillResolver(config.settings.skills, {
    cacheDir: join(config.dataDir, "skills-cache"),
  });
  const store = await openStore(
    {
      postgresUrl: config.postgresUrl,
      sqlitePath: config.databasePath,
      sqliteBusyTimeoutMs: config.sqliteBusyTimeoutMs,
    },
    (err) => log.warn({ err }, "a PostgreSQL connection failed; it is reopened"),
  );
  await store.migrate();
  // Keys are checked by the api role only: a process without it (a worker) needs no admin key, and must
  // not mint one on a fresh database either (it would print it in that process's log).
  const generatedAdminKey = serveApi ? await ensureAdminKey(store, config.adminApiKey) : undefined;
  // The one access rule for runs (docs/architecture.md); each surface registers its threads' audience below.
  const access = new RunAccess(store);
  const runService = new RunService(store, {
    access,
    // The registry is built below; create is only called once the server is up.
    harnessRefusal: (key, config) => harnesses.refusal(key, config),
    environmentIds: Object.keys(config.settings.environments),
    mcpAllowedUrls: config.settings.mcp.allowed_urls,
    skills,
    capacity: config.maxConcurrentRuns,
    // This process would execute the runs its API takes, and cannot: refused at once, never left QUEUED.
    ...(runsRefused ? { runsRefused } : {}),
    cost: {
      ...(config.cost.defaultMaxCostUsd !== undefined
        ? { defaultMaxCostUsd: config.cost.defaultMaxCostUsd }
        : {}),
      unpricedModel: (agent) => unpricedModelOf(agent, config.cost.prices, config.models),
    },
    delivery: {
      serverUrl: config.delivery.serverUrl,
      allowFileRemotes: config.delivery.allowFileRemotes,
      allowedHosts: config.settings.git.allowed_hosts,
      pullRequests: config.github !== undefined,
    },
    ...(config.defaultModel ? { defaultModel: config.defaultModel } : {}),
  });
  // The builtin agent (the AI SDK and MCP) is loaded by the first run that uses it.
  const harnesses = new HarnessRegistry().register(new ScriptedHarness()).register(
    new LazyHarness("builtin", async () => {
      const { BuiltinHarness } = await import("./executor/harnesses/builtin/builtin-harness.ts");
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
  );
  // External agent CLIs: they reach their provider through Dispatch's model gateway, which holds the key.
  const external = {
    allowedModels: config.settings.models.gateway_allowed,
    maxSteps: config.settings.builtin.max_steps,
    defaultMaxRunMinutes: config.settings.builtin.max_run_minutes,
    ...opts.external,
  };
  harnesses
    .register(new ClaudeHarness({ provider: config.models.anthropic, ...external }))
    .register(new CodexHarness({ provider: config.models.openai, ...external }))
    .register(new GeminiHarness({ provider: config.models.gemini, ...external }));

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
    accessLog: config.accessLog,
  });
  server.register(systemRoutes, {
    runService,
    metrics,
    isAccepting: () => accepting,
    disk: { dataDir: config.dataDir, minFreeBytes: config.disk.minFreeBytes },
    roles: () => roleStates,
  });
  if (serveApi) server.register(runRoutes, { runService, publicUrl: () => publicUrl });
  if (serveApi) server.register(redirectRoutes, { runService });
  const models = listModels(config.models);
  if (serveApi) server.register(modelRoutes, { models: () => models });
  const environments = new EnvironmentCatalog(config.settings.environments, store, new Date());
  if (serveApi) server.register(environmentRoutes, { environments });
  const agents = new AgentCatalog({
    skills: () => listLocalSkills(config.settings.skills, process.cwd()),
    environments: () => environments.names(),
    store,
  });
  if (serveApi) server.register(agentRoutes, { agents });
  if (serveApi) server.register(identityRoutes, { identities: new IdentityService(store) });
  // Schedules are written through the API with the scheduler's clock, so both agree on what is due.
  const schedules = new ScheduleService(store, {
    limits: config.scheduleLimits,
    ...(opts.scheduler?.now ? { now: opts.scheduler.now } : {}),
  });
  if (serveApi) server.register(scheduleRoutes, { schedules, access });
  // One signing key for every signed content link (artifacts and attachments), read once.
  const signingKey = await loadSigningKey(config.signingKey, config.dataDir);
  const artifactLinks = new ArtifactLinks(signingKey);
  if (serveApi)
    server.register(artifactRoutes, {
      store,
      runService,
      links: artifactLinks,
      publicUrl: () => publicUrl,
    });
  const attachmentLinks = new ArtifactLinks(signingKey, {
    kind: "attachment",
    path: attachmentContentPath,
  });
  if (serveApi)
    server.register(attachmentRoutes, {
      store,
      runService,
      links: attachmentLinks,
      publicUrl: () => publicUrl,
    });
  if (serveApi)
    server.register(sessionPage, {
      runService,
      artifacts: store,
      attachments: { store, links: attachmentLinks },
      stallAfterMs: config.stallAfterMs,
    });
  // The team's web app (docs/surfaces.md): sign-in from Slack or with an admin key, and the runs dashboard.
  const webSignIn = new WebSignIn({
    store,
    publicUrl: () => publicUrl,
    ...(opts.web?.now ? { now: opts.web.now } : {}),
  });
  const slackModules = config.slack ? await loadSlackModules() : undefined;
  const githubModules = config.github ? await loadGitHubModules() : undefined;
  // GitHub users sign in with a code commented on GitHub (`@bot login <code>`), as the principal their
  // runs name (`github:<login>`) in the team of the GitHub integration's runs; not when fronting another
  // Dispatch, whose runs this web app does not show.
  const githubSignIn =
    config.github && githubModules && !config.runService
      ? new GitHubSignIn({
          store,
          signIn: webSignIn,
          teamId: async () => (await runService.ensureServiceAccount(githubModules.GITHUB_PRINCIPAL)).team.id,
          publicUrl: () => publicUrl,
          handle: config.github.botHandle,
          minPermission: config.settings.github.min_permission,
        })
      : undefined;
  if (serveApi)
    server.register(webApp, {
      ...(githubSignIn ? { githubSignIn } : {}),
      signIn: webSignIn,
      runService,
      store,
      attachments: { store, links: attachmentLinks },
      publicUrl: () => publicUrl,
      stallAfterMs: config.stallAfterMs,
      slashCommand: config.slack?.command ?? "/agent",
    });
  // Slack: the app answers POST /slack/events (or connects in Socket Mode); the notifier reports back.
  // Remote mode: the integrations and the notifier front another Dispatch instead of this one.
  // The HTTP client it talks through is loaded only in remote mode.
  const remoteRuns = config.runService
    ? new (await import("./runs/http-runs-api.ts")).HttpRunsApi({
        baseUrl: `${config.runService.url.replace(/\/+$/, "")}/api/v1`,
        apiKey: config.runService.apiKey,
      })
    : undefined;
  const runsApiFor = async (
    who: { id: string; displayName: string },
    role: "member" | "read",
  ): Promise<RunsApi> =>
    remoteRuns ?? (await inProcessRunsApiFor(runService, () => publicUrl, { ...who, role }));
  const slackSchedules = async (slackModules: Awaited<ReturnType<typeof loadSlackModules>>) => {
    const { principal, team } = await runService.ensureServiceAccount(slackModules.SLACK_PRINCIPAL);
    return slackModules.inProcessChannelSchedules(schedules, team.id, principal.id);
  };
  // Slack and GitHub deliveries are received and handled by the api role; the notifier answers in threads.
  const slack =
    config.slack && slackModules && serveApi
      ? slackModules.createSlackIntegration({
          config: config.slack,
          settings: config.settings.slack,
          runs: await runsApiFor(slackModules.SLACK_PRINCIPAL, "member"),
          access,
          // In process only: the runs of a remote Dispatch's schedule could not report to this bot's channels.
          ...(remoteRuns ? {} : { schedules: await slackSchedules(slackModules) }),
          // A Slack user signs in as the principal their runs name (`slack:<team>:<user>`), in the team
          // the Slack app's runs belong to; a remote Dispatch's runs are not this web app's to show.
          ...(remoteRuns
            ? {}
            : {
                webLogin: async (creator) => {
                  const { team } = await runService.ensureServiceAccount(slackModules.SLACK_PRINCIPAL);
                  return webSignIn.issueLink({
                    id: creator.uid,
                    teamId: team.id,
                    type: "user",
                    displayName: creator.display_name,
                    email: creator.email ?? null,
                  });
                },
              }),
          store,
          log,
          renderStatus: (run, binding) => slackModules.renderStatusCard(run, binding ?? null, Date.now()),
          inbox: { leaseMs: config.leaseMs, pollMs: config.pollIntervalMs },
          repositories: {
            serverUrl: config.delivery.serverUrl,
            allowFileRemotes: config.delivery.allowFileRemotes,
            allowedHosts: config.settings.git.allowed_hosts,
          },
        })
      : undefined;
  slack?.register(server); // routes must exist before the server listens
  if (slack) access.register(slack.audience);
  // GitHub: the integration answers POST /github/webhooks; the notifier reports back on the issue.
  const githubClients =
    config.github && githubModules
      ? new githubModules.GitHubClients({
          auth: config.github.auth,
          apiUrl: config.github.apiUrl,
          log,
          ...(opts.github?.throttle !== undefined ? { throttle: opts.github.throttle } : {}),
        })
      : undefined;
  // Only the api role receives webhooks; the configuration requires their secret exactly then.
  const github =
    config.github?.webhookSecret && githubModules && githubClients && serveApi
      ? githubModules.createGitHubIntegration({
          config: { ...config.github, webhookSecret: config.github.webhookSecret },
          settings: config.settings.github,
          clients: githubClients,
          runs: await runsApiFor(githubModules.GITHUB_PRINCIPAL, "member"),
          store,
          log,
          inbox: { leaseMs: config.leaseMs, pollMs: config.pollIntervalMs },
          serverUrl: config.delivery.serverUrl,
          ...(githubSignIn ? { webLogin: githubSignIn } : {}),
        })
      : undefined;
  github?.register(server);
  if (github) access.register(github.audience);
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
  if (sandboxes) {
    executor = new Executor({
      store,
      harnesses,
      dataDir: config.dataDir,
      slots: config.maxConcurrentRuns,
      leaseMs: config.leaseMs,
      pollIntervalMs: config.pollIntervalMs,
      log,
      sandboxes,
      environments: config.settings.environments,
      skills,
      diskQuota: {
        limitBytes: config.disk.runQuotaBytes,
        intervalMs: opts.diskCheckIntervalMs ?? DEFAULT_DISK_CHECK_INTERVAL_MS,
      },
      delivery: {
        serverUrl: config.delivery.serverUrl,
        remotes: { allowedHosts: config.settings.git.allowed_hosts, lookup: opts.lookup ?? systemLookup },
        gitAuthor: config.delivery.gitAuthor,
        prDraft: config.delivery.prDraft,
        ...(githubModules && githubClients
          ? { pullRequests: new githubModules.GitHubPullRequests(githubClients) }
          : {}),
        sessionLink: (run) => `${publicUrl}/sessions/${run.sessionId}`,
      },
      cost: {
        prices: config.cost.prices,
        ...(config.cost.defaultMaxCostUsd !== undefined
          ? { defaultMaxCostUsd: config.cost.defaultMaxCostUsd }
          : {}),
      },
    });
    await executor.start();
  }
  // Handle stored deliveries, also those acknowledged before a crash; connect in Socket Mode.
  await slack?.start();
  github?.start();
  // The notifier reports SLACK runs with the bot token and GITHUB_WEBHOOK runs through the GitHub clients.
  const notifierOptions = {
    ...DEFAULT_NOTIFIER_OPTIONS,
    stallAfterMs: config.stallAfterMs,
    ...opts.notifier,
  };
  const platforms: NotifierPlatform[] = [];
  if (config.slack && slackModules) {
    platforms.push(
      slackModules.slackNotifierPlatform({
        slack: new slackModules.WebApiSlackPoster(config.slack.botToken, { apiUrl: config.slackApiUrl, log }),
        store,
        editIntervalMs: notifierOptions.editIntervalMs,
      }),
    );
  }
  if (githubModules && githubClients) {
    platforms.push(
      githubModules.githubNotifierPlatform({
        clients: githubClients,
        store,
        editIntervalMs: notifierOptions.githubEditIntervalMs,
      }),
    );
  }
  const notifier =
    roles.has("notifier") && platforms.length > 0
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
  const scheduler = roles.has("scheduler")
    ? new Scheduler({ store, runService, log, ...opts.scheduler })
    : undefined;
  scheduler?.start();
  if (serveApi) roleStates.api = "serving";
  if (roles.has("worker")) {
    roleStates.worker = runsRefused
      ? `claiming no runs: ${runsRefused}`
      : runsExecutions
        ? `running up to ${config.maxConcurrentRuns} runs`
        : "idle: DISPATCH_MAX_CONCURRENT_RUNS is 0";
  }
  if (roles.has("notifier")) {
    roleStates.notifier = notifier ? "delivering" : "idle: neither Slack nor GitHub is configured";
  }
  if (scheduler) roleStates.scheduler = "firing";
  // Housekeeping: idempotency keys live 24 h (docs/api.md); inbound dedupe keys and delivered outbox rows a
  // week; finished runs' workspaces DISPATCH_WORKSPACE_RETENTION_HOURS.
  const housekeeping = setInterval(() => {
    const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
    const retentionMs = config.disk.workspaceRetentionMs;
    Promise.all([
      store.pruneIdempotencyKeys(ago(DAY_MS)),
      store.pruneInbox(ago(7 * DAY_MS)),
      store.pruneOutbox(ago(7 * DAY_MS)),
      store.pruneWebSignIns(ago(DAY_MS)),
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
        await scheduler?.stop(); // a firing under way commits (or not) before the store closes
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

import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { RunAccess } from "./access/run-access.ts";
import { loadSigningKey } from "./api/artifact-links.ts";
import { Metrics } from "./api/metrics.ts";
import { systemRoutes } from "./api/routes/system.ts";
import { buildServer } from "./api/server.ts";
import { ensureAdminKey } from "./auth/bootstrap.ts";
import type { Config } from "./config.ts";
import type { Lookup } from "./delivery/remote-access.ts";
import type { Executor } from "./executor/executor.ts";
import { unpricedModelOf } from "./executor/run-cost.ts";
import type { BuiltinHarnessOptions } from "./harnesses/builtin/builtin-harness.ts";
import type { ExternalHarnessOptions } from "./harnesses/external/external-harness.ts";
import { NOTIFIER_PRINCIPAL, type Notifier, type NotifierOptions } from "./notifier/index.ts";
import { registerApi } from "./roles/api.ts";
import { startHousekeeping } from "./roles/housekeeping.ts";
import { startNotifier } from "./roles/notifier.ts";
import { startWebhookSender } from "./roles/webhooks.ts";
import { buildHarnesses, openSandbox, skillResolver, startWorker } from "./roles/worker.ts";
import { RunBudgets } from "./runs/budget-answer.ts";
import { RunService } from "./runs/run-service.ts";
import { inProcessRunsApiFor, type RunsApi } from "./runs/runs-api.ts";
import { ScheduleService } from "./schedules/schedule-service.ts";
import { Scheduler, type SchedulerOptions } from "./schedules/scheduler.ts";
import { openStore } from "./store/open-store.ts";
import type { Store } from "./store/store.ts";
import { buildSurfaces } from "./surfaces/build.ts";
import { SURFACES } from "./surfaces/registry.ts";
import type { Surface, SurfaceDefinition } from "./surfaces/surface.ts";
import { startTracing } from "./telemetry/tracing.ts";
import { WebSignIn } from "./web/auth/web-sign-in.ts";
import type { WebhookSenderOptions } from "./webhooks/webhook-sender.ts";

export interface Dispatch {
  url: string;
  config: Config;
  store: Store;
  runService: RunService;
  /** Answers to runs that wait for budget (the API's route and this process's surfaces). */
  budgets: RunBudgets;
  executor: Executor | undefined;
  server: FastifyInstance;
  /** The configured surfaces (src/surfaces/registry.ts, plus any a test adds), by platform. */
  surfaces: ReadonlyMap<string, Surface>;
  /** The notifier (status cards, replies and reactions on every surface's threads), when a surface reports here. */
  notifier: Notifier | undefined;
  /** The admin key generated at this start, if one was (printed once by `dispatch serve`). */
  generatedAdminKey: string | undefined;
  stop(): Promise<void>;
}

/**
 * Wires the whole service from a configuration: the store, the access rule and the run service that every
 * role shares, then each role's parts, assembled in src/roles/ (api, worker, notifier, housekeeping) and
 * src/surfaces/ (every configured surface, built through one contract).
 */
export async function startDispatch(
  config: Config,
  log: Logger,
  opts: {
    notifier?: Partial<NotifierOptions>;
    /** Overrides for the builtin harness (tests inject a model resolver and short limits). */
    builtin?: Partial<BuiltinHarnessOptions>;
    /** Overrides for the external agent harnesses (claude, codex, gemini): tests shorten the limits. */
    external?: Omit<ExternalHarnessOptions, "provider">;
    /** Options for one surface by its platform (tests turn GitHub's request pacing off: { github: { throttle: false } }). */
    surfaceOptions?: Record<string, unknown>;
    /** Surfaces besides the registry's (a test's own surface, built through the same contract). */
    surfaces?: readonly SurfaceDefinition[];
    /** Pause between measurements of a running workspace's disk use (tests shorten it). */
    diskCheckIntervalMs?: number;
    /** The scheduler's clock and waits (tests run schedules on an accelerated clock). */
    scheduler?: Partial<Pick<SchedulerOptions, "now" | "speed" | "maxSleepMs" | "retryMs">>;
    /** The web app's clock (tests expire sign-in links and sessions without waiting). */
    web?: { now?: () => Date };
    /** How runs' git hosts resolve (tests give a name the addresses they choose); the system's DNS otherwise. */
    lookup?: Lookup;
    /** The webhook sender's pacing (tests poll often). */
    webhooks?: Partial<WebhookSenderOptions>;
  } = {},
): Promise<Dispatch> {
  const { roles } = config;
  const serveApi = roles.has("api");
  // Traces only when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/runtime.md, "Traces").
  const stopTracing = await startTracing();
  /** What /readyz reports per role; each is `starting` until it runs. */
  const roleStates: Record<string, string> = Object.fromEntries([...roles].map((role) => [role, "starting"]));
  const { sandboxes, runsRefused } = await openSandbox(config, log);
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
  // The one access rule for runs (docs/surfaces.md); each surface registers its threads' audience with it.
  const access = new RunAccess(store);
  const skills = skillResolver(config);
  const harnesses = buildHarnesses(config, opts);
  const runService = new RunService(store, {
    access,
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
  // Schedules are written through the API with the scheduler's clock, so both agree on what is due.
  const schedules = new ScheduleService(store, {
    limits: config.scheduleLimits,
    ...(opts.scheduler?.now ? { now: opts.scheduler.now } : {}),
  });
  const webSignIn = new WebSignIn({
    store,
    publicUrl: () => publicUrl,
    ...(opts.web?.now ? { now: opts.web.now } : {}),
  });
  // Remote mode: the surfaces and the notifier front another Dispatch instead of this one; the HTTP client
  // they talk through is loaded only then.
  const remoteRuns = config.runService
    ? new (await import("./runs/http-runs-api.ts")).HttpRunsApi({
        baseUrl: `${config.runService.url.replace(/\/+$/, "")}/api/v1`,
        apiKey: config.runService.apiKey,
      })
    : undefined;
  // One answerer of budgets for the API's route and the surfaces of this process alike.
  const budgets = new RunBudgets(runService, store, {
    budgets: config.cost.budgets,
    ...(config.cost.defaultMaxCostUsd !== undefined
      ? { defaultMaxCostUsd: config.cost.defaultMaxCostUsd }
      : {}),
  });
  const runsApiFor = async (
    who: { id: string; displayName: string },
    role: "member" | "read",
  ): Promise<RunsApi> =>
    remoteRuns ?? (await inProcessRunsApiFor(runService, budgets, () => publicUrl, { ...who, role }));
  const surfaces = await buildSurfaces(
    [...SURFACES, ...(opts.surfaces ?? [])],
    {
      config,
      log,
      store,
      access,
      inbound: serveApi,
      outbound: roles.has("notifier"),
      runsApi: (who) => runsApiFor(who, "member"),
      ...(remoteRuns
        ? {}
        : { serviceAccount: (who) => runService.ensureServiceAccount(who), schedules, webSignIn }),
      editIntervalMs: opts.notifier?.editIntervalMs ?? {},
      options: opts.surfaceOptions ?? {},
      publicUrl: () => publicUrl,
    },
    server,
    access,
  );
  const lent = [...surfaces.values()];
  if (serveApi) {
    registerApi(server, {
      config,
      store,
      runService,
      budgets,
      access,
      schedules,
      signingKey: await loadSigningKey(config.signingKey, config.dataDir),
      webSignIn,
      commentSignIn: lent.find((s) => s.commentSignIn)?.commentSignIn,
      publicUrl: () => publicUrl,
    });
  }

  await server.listen({ host: config.host, port: config.port });
  const address = server.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host}:${port}`;
  publicUrl ||= url;

  const executor = sandboxes
    ? await startWorker({
        config,
        log,
        store,
        sandboxes,
        harnesses,
        skills,
        pullRequests: lent.find((s) => s.pullRequests)?.pullRequests,
        publicUrl: () => publicUrl,
        ...(opts.diskCheckIntervalMs !== undefined ? { diskCheckIntervalMs: opts.diskCheckIntervalMs } : {}),
        ...(opts.lookup ? { lookup: opts.lookup } : {}),
      })
    : undefined;
  // Handle stored deliveries, also those acknowledged before a crash; connect in Socket Mode.
  for (const surface of lent) await surface.inbound?.start();
  const notifier = roles.has("notifier")
    ? await startNotifier({
        config,
        log,
        store,
        runsApi: () => runsApiFor(NOTIFIER_PRINCIPAL, "read"),
        surfaces: lent,
        metrics,
        ...(opts.notifier ? { options: opts.notifier } : {}),
      })
    : undefined;
  // A surface's own reporting (Linear's steps) goes through the outbox the notifier delivers.
  if (notifier) for (const surface of lent) surface.reporter?.start();
  const webhookSender = roles.has("notifier")
    ? startWebhookSender({
        config,
        log,
        store,
        metrics,
        publicUrl: () => publicUrl,
        ...(opts.webhooks ? { options: opts.webhooks } : {}),
      })
    : undefined;
  const scheduler = roles.has("scheduler")
    ? new Scheduler({ store, runService, log, ...opts.scheduler })
    : undefined;
  scheduler?.start();
  if (serveApi) roleStates.api = "serving";
  if (roles.has("worker")) {
    roleStates.worker = runsRefused
      ? `claiming no runs: ${runsRefused}`
      : executor
        ? `running up to ${config.maxConcurrentRuns} runs`
        : "idle: DISPATCH_MAX_CONCURRENT_RUNS is 0";
  }
  if (roles.has("notifier")) {
    roleStates.notifier = notifier ? "delivering" : "delivering webhooks only: no surface is configured";
  }
  if (scheduler) roleStates.scheduler = "firing";
  const stopHousekeeping = startHousekeeping(config, store, log);

  let stopping: Promise<void> | undefined;
  return {
    url,
    config,
    store,
    runService,
    budgets,
    executor,
    server,
    surfaces,
    notifier,
    generatedAdminKey,
    stop() {
      stopping ??= (async () => {
        accepting = false;
        stopHousekeeping();
        await scheduler?.stop(); // a firing under way commits (or not) before the store closes
        for (const surface of lent) await surface.inbound?.stop(); // lets acknowledged requests finish
        for (const surface of lent) await surface.reporter?.stop();
        await notifier?.stop(); // hands claimed outbox rows back
        await webhookSender?.stop(); // hands claimed webhook deliveries back
        await executor?.stop(config.shutdownGraceMs);
        await server.close();
        await store.close();
        await stopTracing?.(); // exports the spans still buffered
      })();
      return stopping;
    },
  };
}

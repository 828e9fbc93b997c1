import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { Metrics } from "./api/metrics.ts";
import { buildServer } from "./api/server.ts";
import { ensureAdminKey } from "./auth/bootstrap.ts";
import type { Config } from "./config.ts";
import { Executor } from "./executor/executor.ts";
import { HarnessRegistry } from "./executor/harness.ts";
import { ScriptedHarness } from "./executor/harnesses/scripted.ts";
import { createSlackIntegration, type SlackIntegration } from "./integrations/slack/index.ts";
import { createSlackNotifier, type NotifierOptions, type SlackNotifier } from "./notifier/index.ts";
import { renderStatusCard } from "./notifier/status-card.ts";
import { RunService } from "./runs/run-service.ts";
import { SqliteStore } from "./store/sqlite/sqlite-store.ts";
import type { Store } from "./store/store.ts";

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
  /** The Slack notifier (status cards, terminal replies), when SLACK_BOT_TOKEN is configured. */
  notifier: SlackNotifier | undefined;
  /** The admin key generated at this start, if one was (printed once by `dispatch serve`). */
  generatedAdminKey: string | undefined;
  stop(): Promise<void>;
}

/** Wires the whole service from a configuration: store, run service, HTTP server and executor. */
export async function startDispatch(
  config: Config,
  log: Logger,
  opts: { notifier?: Partial<NotifierOptions> } = {},
): Promise<Dispatch> {
  const store = new SqliteStore(config.databasePath, { busyTimeoutMs: config.sqliteBusyTimeoutMs });
  await store.migrate();
  const generatedAdminKey = await ensureAdminKey(store, config.adminApiKey);
  const runService = new RunService(store, {
    capacity: config.maxConcurrentRuns,
    ...(config.defaultModel ? { defaultModel: config.defaultModel } : {}),
  });
  const harnesses = new HarnessRegistry().register(new ScriptedHarness());

  let accepting = true;
  let publicUrl = config.publicUrl ?? "";
  const metrics = new Metrics(store);
  const server = buildServer({
    runService,
    metrics,
    logger: log,
    rateLimit: { perMinute: config.rateLimitPerMinute, burst: config.rateLimitBurst },
    publicUrl: () => publicUrl,
    isAccepting: () => accepting,
  });
  // Slack: the app answers POST /slack/events (or connects in Socket Mode); the notifier reports back.
  const slack = config.slack
    ? await createSlackIntegration({
        config: config.slack,
        settings: config.settings.slack,
        store,
        runService,
        publicUrl: () => publicUrl,
        log,
        renderStatus: (run, binding) => renderStatusCard(run, binding ?? null, Date.now()),
      })
    : undefined;
  slack?.register(server); // routes must exist before the server listens

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
    });
    await executor.start();
  }
  await slack?.start(); // connects in Socket Mode; nothing to do over HTTP
  const notifier = config.slack
    ? await createSlackNotifier({
        botToken: config.slack.botToken,
        apiUrl: config.slackApiUrl,
        store,
        runService,
        publicUrl: () => publicUrl,
        log,
        ...(opts.notifier ? { options: opts.notifier } : {}),
        onDelivery: (kind, outcome) => metrics.notifierDeliveries.inc({ kind, outcome }),
      })
    : undefined;
  notifier?.start();
  // Housekeeping: idempotency keys live 24 h (API.md); inbound dedupe keys and delivered outbox rows a week.
  const housekeeping = setInterval(() => {
    const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
    Promise.all([
      store.pruneIdempotencyKeys(ago(DAY_MS)),
      store.pruneInbox(ago(7 * DAY_MS)),
      store.pruneOutbox(ago(7 * DAY_MS)),
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
    notifier,
    generatedAdminKey,
    stop() {
      stopping ??= (async () => {
        accepting = false;
        clearInterval(housekeeping);
        await slack?.stop(); // lets acknowledged requests finish
        await notifier?.stop(); // hands claimed outbox rows back
        await executor?.stop(config.shutdownGraceMs);
        await server.close();
        await store.close();
      })();
      return stopping;
    },
  };
}

import { isIP } from "node:net";
import { resolve } from "node:path";
import { z } from "zod";
import { ConfigError, flag, parseVariables, problemRecorder, variablesFor } from "./config-env.ts";
import { DEFAULT_SETTINGS_FILE, loadSettings, type Settings, SettingsError } from "./config-file.ts";
import { loadGitHubConfig } from "./config-github.ts";
import { loadJiraConfig } from "./config-jira.ts";
import { priceTable } from "./model/pricing.ts";
import { DEFAULT_BLOCKED_TIMEOUT_S } from "./model/run-gates.ts";
import { ModelsEnvSchema, modelsConfig } from "./models-config.ts";

/**
 * Configuration from environment variables (README, "Configuration"). Validated once at start-up: a bad
 * value stops the process with a message naming the variable, never a surprise later.
 */

export { ConfigError } from "./config-env.ts";
export type { GitHubConfig, GitHubWebhookConfig } from "./config-github.ts";
export type { JiraConfig } from "./config-jira.ts";

/**
 * The parts of `dispatch serve`: `api` serves HTTP (API, Slack, GitHub, session pages), `worker` runs
 * executions, `notifier` delivers the outbox, `scheduler` fires schedules. Every process serves /healthz,
 * /readyz and /metrics whatever its roles.
 */
export const SERVE_ROLES = ["api", "worker", "notifier", "scheduler"] as const;
export type ServeRole = (typeof SERVE_ROLES)[number];

const intFrom = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const apiKey = () =>
  z
    .string()
    .regex(/^dsp_[A-Za-z0-9]{40}$/, "must look like dsp_ followed by 40 letters or digits")
    .optional();

const EnvSchema = z.object({
  DISPATCH_HOST: z.string().min(1).default("127.0.0.1"),
  DISPATCH_PORT: intFrom(0, 65535).default(8080),
  DISPATCH_PUBLIC_URL: z.url().optional(),
  DISPATCH_DATA_DIR: z.string().min(1).default("./data"),
  DATABASE_URL: z.string().optional(),
  DISPATCH_ADMIN_API_KEY: apiKey(),
  DISPATCH_MAX_CONCURRENT_RUNS: intFrom(0, 1000).default(4),
  DISPATCH_SCHEDULES_PER_TEAM: intFrom(1, 100_000).default(100),
  DISPATCH_SCHEDULES_PER_CREATOR: intFrom(1, 100_000).default(20),
  DISPATCH_ROLES: z
    .string()
    .default(SERVE_ROLES.join(","))
    .transform((v, ctx) => {
      const roles = v
        .split(",")
        .map((r) => r.trim())
        .filter(Boolean);
      const unknown = roles.filter((r) => !(SERVE_ROLES as readonly string[]).includes(r));
      if (roles.length === 0 || unknown.length > 0) {
        ctx.addIssue({
          code: "custom",
          message: `${unknown.length ? `unknown role ${unknown.join(", ")}; ` : ""}use a comma-separated list of ${SERVE_ROLES.join(", ")}`,
        });
        return z.NEVER;
      }
      return new Set(roles as ServeRole[]);
    }),
  DISPATCH_POLL_INTERVAL_MS: intFrom(10, 600_000).default(1000),
  DISPATCH_LEASE_MS: intFrom(1000, 3_600_000).default(30_000),
  DISPATCH_STALL_AFTER_S: intFrom(1, 604_800).default(300),
  DISPATCH_EGRESS_CIDRS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
      const cidrs = [
        ...new Set(
          v
            .split(",")
            .map((c) => c.trim())
            .filter(Boolean),
        ),
      ];
      const bad = cidrs.filter((c) => !isCidr(c));
      if (bad.length) {
        ctx.addIssue({
          code: "custom",
          message: `not a CIDR range: ${bad.join(", ")}; give a comma-separated list such as 203.0.113.0/24,2001:db8::/32`,
        });
        return z.NEVER;
      }
      return cidrs;
    }),
  DISPATCH_SHUTDOWN_GRACE_MS: intFrom(0, 600_000).default(10_000),
  DISPATCH_MAX_RESUMES: intFrom(0, 100).default(3),
  DISPATCH_BLOCKED_TIMEOUT_S: intFrom(1, 31_536_000).default(DEFAULT_BLOCKED_TIMEOUT_S),
  DISPATCH_CHECKPOINT_INTERVAL_S: intFrom(1, 86_400).default(60),
  DISPATCH_RATE_LIMIT_PER_MINUTE: intFrom(1, 10_000_000).default(1200),
  DISPATCH_RATE_LIMIT_BURST: intFrom(1, 10_000_000).default(200),
  DISPATCH_REQUEST_TIMEOUT_MS: intFrom(100, 3_600_000).default(30_000),
  DISPATCH_MAX_CONNECTIONS: intFrom(1, 1_000_000).default(1000),
  DISPATCH_MAX_EVENT_STREAMS: intFrom(1, 1_000_000).optional(),
  DISPATCH_MAX_EVENT_STREAMS_PER_CLIENT: intFrom(1, 1_000_000).default(20),
  DISPATCH_MAX_EVENT_STREAMS_PER_RUN: intFrom(1, 1_000_000).default(200),
  DISPATCH_STREAM_ACCESS_CHECK_S: intFrom(1, 3600).default(30),
  DISPATCH_TRUST_PROXY: z
    .string()
    .transform((v, ctx) => {
      const trust = parseTrustProxy(v);
      if (trust === undefined) {
        ctx.addIssue({
          code: "custom",
          message:
            "must be a comma-separated list of the addresses or CIDR ranges of the proxies in front of Dispatch (e.g. 10.0.0.0/8, or loopback, linklocal, uniquelocal); unset it when clients connect directly",
        });
        return z.NEVER;
      }
      return trust;
    })
    .optional(),
  DISPATCH_RUN_SERVICE_URL: z.url().optional(),
  DISPATCH_RUN_SERVICE_API_KEY: apiKey(),
  ...ModelsEnvSchema.shape,
  DISPATCH_SQLITE_BUSY_TIMEOUT_MS: intFrom(0, 60_000).default(2000),
  DISPATCH_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  DISPATCH_LOG_FORMAT: z.enum(["auto", "json", "pretty"]).default("auto"),
  DISPATCH_ACCESS_LOG: z.enum(["errors", "sample", "all", "off"]).default("errors"),
  DISPATCH_CONFIG_FILE: z.string().min(1).optional(),
  DISPATCH_SANDBOX: z.enum(["auto", "bwrap", "none"]).default("auto"),
  DISPATCH_BWRAP_PATH: z.string().min(1).optional(),
  DISPATCH_SANDBOX_MEMORY_MB: intFrom(0, 16_777_216).default(4096),
  DISPATCH_SANDBOX_PIDS_MAX: intFrom(0, 4_194_304).default(4096),
  DISPATCH_RUN_DISK_QUOTA_MB: intFrom(0, 1_073_741_824).default(10_240),
  DISPATCH_WORKSPACE_RETENTION_HOURS: intFrom(0, 876_000).default(168),
  DISPATCH_MIN_FREE_DISK_MB: intFrom(0, 1_073_741_824).default(1024),
  DISPATCH_MAX_COST_USD: z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a number of US dollars, such as 5 or 0.50")
    .transform(Number)
    .pipe(z.number().positive("must be more than 0 (unset it for no default cost limit)"))
    .optional(),
  GITHUB_SERVER_URL: z
    .string()
    .regex(/^(https?|file):\/\/\S+$/, "must be an https:// (or file://) URL such as https://github.com")
    .default("https://github.com")
    .transform((u) => u.replace(/\/+$/, "")),
  DISPATCH_ALLOW_FILE_REMOTES: flag(false),
  DISPATCH_GIT_AUTHOR: z
    .string()
    .regex(/^[^<>\n]+ <[^<>\s]+>$/, "must be a git author such as: Dispatch <dispatch@example.com>")
    .default("Dispatch <dispatch@localhost>"),
  DISPATCH_PR_DRAFT: flag(true),
  DISPATCH_SIGNING_KEY: z
    .string()
    .min(32, "must be at least 32 characters (e.g. openssl rand -hex 32)")
    .optional(),
  DISPATCH_WEBHOOK_RETRY_BASE_MS: intFrom(1, 3_600_000).default(5000),
  DISPATCH_WEBHOOK_MAX_ATTEMPTS: intFrom(1, 100).default(8),
  DISPATCH_WEBHOOK_ALLOW_PRIVATE: flag(false),
  DISPATCH_AUDIT_RETENTION_DAYS: intFrom(0, 36_500).default(365),
  SLACK_BOT_TOKEN: z
    .string()
    .regex(/^xox[a-z]-/, "must be a bot token (xoxb-…)")
    .optional(),
  SLACK_SIGNING_SECRET: z.string().min(8).optional(),
  SLACK_APP_TOKEN: z
    .string()
    .regex(/^xapp-/, "must be an app-level token (xapp-…)")
    .optional(),
  SLACK_API_URL: z
    .url()
    .default("https://slack.com/api/")
    .transform((u) => (u.endsWith("/") ? u : `${u}/`)),
  SLACK_COMMAND: z
    .string()
    .regex(/^\/[a-z0-9_-]{1,31}$/, "must be a slash command such as /agent")
    .default("/agent"),
  LINEAR_ACCESS_TOKEN: z
    .string()
    .min(8, "must be the Linear app's OAuth access token (actor=app)")
    .optional(),
  LINEAR_WEBHOOK_SECRET: z.string().min(8, "must be at least 8 characters").optional(),
  LINEAR_API_URL: z.url().default("https://api.linear.app/graphql"),
});

/**
 * DISPATCH_TRUST_PROXY as Fastify's trustProxy takes it: the proxies' addresses and CIDR ranges (and
 * proxy-addr's names loopback, linklocal, uniquelocal), comma-separated; undefined when it is not. "true"
 * (anyone's X-Forwarded-For) and hop counts (Fastify trusts no peer for those) are not accepted: only a
 * proxy known by its address may name the client.
 */
export function parseTrustProxy(value: string): string | undefined {
  const entries = value.split(",").map((entry) => entry.trim());
  const valid = (entry: string) => {
    if (["loopback", "linklocal", "uniquelocal"].includes(entry)) return true;
    const [address = "", prefix, extra] = entry.split("/");
    const family = isIP(address);
    if (family === 0 || extra !== undefined) return false;
    return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
  };
  return entries.length > 0 && entries.every(valid) ? entries.join(",") : undefined;
}

/** A postgres:// (or postgresql://) URL that names a host. */
export function isPostgresUrl(value: string): boolean {
  if (!/^postgres(ql)?:\/\//.test(value)) return false;
  try {
    return new URL(value).hostname !== "";
  } catch {
    return false;
  }
}

/**
 * The configuration: each variable checked on its own, then the ones that only make sense together,
 * then dispatch.config.yaml and the GitHub variables (which stop with their own ConfigError). `env` is
 * the whole environment, for the variables that settings name (models.openai_compatible.api_key_env).
 */
const configSchema = (env: NodeJS.ProcessEnv) =>
  EnvSchema.transform((e, ctx) => {
    const problems = problemRecorder(ctx);
    const postgresUrl = e.DATABASE_URL && isPostgresUrl(e.DATABASE_URL) ? e.DATABASE_URL : undefined;
    if (e.DATABASE_URL && !postgresUrl && !e.DATABASE_URL.startsWith("sqlite:")) {
      problems.add(
        "DATABASE_URL",
        "must be a PostgreSQL URL (postgres://user:password@host:5432/dispatch) or sqlite:<path>; unset it for the embedded SQLite store",
      );
    }
    if (e.DISPATCH_RUN_SERVICE_URL && !e.DISPATCH_RUN_SERVICE_API_KEY) {
      problems.add(
        "DISPATCH_RUN_SERVICE_API_KEY",
        "required with DISPATCH_RUN_SERVICE_URL (an admin key of that service)",
      );
    }
    if (!e.DISPATCH_RUN_SERVICE_URL && e.DISPATCH_RUN_SERVICE_API_KEY) {
      problems.add("DISPATCH_RUN_SERVICE_URL", "required with DISPATCH_RUN_SERVICE_API_KEY");
    }
    if (e.SLACK_BOT_TOKEN && !e.SLACK_SIGNING_SECRET && !e.SLACK_APP_TOKEN) {
      problems.add(
        "SLACK_SIGNING_SECRET",
        "required with SLACK_BOT_TOKEN (or set SLACK_APP_TOKEN for Socket Mode)",
      );
    }
    if (!e.SLACK_BOT_TOKEN && (e.SLACK_SIGNING_SECRET || e.SLACK_APP_TOKEN)) {
      problems.add("SLACK_BOT_TOKEN", "required to enable the Slack app");
    }
    if (e.LINEAR_ACCESS_TOKEN && !e.LINEAR_WEBHOOK_SECRET && e.DISPATCH_ROLES.has("api")) {
      problems.add("LINEAR_WEBHOOK_SECRET", "required with LINEAR_ACCESS_TOKEN to receive Linear webhooks");
    }
    if (!e.LINEAR_ACCESS_TOKEN && e.LINEAR_WEBHOOK_SECRET) {
      problems.add("LINEAR_ACCESS_TOKEN", "required to enable the Linear agent");
    }
    // Streams past this many are refused (429), so that this many connections stay for everything else.
    const maxEventStreams =
      e.DISPATCH_MAX_EVENT_STREAMS ??
      Math.max(1, e.DISPATCH_MAX_CONNECTIONS - Math.ceil(e.DISPATCH_MAX_CONNECTIONS / 5));
    if (maxEventStreams >= e.DISPATCH_MAX_CONNECTIONS) {
      problems.add(
        "DISPATCH_MAX_EVENT_STREAMS",
        `must be less than DISPATCH_MAX_CONNECTIONS (${e.DISPATCH_MAX_CONNECTIONS}): the connections left over serve API calls, webhooks and health checks while streams are at their cap`,
      );
    }
    if (problems.found) return z.NEVER;

    const settings = readSettings(e.DISPATCH_CONFIG_FILE);
    const dataDir = resolve(e.DISPATCH_DATA_DIR);
    return {
      host: e.DISPATCH_HOST,
      port: e.DISPATCH_PORT,
      /** Base of links handed to people (session pages); defaults to the listening address. */
      publicUrl: e.DISPATCH_PUBLIC_URL?.replace(/\/+$/, ""),
      dataDir,
      databasePath:
        e.DATABASE_URL && !postgresUrl
          ? e.DATABASE_URL.slice("sqlite:".length)
          : resolve(dataDir, "dispatch.db"),
      /** DATABASE_URL when it names PostgreSQL: the store is then PostgreSQL, shared by every replica. */
      postgresUrl,
      adminApiKey: e.DISPATCH_ADMIN_API_KEY,
      maxConcurrentRuns: e.DISPATCH_MAX_CONCURRENT_RUNS,
      /**
       * How many schedules a team, and one person in it, may own (DISPATCH_SCHEDULES_PER_TEAM,
       * DISPATCH_SCHEDULES_PER_CREATOR): a create over either is refused.
       */
      scheduleLimits: {
        perTeam: e.DISPATCH_SCHEDULES_PER_TEAM,
        perCreator: e.DISPATCH_SCHEDULES_PER_CREATOR,
      },
      /** What this process does (`dispatch serve --role`): replicas split the service by role. */
      roles: e.DISPATCH_ROLES,
      pollIntervalMs: e.DISPATCH_POLL_INTERVAL_MS,
      leaseMs: e.DISPATCH_LEASE_MS,
      /** A run in progress with no transcript event for this long is shown as stalled (model/stall.ts). */
      stallAfterMs: e.DISPATCH_STALL_AFTER_S * 1000,
      /**
       * The ranges runs' traffic leaves this deployment from (DISPATCH_EGRESS_CIDRS), as the operator states
       * them for others' allowlists; GET /networking/egress-ranges answers them. Undefined: not published.
       */
      egressCidrs: e.DISPATCH_EGRESS_CIDRS,
      /** How long a stopping worker lets each agent finish its step before it hands the run back. */
      shutdownGraceMs: e.DISPATCH_SHUTDOWN_GRACE_MS,
      /**
       * Runs survive their worker (docs/architecture.md): resumes of an execution after lost workers before
       * it ends ERROR (DISPATCH_MAX_RESUMES), and the longest time between two checkpoints of a working run.
       */
      /** How long a run waits for a person (BLOCKED) before it is cancelled (model/run-gates.ts). */
      blockedTimeoutS: e.DISPATCH_BLOCKED_TIMEOUT_S,
      resume: {
        maxResumes: e.DISPATCH_MAX_RESUMES,
        checkpointIntervalMs: e.DISPATCH_CHECKPOINT_INTERVAL_S * 1000,
      },
      rateLimitPerMinute: e.DISPATCH_RATE_LIMIT_PER_MINUTE,
      rateLimitBurst: e.DISPATCH_RATE_LIMIT_BURST,
      /**
       * A request (headers and body) must arrive within requestTimeoutMs; at most maxConnections sockets are
       * open at once, event streams included. Event streams are capped below that, in all and per client and
       * run. trustProxy says whose X-Forwarded-For names the client (false: the connection's address).
       */
      http: {
        requestTimeoutMs: e.DISPATCH_REQUEST_TIMEOUT_MS,
        maxConnections: e.DISPATCH_MAX_CONNECTIONS,
        trustProxy: e.DISPATCH_TRUST_PROXY ?? (false as const),
        eventStreams: {
          max: maxEventStreams,
          perClient: e.DISPATCH_MAX_EVENT_STREAMS_PER_CLIENT,
          perRun: e.DISPATCH_MAX_EVENT_STREAMS_PER_RUN,
        },
        /**
         * How often an open event stream or dashboard feed asks the access rule again whether its viewer
         * still sees what it shows (they left a channel, lost a permission, signed out, had their key revoked).
         */
        streamAccessCheckMs: e.DISPATCH_STREAM_ACCESS_CHECK_S * 1000,
      },
      defaultModel: e.DISPATCH_DEFAULT_MODEL,
      /**
       * Remote mode: the integrations and the notifier reach runs in another Dispatch (or an Oz-compatible
       * service) over HTTP instead of this process's run service.
       */
      runService:
        e.DISPATCH_RUN_SERVICE_URL && e.DISPATCH_RUN_SERVICE_API_KEY
          ? { url: e.DISPATCH_RUN_SERVICE_URL, apiKey: e.DISPATCH_RUN_SERVICE_API_KEY }
          : undefined,
      /**
       * Model providers, keys and aliases for the builtin harness (read in this process only, never in a
       * sandbox).
       */
      models: modelsConfig(e, settings.models, env),
      sqliteBusyTimeoutMs: e.DISPATCH_SQLITE_BUSY_TIMEOUT_MS,
      logLevel: e.DISPATCH_LOG_LEVEL,
      /** auto: pretty-printed when stdout is a terminal (and CI is not set), JSON lines otherwise. */
      logFormat: e.DISPATCH_LOG_FORMAT,
      /**
       * One line per HTTP request: errors = only answers ≥ 500 (every request at debug level), sample = also
       * 1 request in 100 at info, all = every request at info, off = none (faults are logged regardless).
       */
      accessLog: e.DISPATCH_ACCESS_LOG,
      /** The Slack app, when SLACK_BOT_TOKEN is set with a way to receive events. */
      slack: e.SLACK_BOT_TOKEN
        ? {
            botToken: e.SLACK_BOT_TOKEN,
            /** Verifies requests to POST /slack/events; absent in Socket Mode only installs. */
            signingSecret: e.SLACK_SIGNING_SECRET,
            /** Socket Mode (no public URL needed) when set. */
            appToken: e.SLACK_APP_TOKEN,
            apiUrl: e.SLACK_API_URL,
            command: e.SLACK_COMMAND,
          }
        : undefined,
      /** The Slack Web API base (SLACK_API_URL, ends in /); also used by the notifier. */
      slackApiUrl: e.SLACK_API_URL,
      /**
       * The Linear agent (docs/surfaces.md), when LINEAR_ACCESS_TOKEN is set: the app's token, the secret
       * that verifies POST /linear/webhooks (unset only without the api role) and the GraphQL endpoint.
       */
      linear: e.LINEAR_ACCESS_TOKEN
        ? {
            accessToken: e.LINEAR_ACCESS_TOKEN,
            webhookSecret: e.LINEAR_WEBHOOK_SECRET,
            apiUrl: e.LINEAR_API_URL,
          }
        : undefined,
      /** dispatch.config.yaml (or its defaults). */
      settings,
      /**
       * The GitHub integration, when GITHUB_APP_ID or GITHUB_TOKEN is set (see loadGitHubConfig): webhooks
       * with the api role, pull requests and comments with the others.
       */
      github: loadGitHubConfig(env, { receivesWebhooks: e.DISPATCH_ROLES.has("api") }),
      /** The Jira surface, when JIRA_BASE_URL is set (see loadJiraConfig): Cloud or Data Center. */
      jira: loadJiraConfig(env, { receivesWebhooks: e.DISPATCH_ROLES.has("api") }),
      /** How runs' commands are isolated (DISPATCH_SANDBOX, DISPATCH_BWRAP_PATH, DISPATCH_SANDBOX_*). */
      sandbox: {
        /**
         * auto: bubblewrap, and without it the API serves but runs are refused; bwrap: required at start;
         * none: plain subprocesses, the operator's explicit choice.
         */
        mode: e.DISPATCH_SANDBOX,
        bwrapPath: e.DISPATCH_BWRAP_PATH,
        /** Per-run cgroup limits where cgroups are writable; 0 = none. */
        memoryBytes: e.DISPATCH_SANDBOX_MEMORY_MB * 2 ** 20,
        pidsMax: e.DISPATCH_SANDBOX_PIDS_MAX,
        /** Files Dispatch reads secrets from (the settings file, the App's key), hidden from runs. */
        secretFiles: secretFiles(e.DISPATCH_CONFIG_FILE, env.GITHUB_PRIVATE_KEY),
      },
      /** Where runs' work goes (docs/delivery.md): the git server, who commits, whether PRs are drafts. */
      delivery: {
        /** GITHUB_SERVER_URL: clones and pushes of owner/repo go to `${serverUrl}/owner/repo.git`. */
        serverUrl: e.GITHUB_SERVER_URL,
        /** Whether runs may name file:// repositories (tests, air-gapped mirrors). */
        allowFileRemotes: e.DISPATCH_ALLOW_FILE_REMOTES,
        gitAuthor: {
          name: e.DISPATCH_GIT_AUTHOR.slice(0, e.DISPATCH_GIT_AUTHOR.indexOf(" <")),
          email: e.DISPATCH_GIT_AUTHOR.slice(e.DISPATCH_GIT_AUTHOR.indexOf(" <") + 2, -1),
        },
        prDraft: e.DISPATCH_PR_DRAFT,
      },
      /**
       * Signs artifact download links (HMAC-SHA256); unset: a random key kept in the data directory
       * (signing-key, mode 0600), so links stay valid across restarts.
       */
      signingKey: e.DISPATCH_SIGNING_KEY,
      /** Disk use of runs and of the data directory (DISPATCH_RUN_DISK_QUOTA_MB and the others below). */
      disk: {
        /** What one run's workspace may hold on disk; 0 = no quota. */
        runQuotaBytes: e.DISPATCH_RUN_DISK_QUOTA_MB * 2 ** 20,
        /** How long a finished run's workspace is kept for follow-ups; 0 = for ever. */
        workspaceRetentionMs: e.DISPATCH_WORKSPACE_RETENTION_HOURS * 3_600_000,
        /** /readyz fails below this much free space on the data directory's filesystem; 0 = no check. */
        minFreeBytes: e.DISPATCH_MIN_FREE_DISK_MB * 2 ** 20,
      },
      /**
       * Run costs: model prices (Dispatch's defaults with dispatch.config.yaml `prices:` on top), the cost
       * limit of a run that sets no config.max_cost_usd (DISPATCH_MAX_COST_USD or budgets.run_usd; none when
       * unset) and the monthly budgets (docs/runtime.md, "Budgets").
       */
      cost: {
        prices: priceTable(settings.prices),
        defaultMaxCostUsd: defaultRunLimit(e.DISPATCH_MAX_COST_USD, settings.budgets.run_usd),
        budgets: settings.budgets,
      },
      /**
       * Outbound webhooks (docs/api.md): the first retry's wait (doubling after each), the attempts before a
       * delivery fails, and whether loopback and private addresses may receive them.
       */
      webhooks: {
        retryBaseMs: e.DISPATCH_WEBHOOK_RETRY_BASE_MS,
        maxAttempts: e.DISPATCH_WEBHOOK_MAX_ATTEMPTS,
        allowPrivate: e.DISPATCH_WEBHOOK_ALLOW_PRIVATE,
      },
      /** How long audit entries are kept (DISPATCH_AUDIT_RETENTION_DAYS); 0 = for ever. */
      auditRetentionMs: e.DISPATCH_AUDIT_RETENTION_DAYS * 24 * 3_600_000,
    };
  });

export type Config = z.output<ReturnType<typeof configSchema>>;
export type SandboxConfig = Config["sandbox"];
export type SlackConfig = NonNullable<Config["slack"]>;
export type LinearConfig = NonNullable<Config["linear"]>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return parseVariables(configSchema(env), variablesFor(EnvSchema, env));
}

function readSettings(file: string | undefined): Settings {
  try {
    return loadSettings(file);
  } catch (err) {
    if (err instanceof SettingsError) throw new ConfigError(err.message);
    throw err;
  }
}

/** The default limit of a run, set in one place: DISPATCH_MAX_COST_USD or budgets.run_usd, not both. */
function defaultRunLimit(variable: number | undefined, setting: number | undefined): number | undefined {
  if (variable !== undefined && setting !== undefined && variable !== setting) {
    throw new ConfigError(
      `DISPATCH_MAX_COST_USD (${variable}) and budgets.run_usd (${setting}) in dispatch.config.yaml both set a run's default cost limit; keep one of them`,
    );
  }
  return variable ?? setting;
}

function secretFiles(configFile: string | undefined, privateKey: string | undefined): string[] {
  return [
    resolve(configFile ?? DEFAULT_SETTINGS_FILE),
    ...(privateKey && !privateKey.includes("-----BEGIN") ? [resolve(privateKey)] : []),
  ];
}

/** `address/prefix` with an IPv4 or IPv6 address and a prefix length in range. */
function isCidr(value: string): boolean {
  const [address, prefix, ...rest] = value.split("/");
  if (rest.length || !address || !prefix || !/^\d{1,3}$/.test(prefix)) return false;
  const version = isIP(address);
  return version !== 0 && Number(prefix) <= (version === 4 ? 32 : 128);
}

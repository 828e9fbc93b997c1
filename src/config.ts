import { resolve } from "node:path";
import { z } from "zod";
import { loadSettings, type Settings, SettingsError } from "./config-file.ts";

/**
 * Configuration from environment variables (DESIGN.md). Validated once at start-up: a bad value stops
 * the process with a message naming the variable, never a surprise later.
 */
const intFrom = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const EnvSchema = z.object({
  DISPATCH_HOST: z.string().min(1).default("127.0.0.1"),
  DISPATCH_PORT: intFrom(0, 65535).default(8080),
  DISPATCH_PUBLIC_URL: z.url().optional(),
  DISPATCH_DATA_DIR: z.string().min(1).default("./data"),
  DATABASE_URL: z.string().optional(),
  DISPATCH_ADMIN_API_KEY: z
    .string()
    .regex(/^dsp_[A-Za-z0-9]{40}$/, "must look like dsp_ followed by 40 letters or digits")
    .optional(),
  DISPATCH_MAX_CONCURRENT_RUNS: intFrom(0, 1000).default(4),
  DISPATCH_POLL_INTERVAL_MS: intFrom(10, 600_000).default(1000),
  DISPATCH_LEASE_MS: intFrom(1000, 3_600_000).default(30_000),
  DISPATCH_SHUTDOWN_GRACE_MS: intFrom(0, 600_000).default(10_000),
  DISPATCH_RATE_LIMIT_PER_MINUTE: intFrom(1, 10_000_000).default(1200),
  DISPATCH_RATE_LIMIT_BURST: intFrom(1, 10_000_000).default(200),
  DISPATCH_DEFAULT_MODEL: z.string().min(1).optional(),
  DISPATCH_SQLITE_BUSY_TIMEOUT_MS: intFrom(0, 60_000).default(2000),
  DISPATCH_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  DISPATCH_CONFIG_FILE: z.string().min(1).optional(),
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
});

export interface Config {
  host: string;
  port: number;
  /** Base of links handed to people (session pages); defaults to the listening address. */
  publicUrl: string | undefined;
  dataDir: string;
  databasePath: string;
  adminApiKey: string | undefined;
  maxConcurrentRuns: number;
  pollIntervalMs: number;
  leaseMs: number;
  shutdownGraceMs: number;
  rateLimitPerMinute: number;
  rateLimitBurst: number;
  defaultModel: string | undefined;
  sqliteBusyTimeoutMs: number;
  logLevel: string;
  /** The Slack app, when SLACK_BOT_TOKEN is set with a way to receive events. */
  slack: SlackConfig | undefined;
  /** The Slack Web API base (SLACK_API_URL, ends in /); also used by the notifier. */
  slackApiUrl: string;
  /** dispatch.config.yaml (or its defaults). */
  settings: Settings;
}

export interface SlackConfig {
  botToken: string;
  /** Verifies requests to POST /slack/events; absent in Socket Mode only installs. */
  signingSecret: string | undefined;
  /** Socket Mode (no public URL needed) when set. */
  appToken: string | undefined;
  apiUrl: string;
  command: string;
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(
    Object.fromEntries(Object.entries(env).filter(([k, v]) => k in EnvSchema.shape && v !== "")),
  );
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  if (e.DATABASE_URL && !e.DATABASE_URL.startsWith("sqlite:")) {
    throw new ConfigError(
      "Invalid configuration:\n  DATABASE_URL: only the embedded SQLite store is available in this version; unset DATABASE_URL (or use sqlite:<path>)",
    );
  }
  const dataDir = resolve(e.DISPATCH_DATA_DIR);
  let settings: Settings;
  try {
    settings = loadSettings(e.DISPATCH_CONFIG_FILE);
  } catch (err) {
    if (err instanceof SettingsError) throw new ConfigError(err.message);
    throw err;
  }
  if (e.SLACK_BOT_TOKEN && !e.SLACK_SIGNING_SECRET && !e.SLACK_APP_TOKEN) {
    throw new ConfigError(
      "Invalid configuration:\n  SLACK_SIGNING_SECRET: required with SLACK_BOT_TOKEN (or set SLACK_APP_TOKEN for Socket Mode)",
    );
  }
  if (!e.SLACK_BOT_TOKEN && (e.SLACK_SIGNING_SECRET || e.SLACK_APP_TOKEN)) {
    throw new ConfigError("Invalid configuration:\n  SLACK_BOT_TOKEN: required to enable the Slack app");
  }
  return {
    host: e.DISPATCH_HOST,
    port: e.DISPATCH_PORT,
    publicUrl: e.DISPATCH_PUBLIC_URL?.replace(/\/+$/, ""),
    dataDir,
    databasePath: e.DATABASE_URL ? e.DATABASE_URL.slice("sqlite:".length) : resolve(dataDir, "dispatch.db"),
    adminApiKey: e.DISPATCH_ADMIN_API_KEY,
    maxConcurrentRuns: e.DISPATCH_MAX_CONCURRENT_RUNS,
    pollIntervalMs: e.DISPATCH_POLL_INTERVAL_MS,
    leaseMs: e.DISPATCH_LEASE_MS,
    shutdownGraceMs: e.DISPATCH_SHUTDOWN_GRACE_MS,
    rateLimitPerMinute: e.DISPATCH_RATE_LIMIT_PER_MINUTE,
    rateLimitBurst: e.DISPATCH_RATE_LIMIT_BURST,
    defaultModel: e.DISPATCH_DEFAULT_MODEL,
    sqliteBusyTimeoutMs: e.DISPATCH_SQLITE_BUSY_TIMEOUT_MS,
    logLevel: e.DISPATCH_LOG_LEVEL,
    slack: e.SLACK_BOT_TOKEN
      ? {
          botToken: e.SLACK_BOT_TOKEN,
          signingSecret: e.SLACK_SIGNING_SECRET,
          appToken: e.SLACK_APP_TOKEN,
          apiUrl: e.SLACK_API_URL,
          command: e.SLACK_COMMAND,
        }
      : undefined,
    slackApiUrl: e.SLACK_API_URL,
    settings,
  };
}

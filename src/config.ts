import { createPrivateKey } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { loadSettings, type Settings, SettingsError } from "./config-file.ts";
import type { ModelsConfig } from "./executor/harnesses/builtin/models.ts";

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
  DISPATCH_RUN_SERVICE_URL: z.url().optional(),
  DISPATCH_RUN_SERVICE_API_KEY: z
    .string()
    .regex(/^dsp_[A-Za-z0-9]{40}$/, "must look like dsp_ followed by 40 letters or digits")
    .optional(),
  ANTHROPIC_API_KEY: z.string().min(1).optional(),
  ANTHROPIC_BASE_URL: z.url().optional(),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: z.url().optional(),
  OPENAI_COMPATIBLE_BASE_URL: z.url().optional(),
  OPENAI_COMPATIBLE_API_KEY: z.string().min(1).optional(),
  DISPATCH_SQLITE_BUSY_TIMEOUT_MS: intFrom(0, 60_000).default(2000),
  DISPATCH_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  DISPATCH_CONFIG_FILE: z.string().min(1).optional(),
  DISPATCH_SANDBOX: z.enum(["auto", "bwrap", "none"]).default("auto"),
  DISPATCH_BWRAP_PATH: z.string().min(1).optional(),
  DISPATCH_SANDBOX_MEMORY_MB: intFrom(0, 16_777_216).default(4096),
  DISPATCH_SANDBOX_PIDS_MAX: intFrom(0, 4_194_304).default(4096),
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
  /** Model providers, keys and aliases for the builtin harness (read in this process only, never in a sandbox). */
  models: ModelsConfig;
  sqliteBusyTimeoutMs: number;
  logLevel: string;
  /** The Slack app, when SLACK_BOT_TOKEN is set with a way to receive events. */
  slack: SlackConfig | undefined;
  /** The Slack Web API base (SLACK_API_URL, ends in /); also used by the notifier. */
  slackApiUrl: string;
  /** dispatch.config.yaml (or its defaults). */
  settings: Settings;
  /**
   * Remote mode: the integrations and the notifier reach runs in another Dispatch (or an Oz-compatible
   * service) over HTTP instead of this process's run service.
   */
  runService: { url: string; apiKey: string } | undefined;
  /** The GitHub integration, when GITHUB_APP_ID or GITHUB_TOKEN is set (see loadGitHubConfig). */
  github: GitHubConfig | undefined;
  /** How runs' commands are isolated (DISPATCH_SANDBOX, DISPATCH_BWRAP_PATH, DISPATCH_SANDBOX_*). */
  sandbox: SandboxConfig;
}

export interface SandboxConfig {
  /** auto: bubblewrap where it works, else plain subprocesses with a warning; bwrap: required; none: off. */
  mode: "auto" | "bwrap" | "none";
  bwrapPath: string | undefined;
  /** Per-run cgroup limits where cgroups are writable; 0 = none. */
  memoryBytes: number;
  pidsMax: number;
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
  if (Boolean(e.DISPATCH_RUN_SERVICE_URL) !== Boolean(e.DISPATCH_RUN_SERVICE_API_KEY)) {
    throw new ConfigError(
      e.DISPATCH_RUN_SERVICE_URL
        ? "Invalid configuration:\n  DISPATCH_RUN_SERVICE_API_KEY: required with DISPATCH_RUN_SERVICE_URL (an admin key of that service)"
        : "Invalid configuration:\n  DISPATCH_RUN_SERVICE_URL: required with DISPATCH_RUN_SERVICE_API_KEY",
    );
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
    runService: e.DISPATCH_RUN_SERVICE_URL
      ? { url: e.DISPATCH_RUN_SERVICE_URL, apiKey: e.DISPATCH_RUN_SERVICE_API_KEY! }
      : undefined,
    models: {
      defaultModel: e.DISPATCH_DEFAULT_MODEL,
      aliases: settings.models.aliases,
      anthropic: { apiKey: e.ANTHROPIC_API_KEY, baseUrl: e.ANTHROPIC_BASE_URL },
      openai: { apiKey: e.OPENAI_API_KEY, baseUrl: e.OPENAI_BASE_URL },
      openaiCompatible: {
        baseUrl: e.OPENAI_COMPATIBLE_BASE_URL ?? settings.models.openai_compatible.base_url,
        apiKey:
          e.OPENAI_COMPATIBLE_API_KEY ??
          (settings.models.openai_compatible.api_key_env
            ? env[settings.models.openai_compatible.api_key_env] || undefined
            : undefined),
      },
    },
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
    github: loadGitHubConfig(env),
    sandbox: {
      mode: e.DISPATCH_SANDBOX,
      bwrapPath: e.DISPATCH_BWRAP_PATH,
      memoryBytes: e.DISPATCH_SANDBOX_MEMORY_MB * 2 ** 20,
      pidsMax: e.DISPATCH_SANDBOX_PIDS_MAX,
    },
  };
}

// --- GitHub (issue 4) ---------------------------------------------------------------------------

const GitHubEnvSchema = z.object({
  GITHUB_APP_ID: z
    .string()
    .regex(/^\d{1,20}$/, "must be the App's numeric id")
    .optional(),
  GITHUB_PRIVATE_KEY: z.string().min(1).optional(),
  GITHUB_WEBHOOK_SECRET: z.string().min(8, "must be at least 8 characters").optional(),
  GITHUB_TOKEN: z.string().min(8, "must be a GitHub token (ghp_…, github_pat_…)").optional(),
  GITHUB_API_URL: z
    .url()
    .default("https://api.github.com")
    .transform((u) => u.replace(/\/+$/, "")),
  GITHUB_BOT_HANDLE: z
    .string()
    .transform((h) => h.replace(/^@/, ""))
    .pipe(z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/, "must be a GitHub login such as dispatch"))
    .optional(),
});

export interface GitHubConfig {
  /** A GitHub App (installation tokens) or a token. */
  auth: { kind: "app"; appId: string; privateKey: string } | { kind: "token"; token: string };
  /** The App id, to recognise comments posted through this App. */
  appId: string | undefined;
  /** Verifies X-Hub-Signature-256 of POST /github/webhooks. */
  webhookSecret: string;
  /** GITHUB_API_URL without a trailing slash. */
  apiUrl: string;
  /** The @mention, without the @ (an App's slug: comments then come from "<slug>[bot]"). */
  botHandle: string;
}

/**
 * GITHUB_* variables: undefined when neither GITHUB_APP_ID nor GITHUB_TOKEN is set (and nothing else of
 * GitHub's is), else a complete, checked configuration. GITHUB_PRIVATE_KEY is the PEM itself (newlines
 * may be written as \n) or the path of a PEM file.
 */
export function loadGitHubConfig(env: NodeJS.ProcessEnv): GitHubConfig | undefined {
  const given = Object.fromEntries(
    Object.entries(env).filter(([k, v]) => k in GitHubEnvSchema.shape && v !== undefined && v !== ""),
  );
  const fail = (name: string, message: string): never => {
    throw new ConfigError(`Invalid configuration:\n  ${name}: ${message}`);
  };
  const { GITHUB_API_URL: _url, ...set } = given;
  if (!set.GITHUB_APP_ID && !set.GITHUB_TOKEN) {
    const stray = Object.keys(set)[0];
    if (stray)
      fail("GITHUB_APP_ID", `required (or GITHUB_TOKEN) to enable the GitHub integration; ${stray} is set`);
    return undefined;
  }
  const parsed = GitHubEnvSchema.safeParse(given);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  if (e.GITHUB_APP_ID && e.GITHUB_TOKEN)
    fail("GITHUB_TOKEN", "set either GITHUB_APP_ID (a GitHub App) or GITHUB_TOKEN, not both");
  if (!e.GITHUB_WEBHOOK_SECRET) fail("GITHUB_WEBHOOK_SECRET", "required to receive GitHub webhooks");
  if (!e.GITHUB_BOT_HANDLE) fail("GITHUB_BOT_HANDLE", "required: the @mention people write, e.g. dispatch");
  let auth: GitHubConfig["auth"];
  if (e.GITHUB_APP_ID) {
    if (!e.GITHUB_PRIVATE_KEY)
      fail("GITHUB_PRIVATE_KEY", "required with GITHUB_APP_ID (the App's PEM, or its path)");
    auth = { kind: "app", appId: e.GITHUB_APP_ID, privateKey: readPrivateKey(e.GITHUB_PRIVATE_KEY!) };
  } else {
    auth = { kind: "token", token: e.GITHUB_TOKEN! };
  }
  return {
    auth,
    appId: e.GITHUB_APP_ID,
    webhookSecret: e.GITHUB_WEBHOOK_SECRET!,
    apiUrl: e.GITHUB_API_URL,
    botHandle: e.GITHUB_BOT_HANDLE!,
  };
}

function readPrivateKey(value: string): string {
  let pem = value.includes("-----BEGIN") ? value.replace(/\\n/g, "\n") : undefined;
  if (pem === undefined) {
    const path = resolve(value);
    if (!existsSync(path)) {
      throw new ConfigError(
        `Invalid configuration:\n  GITHUB_PRIVATE_KEY: neither a PEM key nor an existing file (${path})`,
      );
    }
    pem = readFileSync(path, "utf8");
  }
  try {
    createPrivateKey(pem);
  } catch (err) {
    throw new ConfigError(
      `Invalid configuration:\n  GITHUB_PRIVATE_KEY: not a readable private key (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  return pem;
}

// --- end GitHub ------------------------------------------------------------------------------------

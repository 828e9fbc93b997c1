import { LogLevel, type Logger as SlackLogger, WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import { SendError } from "../../notifier/platform.ts";

/**
 * The three Slack Web API calls the notifier makes, one attempt each: retries, backoff and Retry-After
 * are the outbox's job, so the WebClient's own retry loop is off and rate-limited calls are rejected.
 */
export interface SlackPoster {
  postMessage(args: {
    channel: string;
    thread_ts?: string;
    text: string;
    blocks?: unknown[];
  }): Promise<{ ts: string }>;
  update(args: { channel: string; ts: string; text: string; blocks?: unknown[] }): Promise<void>;
  addReaction(args: { channel: string; timestamp: string; name: string }): Promise<void>;
}

/** A failed Slack call, classified for the outbox. */
export class SlackSendError extends SendError {
  constructor(kind: SendError["kind"], message: string, retryAfterMs?: number) {
    super(kind, message, retryAfterMs);
    this.name = "SlackSendError";
  }
}

/** Slack error codes worth another attempt (https://api.slack.com/web#errors). */
const RETRYABLE_PLATFORM_ERRORS = new Set([
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
  "ratelimited",
  "rate_limited",
]);

export function classifySlackError(err: unknown): SlackSendError {
  if (err instanceof SlackSendError) return err;
  const e = err as { code?: string; retryAfter?: number; statusCode?: number; data?: { error?: string } };
  switch (e?.code) {
    case "slack_webapi_rate_limited_error":
      return new SlackSendError("rate_limited", "rate limited", Math.max(0, (e.retryAfter ?? 1) * 1000));
    case "slack_webapi_http_error": {
      const status = e.statusCode ?? 0;
      const retryable = status >= 500 || status === 408 || status === 429;
      return new SlackSendError(retryable ? "retryable" : "permanent", `HTTP ${status}`);
    }
    case "slack_webapi_request_error":
      return new SlackSendError("retryable", `request failed: ${(err as Error).message}`);
    case "slack_webapi_platform_error": {
      const code = e.data?.error ?? "unknown_error";
      return new SlackSendError(RETRYABLE_PLATFORM_ERRORS.has(code) ? "retryable" : "permanent", code);
    }
    default:
      return new SlackSendError("retryable", err instanceof Error ? err.message : String(err));
  }
}

/** The Web API client adapted to our logger; it never sees a log level that would print request bodies. */
function slackLogger(log: Logger): SlackLogger {
  const child = log.child({ component: "slack-web-api" });
  return {
    debug: () => {},
    info: () => {},
    warn: (...msg: unknown[]) => child.debug({ detail: msg.map(String).join(" ") }, "slack web api warning"),
    error: (...msg: unknown[]) => child.warn({ detail: msg.map(String).join(" ") }, "slack web api error"),
    setLevel: () => {},
    getLevel: () => LogLevel.WARN,
    setName: () => {},
  };
}

export class WebApiSlackPoster implements SlackPoster {
  private readonly client: WebClient;

  constructor(token: string, opts: { apiUrl: string; log: Logger; timeoutMs?: number }) {
    this.client = new WebClient(token, {
      slackApiUrl: opts.apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: opts.timeoutMs ?? 15_000,
      logger: slackLogger(opts.log),
    });
  }

  async postMessage(args: { channel: string; thread_ts?: string; text: string; blocks?: unknown[] }) {
    try {
      const res = await this.client.chat.postMessage({
        channel: args.channel,
        text: args.text,
        ...(args.blocks ? { blocks: args.blocks as never } : {}),
        ...(args.thread_ts ? { thread_ts: args.thread_ts } : {}),
        unfurl_links: false,
        unfurl_media: false,
      });
      if (!res.ts) throw new SlackSendError("permanent", "chat.postMessage answered without a ts");
      return { ts: res.ts };
    } catch (err) {
      throw classifySlackError(err);
    }
  }

  async update(args: { channel: string; ts: string; text: string; blocks?: unknown[] }) {
    try {
      await this.client.chat.update({
        channel: args.channel,
        ts: args.ts,
        text: args.text,
        ...(args.blocks ? { blocks: args.blocks as never } : {}),
      });
    } catch (err) {
      throw classifySlackError(err);
    }
  }

  async addReaction(args: { channel: string; timestamp: string; name: string }) {
    try {
      await this.client.reactions.add(args);
    } catch (err) {
      const classified = classifySlackError(err);
      if (classified.message === "already_reacted") return;
      throw classified;
    }
  }
}

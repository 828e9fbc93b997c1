import { LogLevel, type Logger as SlackLogger, WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import { SendError } from "../../notifier/platform.ts";

/**
 * What Dispatch attaches to the messages it posts (Slack message metadata), so that a post whose answer
 * was lost (a timeout, a crash) is found again instead of being posted twice.
 */
export interface DispatchMessageMetadata {
  event_type: typeof DISPATCH_MESSAGE_EVENT;
  event_payload: { run_id: string; kind: string; dedupe_key: string };
}

export const DISPATCH_MESSAGE_EVENT = "dispatch_message";

/** A message read back from a channel or thread: its ts and Dispatch's metadata, if it has some. */
export interface PostedMessage {
  ts: string;
  metadata?: { event_type?: string; event_payload?: Record<string, unknown> };
}

/**
 * The Slack Web API calls the notifier makes, one attempt each: retries, backoff and Retry-After are the
 * outbox's job, so the WebClient's own retry loop is off and rate-limited calls are rejected.
 */
export interface SlackPoster {
  postMessage(args: {
    channel: string;
    thread_ts?: string;
    text: string;
    blocks?: unknown[];
    metadata?: DispatchMessageMetadata;
  }): Promise<{ ts: string }>;
  /**
   * Messages with their metadata posted since `oldest` (Slack ts): the replies of `thread_ts` (the
   * parent included), or the channel's messages when no thread is given. Stops at the first one that
   * `wanted` accepts and returns it.
   */
  findMessage(args: {
    channel: string;
    thread_ts?: string;
    oldest: string;
    wanted: (m: PostedMessage) => boolean;
  }): Promise<PostedMessage | undefined>;
  update(args: { channel: string; ts: string; text: string; blocks?: unknown[] }): Promise<void>;
  addReaction(args: { channel: string; timestamp: string; name: string }): Promise<void>;
}

/** Pages of history read when looking for a message an earlier attempt may have posted. */
const MAX_LOOKUP_PAGES = 5;

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

  async postMessage(args: {
    channel: string;
    thread_ts?: string;
    text: string;
    blocks?: unknown[];
    metadata?: DispatchMessageMetadata;
  }) {
    try {
      const res = await this.client.chat.postMessage({
        channel: args.channel,
        text: args.text,
        ...(args.blocks ? { blocks: args.blocks as never } : {}),
        ...(args.thread_ts ? { thread_ts: args.thread_ts } : {}),
        ...(args.metadata ? { metadata: args.metadata } : {}),
        unfurl_links: false,
        unfurl_media: false,
      });
      if (!res.ts) throw new SlackSendError("permanent", "chat.postMessage answered without a ts");
      return { ts: res.ts };
    } catch (err) {
      throw classifySlackError(err);
    }
  }

  async findMessage(args: {
    channel: string;
    thread_ts?: string;
    oldest: string;
    wanted: (m: PostedMessage) => boolean;
  }): Promise<PostedMessage | undefined> {
    try {
      let cursor: string | undefined;
      // A few pages: the message looked for was posted moments before the failed attempt.
      for (let page = 0; page < MAX_LOOKUP_PAGES; page++) {
        const common = {
          channel: args.channel,
          oldest: args.oldest,
          include_all_metadata: true,
          limit: 200,
          ...(cursor ? { cursor } : {}),
        };
        const res = args.thread_ts
          ? await this.client.conversations.replies({ ...common, ts: args.thread_ts })
          : await this.client.conversations.history(common);
        const found = (res.messages as PostedMessage[] | undefined)?.find(args.wanted);
        if (found) return found;
        cursor = res.response_metadata?.next_cursor || undefined;
        if (!cursor) return undefined;
      }
      return undefined;
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

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A loopback fake of the Slack Web API (https://slack.com/api/<method>) speaking its wire format:
 * form-encoded or JSON bodies, `Authorization: Bearer <token>`, `{ok: true, …}` answers, HTTP 429 with
 * `Retry-After` when rate limited. Point code at it with SLACK_API_URL = `fake.url` (ends in /api/).
 */
export interface SlackCall {
  method: string;
  token: string | undefined;
  args: Record<string, unknown>;
  at: number;
}

export type ScriptedFailure = { status: 429; retryAfter: number } | { status: 500 } | { error: string };

export class FakeSlack {
  readonly calls: SlackCall[] = [];
  url = "";
  private server: Server | undefined;
  private readonly failures = new Map<string, ScriptedFailure[]>();
  /** Message timestamps are seconds since the epoch, as Slack's are (`oldest` filters compare them). */
  private ts = Math.floor(Date.now() / 1000);
  private readonly messages = new Map<string, Record<string, unknown>>();
  private readonly held = new Map<string, Promise<void>>();
  private readonly lostAnswers: string[] = [];
  /** Members of each channel, for conversations.members; a channel not listed here is channel_not_found. */
  readonly channelMembers = new Map<string, string[]>();
  /** Each person's App Home as views.publish last set it, by user id. */
  readonly homeViews = new Map<string, Record<string, unknown>>();

  readonly token: string;

  constructor(token = "xoxb-fake-bot-token") {
    this.token = token;
  }

  /** Files people shared (served at their `url_private`, as files.slack.com does), by id. */
  private readonly files = new Map<string, { file: Record<string, unknown>; bytes: Buffer }>();
  /** Downloads of shared files: the path and the token they came with. */
  readonly fileDownloads: Array<{ path: string; token: string | undefined }> = [];
  private fileSeq = 0;

  /**
   * A file a person shares in a message: its bytes are served at `url_private` to the bot token, and the
   * returned object is what Slack puts in the event's `files` (@slack/types AppMentionEvent). `size` and
   * `mimetype` are what Slack declares (pass them to declare something else than the bytes).
   */
  shareFile(
    name: string,
    bytes: Buffer,
    mimetype: string,
    declared: { size?: number } = {},
  ): Record<string, unknown> {
    const id = `F${String(++this.fileSeq).padStart(9, "0")}`;
    const origin = new URL(this.url).origin;
    const file = {
      id,
      created: Math.floor(Date.now() / 1000),
      timestamp: Math.floor(Date.now() / 1000),
      name,
      title: name,
      mimetype,
      filetype: name.split(".").pop() ?? "binary",
      pretty_type: mimetype,
      user: "U1",
      user_team: "T0TEAM",
      editable: false,
      size: declared.size ?? bytes.length,
      mode: "hosted",
      is_external: false,
      external_type: "",
      is_public: true,
      public_url_shared: false,
      display_as_bot: false,
      username: "",
      url_private: `${origin}/files-pri/T0TEAM-${id}/${encodeURIComponent(name)}`,
      url_private_download: `${origin}/files-pri/T0TEAM-${id}/download/${encodeURIComponent(name)}`,
      media_display_type: "unknown",
      permalink: `https://fake.slack.com/files/U1/${id}/${encodeURIComponent(name)}`,
      permalink_public: `https://slack-files.com/T0TEAM-${id}-0000`,
      has_rich_preview: false,
      file_access: "visible",
    };
    this.files.set(id, { file, bytes });
    return file;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      if (req.url?.startsWith("/files-pri/")) {
        this.serveFile(req, res);
        return;
      }
      void this.handle(req).then(({ status, headers, body }) => {
        res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
        res.end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api/`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The next calls of `method` fail in this order, then it answers normally again. */
  failNext(method: string, ...failures: ScriptedFailure[]): void {
    this.failures.set(method, [...(this.failures.get(method) ?? []), ...failures]);
  }

  /**
   * Calls of `method` are received (and recorded in `calls`) but not answered until the returned
   * function is called: a test can then show what happens while that Slack work is still pending.
   */
  holdBack(method: string): () => void {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.held.set(method, gate);
    return () => {
      if (this.held.get(method) === gate) this.held.delete(method);
      release();
    };
  }

  /**
   * The next call of `method` is carried out (a posted message exists) but answered with HTTP 500, as when
   * the answer is lost on the way back.
   */
  loseAnswer(method: string): void {
    this.lostAnswers.push(method);
  }

  /** Successful calls of `method` (failed attempts are in `calls` but not here). */
  succeeded(method: string): SlackCall[] {
    return this.calls.filter((c) => c.method === method && (c as SlackCall & { ok?: boolean }).ok);
  }

  /**
   * chat.startStream: a message in a thread that chat.appendStream adds chunks to until chat.stopStream.
   * Outside a DM Slack streams to one person, so the recipient's user and team are required there.
   */
  private startStream(channel: string, args: Record<string, unknown>): Record<string, unknown> {
    if (!channel) return { ok: false, error: "channel_not_found" };
    if (!channel.startsWith("D") && (!args.recipient_user_id || !args.recipient_team_id)) {
      return { ok: false, error: "invalid_arguments" };
    }
    const chunks = (args.chunks as unknown[] | undefined) ?? [];
    if (!validChunks(chunks) || (chunks.length === 0 && !args.markdown_text)) {
      return { ok: false, error: "invalid_arguments" };
    }
    const ts = `${++this.ts}.000300`;
    this.messages.set(`${channel}/${ts}`, {
      ts,
      thread_ts: args.thread_ts,
      streaming: true,
      chunks: [
        ...chunks,
        ...(args.markdown_text ? [{ type: "markdown_text", text: args.markdown_text }] : []),
      ],
    });
    return { ok: true, channel, ts };
  }

  private continueStream(method: string, channel: string, args: Record<string, unknown>) {
    const key = `${channel}/${String(args.ts)}`;
    const message = this.messages.get(key);
    if (!message) return { ok: false, error: "message_not_found" };
    if (message.streaming !== true) return { ok: false, error: "message_not_in_streaming_state" };
    const chunks = (args.chunks as unknown[] | undefined) ?? [];
    if (
      !validChunks(chunks) ||
      (method === "chat.appendStream" && chunks.length === 0 && !args.markdown_text)
    ) {
      return { ok: false, error: "invalid_arguments" };
    }
    const text = args.markdown_text ? [{ type: "markdown_text", text: args.markdown_text }] : [];
    this.messages.set(key, {
      ...message,
      streaming: method === "chat.appendStream",
      chunks: [...(message.chunks as unknown[]), ...chunks, ...text],
    });
    return { ok: true, channel, ts: args.ts };
  }

  /** The messages posted in `thread` of `channel` as they are now, oldest first. */
  thread(channel: string, thread: string): Array<Record<string, unknown>> {
    return [...this.messages.entries()]
      .filter(([key, m]) => key.startsWith(`${channel}/`) && m.thread_ts === thread)
      .map(([, m]) => m)
      .sort((a, b) => Number(a.ts) - Number(b.ts));
  }

  /** The ts of the message chat.startStream created in `thread`, if there is one. */
  streamIn(channel: string, thread: string): string | undefined {
    for (const [key, m] of this.messages) {
      if (key.startsWith(`${channel}/`) && m.thread_ts === thread && "streaming" in m) return String(m.ts);
    }
    return undefined;
  }

  /** The current text and blocks of a message posted through the fake, after every update. */
  message(channel: string, ts: string): Record<string, unknown> | undefined {
    return this.messages.get(`${channel}/${ts}`);
  }

  /**
   * files.slack.com: the bytes to the bot token; without it Slack answers 200 with its sign-in page, not
   * an error, so a client that forgets the token gets HTML.
   */
  private serveFile(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? "").split("?")[0]!;
    const auth = req.headers.authorization;
    const token = auth?.startsWith("Bearer ") ? auth.slice(7) : undefined;
    this.fileDownloads.push({ path, token });
    const id = /^\/files-pri\/[^/-]+-([^/]+)\//.exec(path)?.[1];
    const shared = id ? this.files.get(id) : undefined;
    if (token !== this.token || !shared) {
      res.writeHead(token === this.token ? 404 : 200, { "content-type": "text/html; charset=utf-8" });
      res.end("<!DOCTYPE html><html><body>Sign in to Slack</body></html>");
      return;
    }
    res.writeHead(200, {
      "content-type": String(shared.file.mimetype),
      "content-length": String(shared.bytes.length),
    });
    res.end(shared.bytes);
  }

  private async handle(req: IncomingMessage) {
    const method = (req.url ?? "").replace(/^\/api\//, "").split("?")[0]!;
    const raw = await new Promise<string>((resolve) => {
      let data = "";
      req.setEncoding("utf8");
      req.on("data", (c) => (data += c));
      req.on("end", () => resolve(data));
    });
    const args = parseBody(req.headers["content-type"] ?? "", raw);
    const auth = req.headers.authorization;
    const token = auth?.startsWith("Bearer ") ? auth.slice(7) : (args.token as string | undefined);
    const call: SlackCall & { ok?: boolean } = { method, token, args, at: Date.now() };
    this.calls.push(call);
    await this.held.get(method);
    if (token !== this.token) return { status: 200, headers: {}, body: { ok: false, error: "invalid_auth" } };
    const failure = this.failures.get(method)?.shift();
    if (failure) {
      if ("error" in failure) return { status: 200, headers: {}, body: { ok: false, error: failure.error } };
      if (failure.status === 429) {
        return {
          status: 429,
          headers: { "retry-after": String(failure.retryAfter) },
          body: { ok: false, error: "ratelimited" },
        };
      }
      return { status: 500, headers: {}, body: { ok: false, error: "internal_error" } };
    }
    const body = this.answer(method, args);
    const lost = this.lostAnswers.indexOf(method);
    if (lost >= 0) {
      this.lostAnswers.splice(lost, 1);
      return { status: 500, headers: {}, body: { ok: false, error: "internal_error" } };
    }
    call.ok = true;
    return { status: 200, headers: {}, body };
  }

  private answer(method: string, args: Record<string, unknown>): Record<string, unknown> {
    const channel = String(args.channel ?? "");
    switch (method) {
      case "auth.test":
        return {
          ok: true,
          url: "https://fake.slack.com/",
          team: "Fake",
          user: "dispatch",
          team_id: "T0FAKE",
          user_id: "UBOT",
          bot_id: "BBOT",
        };
      case "chat.postMessage": {
        const ts = `${++this.ts}.000100`;
        const message = {
          text: args.text,
          blocks: args.blocks,
          thread_ts: args.thread_ts,
          ts,
          ...(args.metadata ? { metadata: args.metadata } : {}),
        };
        this.messages.set(`${channel}/${ts}`, message);
        return { ok: true, channel, ts, message };
      }
      case "conversations.history":
      case "conversations.replies": {
        // History: the channel's top-level messages, newest first; replies: a thread, parent first.
        const thread = method === "conversations.replies" ? String(args.ts) : undefined;
        const withMetadata = String(args.include_all_metadata) === "true";
        const messages = [...this.messages.entries()]
          .filter(([key]) => key.startsWith(`${channel}/`))
          .map(([, m]) => m)
          .filter((m) => Number(m.ts) >= Number(args.oldest ?? 0))
          .filter((m) =>
            thread ? m.ts === thread || m.thread_ts === thread : !m.thread_ts || m.thread_ts === m.ts,
          )
          .sort((a, b) => (Number(a.ts) - Number(b.ts)) * (thread ? 1 : -1))
          .map(({ metadata, ...m }) => ({
            type: "message",
            ...m,
            ...(withMetadata && metadata ? { metadata } : {}),
          }));
        return { ok: true, messages, has_more: false };
      }
      case "chat.update": {
        const key = `${channel}/${String(args.ts)}`;
        if (!this.messages.has(key)) return { ok: false, error: "message_not_found" };
        this.messages.set(key, { ...this.messages.get(key), text: args.text, blocks: args.blocks });
        return { ok: true, channel, ts: args.ts, text: args.text };
      }
      case "chat.postEphemeral":
        return { ok: true, message_ts: `${++this.ts}.000200` };
      case "chat.getPermalink":
        return {
          ok: true,
          channel,
          permalink: `https://fake.slack.com/archives/${channel}/p${String(args.message_ts).replace(".", "")}`,
        };
      case "reactions.add":
      case "reactions.remove":
        return { ok: true };
      case "chat.startStream":
        return this.startStream(channel, args);
      case "chat.appendStream":
      case "chat.stopStream":
        return this.continueStream(method, channel, args);
      case "assistant.threads.setStatus":
      case "assistant.threads.setTitle":
      case "assistant.threads.setSuggestedPrompts":
        return assistantCall(method, args);
      case "views.publish": {
        const view = args.view as Record<string, unknown> | undefined;
        if (!args.user_id || view?.type !== "home" || !Array.isArray(view.blocks)) {
          return { ok: false, error: "invalid_arguments" };
        }
        this.homeViews.set(String(args.user_id), view);
        return { ok: true, view: { id: `V${String(args.user_id)}`, ...view } };
      }
      case "files.info": {
        const shared = this.files.get(String(args.file));
        return shared ? { ok: true, file: shared.file } : { ok: false, error: "file_not_found" };
      }
      case "conversations.members": {
        const members = this.channelMembers.get(channel);
        if (!members) return { ok: false, error: "channel_not_found" };
        // Paged like Slack: the cursor is opaque to callers; here it is the offset of the next page.
        const offset = Number(args.cursor || 0);
        const limit = Number(args.limit || 100);
        const next = offset + limit < members.length ? String(offset + limit) : "";
        return {
          ok: true,
          members: members.slice(offset, offset + limit),
          response_metadata: { next_cursor: next },
        };
      }
      case "users.info":
        return {
          ok: true,
          user: {
            id: args.user,
            name: `user-${String(args.user)}`,
            real_name: `User ${String(args.user)}`,
            profile: { display_name: `user-${String(args.user)}` },
          },
        };
      default:
        return { ok: true };
    }
  }
}

/** Streaming chunks in the shapes Slack accepts (@slack/types chunk.d.ts). */
function validChunks(chunks: unknown[]): boolean {
  return chunks.every((c) => {
    const chunk = c as Record<string, unknown>;
    switch (chunk?.type) {
      case "markdown_text":
        return typeof chunk.text === "string";
      case "plan_update":
        return typeof chunk.title === "string";
      case "task_update":
        return (
          typeof chunk.id === "string" &&
          typeof chunk.title === "string" &&
          ["pending", "in_progress", "complete", "error"].includes(String(chunk.status))
        );
      case "blocks":
        return Array.isArray(chunk.blocks);
      default:
        return false;
    }
  });
}

/** assistant.threads.*: the thread (channel_id, thread_ts) and what each method sets. */
function assistantCall(method: string, args: Record<string, unknown>): Record<string, unknown> {
  if (!args.channel_id || (method !== "assistant.threads.setSuggestedPrompts" && !args.thread_ts)) {
    return { ok: false, error: "invalid_arguments" };
  }
  if (method === "assistant.threads.setStatus" && typeof args.status !== "string") {
    return { ok: false, error: "invalid_arguments" };
  }
  if (method === "assistant.threads.setTitle" && !args.title)
    return { ok: false, error: "invalid_arguments" };
  if (method === "assistant.threads.setSuggestedPrompts") {
    const prompts = args.prompts as Array<Record<string, unknown>> | undefined;
    const valid =
      Array.isArray(prompts) &&
      prompts.length >= 1 &&
      prompts.length <= 4 &&
      prompts.every((p) => typeof p.title === "string" && typeof p.message === "string");
    if (!valid) return { ok: false, error: "invalid_arguments" };
  }
  return { ok: true };
}

function parseBody(contentType: string, raw: string): Record<string, unknown> {
  if (contentType.includes("application/json"))
    return raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
  const out: Record<string, unknown> = {};
  for (const [k, v] of new URLSearchParams(raw)) {
    // The Web API client form-encodes nested values (blocks, attachments) as JSON strings.
    out[k] = /^[[{]/.test(v) ? safeJson(v) : v;
  }
  return out;
}

function safeJson(v: string): unknown {
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

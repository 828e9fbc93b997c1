import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { signSlackRequest } from "../../../src/integrations/slack/signature.ts";
import { startTestDispatch, type TestDispatch, waitFor } from "../../support/dispatch.ts";
import { FakeSlack, type SlackCall } from "../../support/fake-slack.ts";

export const SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
export const TEAM = "T0TEAM";
export const CHANNEL = "C0CHAN";
export const BOT_USER = "UBOT";

export interface SlackDispatch {
  t: TestDispatch;
  fake: FakeSlack;
  /** POSTs a body to /slack/events signed as Slack signs it (override any header to break it). */
  post(body: string, contentType: string, headers?: Record<string, string>): Promise<SlackResponse>;
  command(
    fields: Partial<Record<string, string>> & { text: string },
    headers?: Record<string, string>,
  ): Promise<SlackResponse>;
  mention(
    event: {
      text: string;
      user?: string;
      ts?: string;
      thread_ts?: string;
      channel?: string;
      user_team?: string;
      /** Files shared with the message, as Slack lists them (FakeSlack.shareFile makes them). */
      files?: unknown[];
    },
    opts?: { eventId?: string; headers?: Record<string, string> },
  ): Promise<SlackResponse>;
  /**
   * Clicks Cancel on a status card: the run's own card (once the notifier has posted it) unless `cardTs`
   * names another message.
   */
  clickCancel(
    runId: string,
    opts?: { user?: string; channel?: string; cardTs?: string },
  ): Promise<SlackResponse>;
  /** Runs of the default team, newest first. */
  // biome-ignore lint/suspicious/noExplicitAny: test responses are asserted field by field
  runs(): Promise<Array<Record<string, any>>>;
  /** Ephemeral messages sent so far to `user`. */
  ephemerals(user?: string): SlackCall[];
  /** Waits for the n-th (1-based) ephemeral message to `user` and returns its text. */
  ephemeral(user: string, n?: number): Promise<string>;
  stop(): Promise<void>;
}

export interface SlackResponse {
  status: number;
  text: string;
}

let seq = 0;
/** A Slack-looking message ts, unique within the test process. */
export function nextTs(): string {
  seq += 1;
  return `${1_800_000_000 + seq}.${String(seq).padStart(6, "0")}`;
}

/**
 * A real Dispatch on 127.0.0.1 with the Slack app enabled, talking to a FakeSlack. `settings` is the
 * `slack:` section of dispatch.config.yaml, as YAML text.
 */
export async function startSlackDispatch(
  opts: {
    settings?: string;
    env?: Record<string, string>;
    /** startDispatch's options (the scheduler's test clock, …). */
    dispatch?: Parameters<typeof startTestDispatch>[1];
  } = {},
): Promise<SlackDispatch> {
  const fake = await new FakeSlack().start();
  // The default channel's people: members under the `channel` policy.
  fake.channelMembers.set(CHANNEL, ["U1", "U2", "U3", "U4", "U5", "U6", "U7", "U8", "U9"]);
  const dir = await mkdtemp(join(tmpdir(), "dispatch-slack-"));
  const settingsPath = join(dir, "dispatch.config.yaml");
  await writeFile(settingsPath, opts.settings ?? "slack: {}\n");
  const t = await startTestDispatch(
    {
      SLACK_BOT_TOKEN: fake.token,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: fake.url,
      DISPATCH_CONFIG_FILE: settingsPath,
      ...opts.env,
    },
    opts.dispatch,
  );
  const post = async (body: string, contentType: string, headers: Record<string, string> = {}) => {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const res = await fetch(`${t.url}/slack/events`, {
      method: "POST",
      headers: {
        "content-type": contentType,
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": signSlackRequest(
          SIGNING_SECRET,
          headers["x-slack-request-timestamp"] ?? timestamp,
          body,
        ),
        ...headers,
      },
      body,
    });
    const text = await res.text();
    return { status: res.status, text };
  };
  const ephemerals = (user?: string) =>
    fake.calls.filter(
      (c) => c.method === "chat.postEphemeral" && (user === undefined || c.args.user === user),
    );
  return {
    t,
    fake,
    post,
    command(fields, headers) {
      const form = new URLSearchParams({
        token: "verification-token-unused",
        team_id: TEAM,
        team_domain: "acme",
        channel_id: CHANNEL,
        channel_name: "dev",
        user_id: "U1",
        user_name: "ada",
        command: "/agent",
        api_app_id: "A0APP",
        response_url: "https://hooks.slack.invalid/commands/1",
        trigger_id: `${Date.now()}.${randomBytes(4).toString("hex")}`,
        ...fields,
      } as Record<string, string>);
      return post(form.toString(), "application/x-www-form-urlencoded", headers);
    },
    mention(event, o = {}) {
      const body = {
        token: "unused",
        team_id: TEAM,
        api_app_id: "A0APP",
        type: "event_callback",
        event_id: o.eventId ?? `Ev${randomBytes(6).toString("hex").toUpperCase()}`,
        event_time: Math.floor(Date.now() / 1000),
        authorizations: [{ team_id: TEAM, user_id: BOT_USER, is_bot: true, is_enterprise_install: false }],
        event: {
          type: "app_mention",
          user: event.user ?? "U1",
          text: event.text,
          ts: event.ts ?? nextTs(),
          channel: event.channel ?? CHANNEL,
          team: TEAM,
          event_ts: event.ts ?? nextTs(),
          ...(event.thread_ts ? { thread_ts: event.thread_ts } : {}),
          ...(event.user_team ? { user_team: event.user_team } : {}),
          ...(event.files ? { files: event.files } : {}),
        },
      };
      return post(JSON.stringify(body), "application/json", o.headers);
    },
    async clickCancel(runId, o = {}) {
      const cardRef =
        o.cardTs ??
        (await waitFor(async () => (await t.dispatch.store.getCardState(runId))?.cardRef ?? undefined, {
          what: `the status card of ${runId}`,
        }));
      const payload = {
        type: "block_actions",
        team: { id: TEAM, domain: "acme" },
        user: { id: o.user ?? "U1", username: "ada", team_id: TEAM },
        api_app_id: "A0APP",
        trigger_id: `${Date.now()}.trigger`,
        container: {
          type: "message",
          message_ts: cardRef,
          channel_id: o.channel ?? CHANNEL,
          is_ephemeral: false,
        },
        channel: { id: o.channel ?? CHANNEL, name: "dev" },
        message: { type: "message", ts: cardRef, text: "status card" },
        response_url: "https://hooks.slack.invalid/actions/1",
        actions: [
          {
            type: "button",
            action_id: "dispatch_cancel",
            block_id: "dispatch_run_actions",
            value: runId,
            style: "danger",
            text: { type: "plain_text", text: "Cancel" },
            action_ts: `${Date.now() / 1000}`,
          },
        ],
      };
      const form = new URLSearchParams({ payload: JSON.stringify(payload) });
      return post(form.toString(), "application/x-www-form-urlencoded");
    },
    async runs() {
      const res = await t.api("GET", "/api/v1/agent/runs?limit=500");
      if (res.status !== 200) throw new Error(`listing runs: ${res.status} ${res.text}`);
      return res.body.runs;
    },
    ephemerals,
    async ephemeral(user, n = 1) {
      const call = await waitFor(() => ephemerals(user)[n - 1], { what: `ephemeral #${n} to ${user}` });
      return String(call.args.text);
    },
    async stop() {
      await t.stop();
      await fake.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

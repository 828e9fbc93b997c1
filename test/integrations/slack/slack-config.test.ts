import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/config.ts";
import { parseSettings } from "../../../src/config-file.ts";
import {
  checkTimestamp,
  signSlackRequest,
  verifySlackSignature,
} from "../../../src/integrations/slack/signature.ts";
import { SlackIntegration } from "../../../src/integrations/slack/slack-integration.ts";
import { createLogger } from "../../../src/log.ts";

describe("Slack configuration", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-slack-config-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const base = { DISPATCH_DATA_DIR: "/tmp/unused" };

  it("reads the Slack variables with their defaults", () => {
    const config = loadConfig({ ...base, SLACK_BOT_TOKEN: "xoxb-1", SLACK_SIGNING_SECRET: "secret-123" });
    expect(config.slack).toEqual({
      botToken: "xoxb-1",
      signingSecret: "secret-123",
      appToken: undefined,
      apiUrl: "https://slack.com/api/",
      command: "/agent",
    });
    expect(loadConfig(base).slack).toBeUndefined();
  });

  it("names the variable that is wrong or missing", () => {
    expect(() => loadConfig({ ...base, SLACK_BOT_TOKEN: "xoxb-1" })).toThrow(/SLACK_SIGNING_SECRET/);
    expect(() => loadConfig({ ...base, SLACK_SIGNING_SECRET: "secret-123" })).toThrow(/SLACK_BOT_TOKEN/);
    expect(() => loadConfig({ ...base, SLACK_BOT_TOKEN: "xoxb-1", SLACK_APP_TOKEN: "nope" })).toThrow(
      /SLACK_APP_TOKEN/,
    );
    expect(() =>
      loadConfig({
        ...base,
        SLACK_BOT_TOKEN: "xoxb-1",
        SLACK_SIGNING_SECRET: "s3cret-123",
        SLACK_COMMAND: "agent",
      }),
    ).toThrow(/SLACK_COMMAND/);
  });

  it("validates dispatch.config.yaml and names the field", async () => {
    const path = join(dir, "bad.yaml");
    await writeFile(path, "slack:\n  allowed_users: [U1, 42]\n  cancel: everyone\n");
    let message = "";
    try {
      loadConfig({ ...base, DISPATCH_CONFIG_FILE: path });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toContain("slack.allowed_users.1");
    expect(message).toContain("slack.cancel");
    expect(() => loadConfig({ ...base, DISPATCH_CONFIG_FILE: join(dir, "missing.yaml") })).toThrow(
      /DISPATCH_CONFIG_FILE/,
    );
    expect(() => parseSettings({ slack: { allowed_user: ["U1"] } })).toThrow(/allowed_user/);
  });

  it("defaults: no allowlists, external users refused, cancel and follow-up by anyone in the channel, members remembered 30 s", () => {
    expect(parseSettings({}).slack).toEqual({
      allow_external_users: false,
      cancel: "channel",
      followup: "channel",
      membership_cache_seconds: 30,
    });
  });

  it("the example config is valid", async () => {
    const example = new URL("../../../manifests/dispatch.config.example.yaml", import.meta.url).pathname;
    expect(
      loadConfig({ ...base, DISPATCH_CONFIG_FILE: example }).settings.slack.allowed_channels,
    ).toBeDefined();
  });
});

describe("manifests/slack-app.yaml", () => {
  it("declares the slash command, its events, the assistant pane, the Home tab, interactivity and the scopes the app uses", async () => {
    const { parse } = await import("yaml");
    const { readFile } = await import("node:fs/promises");
    const manifest = parse(
      await readFile(new URL("../../../manifests/slack-app.yaml", import.meta.url), "utf8"),
    );
    expect(manifest.features.slash_commands.map((c: { command: string }) => c.command)).toEqual(["/agent"]);
    expect(manifest.settings.event_subscriptions.bot_events).toEqual([
      "app_mention",
      "assistant_thread_started",
      "message.im",
      "app_home_opened",
    ]);
    // The agent surface: the assistant pane and the Home tab's "my runs".
    expect(manifest.features.assistant_view.assistant_description).toBeTruthy();
    expect(manifest.features.app_home).toMatchObject({ home_tab_enabled: true, messages_tab_enabled: true });
    expect(manifest.settings.interactivity.is_enabled).toBe(true);
    for (const url of [
      manifest.features.slash_commands[0].url,
      manifest.settings.event_subscriptions.request_url,
      manifest.settings.interactivity.request_url,
    ]) {
      expect(url).toMatch(/\/slack\/events$/);
    }
    expect([...manifest.oauth_config.scopes.bot].sort()).toEqual(
      [
        "app_mentions:read",
        "assistant:write",
        "chat:write",
        "commands",
        "reactions:write",
        "users:read",
        // Reading back a message whose posting answer was lost, by its metadata.
        "channels:history",
        "groups:history",
        "im:history",
        "mpim:history",
        // conversations.members, for the `channel` policy.
        "channels:read",
        "groups:read",
        "im:read",
        "mpim:read",
        // Images shared with a mention, downloaded as the run's attachments.
        "files:read",
      ].sort(),
    );
  });
});

describe("signature", () => {
  const secret = "s3cr3t-signing";
  const body = Buffer.from("token=x&team_id=T1&text=hi");
  const now = 1_800_000_000_000;
  const ts = String(now / 1000);

  it("accepts Slack's v0 signature and refuses anything else", () => {
    const signature = signSlackRequest(secret, ts, body);
    expect(verifySlackSignature(secret, { signature, timestamp: ts }, body, now)).toEqual({ ok: true });
    expect(verifySlackSignature("other", { signature, timestamp: ts }, body, now).ok).toBe(false);
    expect(verifySlackSignature(secret, { signature: "v0=abc", timestamp: ts }, body, now).ok).toBe(false);
    expect(verifySlackSignature(secret, { signature: undefined, timestamp: ts }, body, now).ok).toBe(false);
  });

  it("refuses timestamps more than 5 minutes away, either way", () => {
    expect(checkTimestamp(String(now / 1000 - 301), now).ok).toBe(false);
    expect(checkTimestamp(String(now / 1000 + 301), now).ok).toBe(false);
    expect(checkTimestamp(String(now / 1000 - 299), now).ok).toBe(true);
    expect(checkTimestamp("12abc", now).ok).toBe(false);
  });
});

describe("Socket Mode", () => {
  it("uses bolt's SocketModeReceiver when SLACK_APP_TOKEN is set, and mounts no HTTP route", () => {
    const slack = new SlackIntegration({
      config: {
        botToken: "xoxb-1",
        signingSecret: undefined,
        appToken: "xapp-1-A1-1-abc",
        apiUrl: "http://127.0.0.1:9/api/",
        command: "/agent",
      },
      settings: parseSettings({}).slack,
      access: {} as never,
      runs: {} as never,
      store: {} as never,
      log: createLogger("silent"),
      inbox: { leaseMs: 30_000, pollMs: 1000 },
    });
    const registered: string[] = [];
    slack.register({ register: () => registered.push("route") } as never);
    expect(registered).toEqual([]);
    expect(slack.mode).toBe("socket");
  });
});

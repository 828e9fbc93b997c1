import { randomBytes } from "node:crypto";
import type pg from "pg";
import { expect } from "vitest";
import { signSlackRequest } from "../../src/integrations/slack/signature.ts";
import { BOT_USER, CHANNEL, nextTs, SIGNING_SECRET, TEAM } from "../integrations/slack/support.ts";
import { waitFor } from "../support/dispatch.ts";
import type { SlackCall } from "../support/fake-slack.ts";

/**
 * What the replica tests share: Slack's signed deliveries to a `dispatch serve` process, the
 * metadata Dispatch puts on what it posts, and the wait until the replicas have nothing left to send.
 */

// biome-ignore lint/suspicious/noExplicitAny: Slack arguments are read field by field
type Json = any;

export const FORM = "application/x-www-form-urlencoded";
export const JSON_TYPE = "application/json";

/** POSTs `body` to the process's /slack/events, signed as Slack signs it; the HTTP status. */
export async function postSlack(
  server: { url: string },
  body: string,
  contentType: string,
  headers: Record<string, string> = {},
): Promise<number> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const res = await fetch(`${server.url}/slack/events`, {
    method: "POST",
    headers: {
      "content-type": contentType,
      "x-slack-request-timestamp": timestamp,
      "x-slack-signature": signSlackRequest(SIGNING_SECRET, timestamp, body),
      ...headers,
    },
    body,
  });
  await res.text();
  return res.status;
}

export function slashCommand(text: string, user = "U1"): string {
  return new URLSearchParams({
    token: "verification-token-unused",
    team_id: TEAM,
    team_domain: "acme",
    channel_id: CHANNEL,
    channel_name: "dev",
    user_id: user,
    user_name: "ada",
    command: "/agent",
    api_app_id: "A0APP",
    response_url: "https://hooks.slack.invalid/commands/1",
    trigger_id: `${Date.now()}.${randomBytes(4).toString("hex")}`,
    text,
  }).toString();
}

export function mentionEvent(text: string, opts: { threadTs?: string; user?: string } = {}): string {
  const ts = nextTs();
  return JSON.stringify({
    token: "unused",
    team_id: TEAM,
    api_app_id: "A0APP",
    type: "event_callback",
    event_id: `Ev${randomBytes(6).toString("hex").toUpperCase()}`,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [{ team_id: TEAM, user_id: BOT_USER, is_bot: true, is_enterprise_install: false }],
    event: {
      type: "app_mention",
      user: opts.user ?? "U1",
      text: `<@${BOT_USER}> ${text}`,
      ts,
      channel: CHANNEL,
      team: TEAM,
      event_ts: ts,
      ...(opts.threadTs ? { thread_ts: opts.threadTs } : {}),
    },
  });
}

/** Dispatch's metadata on a message it posted: which run, which kind of message, which outbox row. */
export function postedFor(call: SlackCall): { run_id?: string; kind?: string; dedupe_key?: string } {
  return ((call.args.metadata as Json)?.event_payload ?? {}) as Json;
}

/**
 * Waits until the replicas have nothing left to do about Slack and GitHub: every stored delivery handled
 * (the inbox holds none), nothing due or being sent in the outbox. Read from the database they share:
 * a replica's API shows runs, not the work queued behind them. Then no message may have been given up.
 */
export async function settleDeliveries(db: pg.Client, what: string, timeoutMs: number): Promise<void> {
  let left: unknown[] = [];
  try {
    await waitFor(
      async () => {
        const inbox = await db.query(
          "SELECT source, kind, delivery_id, attempts, lease_expires_at FROM inbox_deliveries",
        );
        const outbox = await db.query(
          `SELECT run_id, kind, dedupe_key, state, attempts, not_before, lease_expires_at, last_error
             FROM outbox WHERE state IN ('pending', 'sending') ORDER BY id`,
        );
        left = [...inbox.rows, ...outbox.rows];
        return left.length === 0;
      },
      { timeoutMs, intervalMs: 100, what: `${what}: the inbox and the outbox to drain` },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\nstill there: ${JSON.stringify(left, null, 1)}`);
  }
  const { rows } = await db.query("SELECT dedupe_key, last_error FROM outbox WHERE state = 'dead'");
  expect(rows, "no notifier message was given up").toEqual([]);
}

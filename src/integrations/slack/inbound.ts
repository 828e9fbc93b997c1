import { createHash } from "node:crypto";
import type { Store } from "../../store/store.ts";

/** A retyped command within this window is the same request (docs/surfaces.md). */
export const COMMAND_DEDUPE_WINDOW_MS = 60_000;

export interface InboundKey {
  key: string;
  windowMs?: number;
}

// biome-ignore lint/suspicious/noExplicitAny: Slack payloads are read field by field, defensively
type Body = Record<string, any>;

/**
 * The dedupe keys of one Slack delivery (docs/surfaces.md): event `event_id`; message (team, channel, ts);
 * command (team, user, channel, text) within 60 s; block action (action_ts, action_id); modal submission
 * (view id). A delivery with
 * no key (url_verification, anything unknown) is never a duplicate.
 */
export function inboundKeys(body: Body): InboundKey[] {
  if (body.type === "event_callback") {
    const keys: InboundKey[] = [];
    if (typeof body.event_id === "string") keys.push({ key: `slack:event:${body.event_id}` });
    const event = body.event ?? {};
    if (typeof event.channel === "string" && typeof event.ts === "string") {
      // app_mention and message events of one message share this key: it never counts twice.
      keys.push({ key: `slack:message:${body.team_id ?? event.team}:${event.channel}:${event.ts}` });
    }
    return keys;
  }
  if (typeof body.command === "string") {
    const fingerprint = digest([body.team_id, body.user_id, body.channel_id, body.command, body.text ?? ""]);
    return [{ key: `slack:command:${fingerprint}`, windowMs: COMMAND_DEDUPE_WINDOW_MS }];
  }
  if (body.type === "block_actions" && Array.isArray(body.actions) && body.actions[0]) {
    const action = body.actions[0];
    return [{ key: `slack:action:${action.action_ts}:${action.action_id}` }];
  }
  // A modal is submitted once (Slack closes it): its view id names the submission.
  if (body.type === "view_submission" && typeof body.view?.id === "string") {
    return [{ key: `slack:view:${body.view.id}` }];
  }
  return [];
}

/** Records the delivery's keys; false when any was seen before (the delivery is a duplicate). */
export async function claimDelivery(store: Pick<Store, "claimInbound">, body: Body): Promise<boolean> {
  const keys = inboundKeys(body);
  // Claimed together: the writes share one group commit.
  const claimed = await Promise.all(keys.map((k) => store.claimInbound(k.key, "slack", k.windowMs)));
  return claimed.every(Boolean);
}

/**
 * An Idempotency-Key for the RunsApi call a delivery leads to, so that a delivery processed twice (a
 * claim that could not be recorded) still creates one run. Commands add their trigger_id: a command
 * retyped after the dedupe window is a new request and must not replay the first run.
 */
export function idempotencyKeyFor(body: Body, purpose: string): string {
  const keys = inboundKeys(body).map((k) => k.key);
  const unique = body.trigger_id ?? body.event_id ?? body.actions?.[0]?.action_ts ?? "";
  return `slack-${purpose}-${digest([...keys, unique])}`;
}

function digest(parts: unknown[]): string {
  return createHash("sha256").update(parts.map(String).join("\n")).digest("base64url").slice(0, 32);
}

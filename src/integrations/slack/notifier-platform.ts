import { type NotifierPlatform, SendError } from "../../notifier/platform.ts";
import type { OutboxRow, Store } from "../../store/store.ts";
import { cardFingerprint, outcomeReaction, renderFinalReply, renderStatusCard } from "./status-card.ts";
import {
  DISPATCH_MESSAGE_EVENT,
  type DispatchMessageMetadata,
  type PostedMessage,
  type SlackPoster,
} from "./web-api.ts";

/** How far before a row was written a message of an earlier attempt is looked for (clock skew allowance). */
const LOOKUP_SLACK_MS = 5 * 60_000;

/**
 * Slack as the notifier sees it: the status card (blocks) in the channel, a thread reply at a terminal
 * state and ✅/❌/🚫 on the triggering mention. A card is posted once and then edited, a reply goes into
 * the run's thread, a reaction onto the triggering message; what a row needs from its thread (the card's
 * ts, the thread) is read at delivery, not at enqueue. Each post carries message metadata naming the run
 * and the row: a post retried after an attempt whose answer was lost (a timeout, a crash) first reads the
 * thread or channel back and reuses the message found, so nothing is posted twice.
 */
export function slackNotifierPlatform(deps: {
  slack: SlackPoster;
  store: Pick<Store, "getCardState" | "getThreadBinding">;
  editIntervalMs: number;
}): NotifierPlatform {
  const { slack, store } = deps;
  /** Rows that had an attempt in this process (a failed attempt may still have posted). */
  const attempted = new Set<number>();
  /** The message an earlier attempt of `row` posted, when it may have posted one. */
  const earlierPost = async (row: OutboxRow, channel: string, thread: string | undefined) => {
    const retried = row.attempts > 0 || attempted.has(row.id);
    attempted.add(row.id);
    if (!retried) return undefined;
    try {
      const found = await slack.findMessage({
        channel,
        ...(thread ? { thread_ts: thread } : {}),
        oldest: ((Date.parse(row.createdAt) - LOOKUP_SLACK_MS) / 1000).toFixed(6),
        wanted: (m) => postedBy(m, row),
      });
      return found?.ts;
    } catch (err) {
      // The channel cannot be read back (an install without a history scope, a DM): posting again risks a
      // duplicate, which beats never posting. Rate limits and outages are retried as usual.
      if (err instanceof SendError && err.kind === "permanent") return undefined;
      throw err;
    }
  };
  return {
    platform: "slack",
    source: "SLACK",
    editIntervalMs: deps.editIntervalMs,
    target: (b) => `slack:${b.workspace}:${b.channel}`,
    fingerprint: cardFingerprint,
    card: (run, b, now, stalledMs) => ({ channel: b.channel, ...renderStatusCard(run, b, now, stalledMs) }),
    finalReply: (run, b) => ({ channel: b.channel, ...renderFinalReply(run, b) }),
    outcomeReaction: (run, b) => {
      const name = outcomeReaction(run.state);
      return b.triggerRef && name ? { channel: b.channel, timestamp: b.triggerRef, name } : undefined;
    },
    async send(row: OutboxRow) {
      const p = row.payload as {
        channel: string;
        text: string;
        blocks?: unknown[];
        timestamp?: string;
        name?: string;
      };
      switch (row.kind) {
        case "card": {
          const card = await store.getCardState(row.runId, row.threadKey);
          if (card?.cardRef) {
            await slack.update({
              channel: p.channel,
              ts: card.cardRef,
              text: p.text,
              blocks: p.blocks ?? [],
            });
            return {};
          }
          const binding = await store.getThreadBinding(row.runId, row.threadKey);
          const thread = binding?.thread ?? undefined;
          const earlier = await earlierPost(row, p.channel, thread);
          if (earlier) {
            // Posted before with what was due then: show what is due now.
            await slack.update({ channel: p.channel, ts: earlier, text: p.text, blocks: p.blocks ?? [] });
            attempted.delete(row.id);
            return { cardRef: earlier, ...(thread ? {} : { thread: earlier }) };
          }
          const posted = await slack.postMessage({
            channel: p.channel,
            text: p.text,
            ...(p.blocks ? { blocks: p.blocks } : {}),
            ...(thread ? { thread_ts: thread } : {}),
            metadata: metadataOf(row),
          });
          attempted.delete(row.id);
          // A slash command's card is posted in the channel: its message is the root of the run's thread.
          return { cardRef: posted.ts, ...(thread ? {} : { thread: posted.ts }) };
        }
        case "reply": {
          const [binding, card] = await Promise.all([
            store.getThreadBinding(row.runId, row.threadKey),
            store.getCardState(row.runId, row.threadKey),
          ]);
          const thread = binding?.thread ?? card?.cardRef ?? undefined;
          if (!(await earlierPost(row, p.channel, thread))) {
            await slack.postMessage({
              channel: p.channel,
              text: p.text,
              ...(p.blocks ? { blocks: p.blocks } : {}),
              ...(thread ? { thread_ts: thread } : {}),
              metadata: metadataOf(row),
            });
          }
          attempted.delete(row.id);
          return {};
        }
        case "reaction":
          await slack.addReaction({ channel: p.channel, timestamp: p.timestamp!, name: p.name! });
          return {};
      }
    },
  };
}

function metadataOf(row: OutboxRow): DispatchMessageMetadata {
  return {
    event_type: DISPATCH_MESSAGE_EVENT,
    event_payload: { run_id: row.runId, kind: row.kind, dedupe_key: row.dedupeKey },
  };
}

/** A run has one card, whatever card row posted it; a reply is its own row's. */
function postedBy(m: PostedMessage, row: OutboxRow): boolean {
  const meta = m.metadata;
  if (meta?.event_type !== DISPATCH_MESSAGE_EVENT || meta.event_payload?.run_id !== row.runId) return false;
  return row.kind === "card"
    ? meta.event_payload.kind === "card"
    : meta.event_payload.dedupe_key === row.dedupeKey;
}

import type { NotifierPlatform } from "../../notifier/platform.ts";
import type { OutboxRow, Store } from "../../store/store.ts";
import { cardFingerprint, outcomeReaction, renderFinalReply, renderStatusCard } from "./status-card.ts";
import type { SlackPoster } from "./web-api.ts";

/**
 * Slack as the notifier sees it: the status card (blocks) in the channel, a thread reply at a terminal
 * state and ✅/❌/🚫 on the triggering mention. A card is posted once and then edited, a reply goes into
 * the run's thread, a reaction onto the triggering message; what a row needs from its thread (the card's
 * ts, the thread) is read at delivery, not at enqueue.
 */
export function slackNotifierPlatform(deps: {
  slack: SlackPoster;
  store: Pick<Store, "getCardState" | "getThreadBinding">;
  editIntervalMs: number;
}): NotifierPlatform {
  const { slack, store } = deps;
  return {
    platform: "slack",
    source: "SLACK",
    editIntervalMs: deps.editIntervalMs,
    target: (b) => `slack:${b.workspace}:${b.channel}`,
    fingerprint: cardFingerprint,
    card: (run, b, now) => ({ channel: b.channel, ...renderStatusCard(run, b, now) }),
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
          const card = await store.getCardState(row.runId);
          if (card?.cardRef) {
            await slack.update({
              channel: p.channel,
              ts: card.cardRef,
              text: p.text,
              blocks: p.blocks ?? [],
            });
            return {};
          }
          const binding = await store.getThreadBinding(row.runId);
          const posted = await slack.postMessage({
            channel: p.channel,
            text: p.text,
            ...(p.blocks ? { blocks: p.blocks } : {}),
            ...(binding?.thread ? { thread_ts: binding.thread } : {}),
          });
          return { cardRef: posted.ts };
        }
        case "reply": {
          const [binding, card] = await Promise.all([
            store.getThreadBinding(row.runId),
            store.getCardState(row.runId),
          ]);
          const thread = binding?.thread ?? card?.cardRef ?? undefined;
          await slack.postMessage({
            channel: p.channel,
            text: p.text,
            ...(p.blocks ? { blocks: p.blocks } : {}),
            ...(thread ? { thread_ts: thread } : {}),
          });
          return {};
        }
        case "reaction":
          await slack.addReaction({ channel: p.channel, timestamp: p.timestamp!, name: p.name! });
          return {};
      }
    },
  };
}

import { createHmac, timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { InboxQueue } from "../../../src/integrations/inbox-queue.ts";
import type { OutboxRow } from "../../../src/store/store.ts";
import type { Surface, SurfaceContext, SurfaceDefinition } from "../../../src/surfaces/surface.ts";

/**
 * A minimal chat surface, built only on the surface contract (src/surfaces/surface.ts), as a new one
 * (Linear, Jira) would be: a signed webhook stored in the inbox before it is acknowledged, a handler that
 * starts a run and binds its thread, an audience, and cards and replies sent through the notifier. What it
 * "posts" lands in `FakeChat.messages`, as a platform's API would receive it.
 */
export const PLATFORM = "fakechat";
export const SECRET = "fake-chat-signing-secret";

export interface FakeMessage {
  id: string;
  kind: "card" | "reply";
  thread: string;
  text: string;
  edits: number;
}

export class FakeChat {
  readonly messages: FakeMessage[] = [];
}

/** The signature a FakeChat delivery carries: HMAC-SHA256 of the raw body. */
export function sign(body: string): string {
  return createHmac("sha256", SECRET).update(body).digest("hex");
}

export function fakeChatSurface(chat: FakeChat): SurfaceDefinition {
  return {
    platform: PLATFORM,
    configured: () => true,
    load: async () => ({ createSurface: (ctx) => createSurface(ctx, chat) }),
  };
}

async function createSurface(ctx: SurfaceContext, chat: FakeChat): Promise<Surface> {
  const runs = await ctx.runsApi({ id: "fakechat-bot", displayName: "FakeChat app" });
  const queue = new InboxQueue({
    source: PLATFORM,
    store: ctx.store,
    leaseMs: 30_000,
    pollMs: 100,
    concurrency: 2,
    log: ctx.log,
    handle: async (delivery) => {
      const event = JSON.parse(delivery.payload) as {
        id: string;
        thread: string;
        user: string;
        text: string;
      };
      const created = await runs.create(
        {
          prompt: event.text,
          source: "FAKECHAT",
          creator: { type: "user", uid: `${PLATFORM}:${event.user}`, display_name: event.user },
        },
        { idempotencyKey: `${PLATFORM}:${event.id}` },
      );
      await ctx.store.bindThread({
        runId: created.run_id,
        platform: PLATFORM,
        workspace: "fake",
        channel: event.thread,
        thread: event.thread,
        triggerRef: event.id,
        requester: event.user,
        createdAt: new Date().toISOString(),
      });
    },
  });
  const cards = new Map<string, FakeMessage>();
  return {
    platform: PLATFORM,
    audience: {
      platform: PLATFORM,
      place: (b) => ({ platform: PLATFORM, workspace: b.workspace, channel: b.channel }),
      includes: async (principalId) => ({
        kind: principalId.startsWith(`${PLATFORM}:`) ? "member" : "not_member",
      }),
      steering: () => "anyone",
      requesterOf: (b) => `${PLATFORM}:${b.requester}`,
      requesterName: (b) => b.requester,
    },
    inbound: {
      register(server: FastifyInstance) {
        server.register(async (scope) => {
          // The raw body, for the signature: this scope reads JSON itself, after verifying it.
          scope.removeContentTypeParser("application/json");
          scope.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) =>
            done(null, body),
          );
          scope.post("/fakechat/events", async (req, reply) => {
            const raw = req.body as string;
            const given = Buffer.from(String(req.headers["x-fakechat-signature"] ?? ""), "hex");
            const wanted = Buffer.from(sign(raw), "hex");
            // Verified on the raw body before anything is parsed.
            if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) {
              return reply.code(401).send({ error: "bad signature" });
            }
            const event = JSON.parse(raw) as { id: string };
            await ctx.store.acceptInbound({
              source: PLATFORM,
              kind: "message",
              deliveryId: event.id,
              payload: raw,
              keys: [{ key: `${PLATFORM}:${event.id}` }],
            });
            queue.kick();
            return reply.code(202).send({ ok: true });
          });
        });
      },
      start: () => queue.start(),
      stop: () => queue.stop(),
      idle: () => queue.idle(),
    },
    ...(ctx.outbound
      ? {
          notifier: {
            platform: PLATFORM,
            source: "FAKECHAT",
            editIntervalMs: 0,
            target: (b) => `${PLATFORM}:${b.channel}`,
            fingerprint: (run) => `${run.state}`,
            card: (run, b) => ({ thread: b.channel, text: `${run.state}: ${run.title}` }),
            finalReply: (run, b) => ({
              thread: b.channel,
              text: `@${b.requester} ${run.state.toLowerCase()}`,
            }),
            outcomeReaction: () => undefined,
            send: async (row: OutboxRow) => {
              const { thread, text } = row.payload as { thread: string; text: string };
              if (row.kind === "card") {
                const card = cards.get(row.runId);
                if (card) {
                  card.text = text;
                  card.edits += 1;
                  return { cardRef: card.id };
                }
                const posted: FakeMessage = {
                  id: `m${chat.messages.length + 1}`,
                  kind: "card",
                  thread,
                  text,
                  edits: 0,
                };
                cards.set(row.runId, posted);
                chat.messages.push(posted);
                return { cardRef: posted.id };
              }
              chat.messages.push({
                id: `m${chat.messages.length + 1}`,
                kind: "reply",
                thread,
                text,
                edits: 0,
              });
              return {};
            },
          },
        }
      : {}),
  };
}

import { LINEAR_WEBHOOK_DEFAULT_MAX_BODY_BYTES, LinearWebhookClient } from "@linear/sdk/webhooks";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { RunError } from "../../model/errors.ts";
import type { InboxQueue, InboxStore } from "../inbox-queue.ts";
import { DEFAULT_UNVERIFIED_BODY_BUDGET_BYTES, UnverifiedBodyBudget } from "../unverified-body-budget.ts";
import { parseSessionEvent, type SessionEvent } from "./session-event.ts";

export const LINEAR_WEBHOOK_PATH = "/linear/webhooks";

export interface LinearWebhookRouteDeps {
  webhookSecret: string;
  store: Pick<InboxStore, "acceptInbound">;
  /** Handles the stored events, after the acknowledgement. */
  queue: Pick<InboxQueue, "kick">;
  /**
   * Called for a newly stored event before it is acknowledged: the first answer on Linear goes out
   * without waiting for a free handler. A failure is logged; the handler answers too (deduped).
   */
  heard?: (event: SessionEvent) => Promise<void>;
  log: Logger;
  /** Bytes of not-yet-verified bodies this route holds at most across requests. */
  unverifiedBodyBudgetBytes?: number;
}

/**
 * POST /linear/webhooks: refuses an unsigned or oversized body before reading it, verifies
 * `Linear-Signature` (HMAC-SHA256 of the raw body, compared in constant time) and the signed
 * `webhookTimestamp` (within 60 s, so a captured delivery cannot be replayed later) with `@linear/sdk`'s
 * LinearWebhookClient before anything is parsed, stores an agent session event in the inbox (deduped on
 * `Linear-Delivery` and on what it asks for) and answers 200 — Linear counts any other status as a failed
 * delivery and sends it again. The work is the queue's.
 */
export class LinearWebhookRoute {
  private readonly deps: LinearWebhookRouteDeps;
  private readonly verifier: LinearWebhookClient;
  readonly unverifiedBodies: UnverifiedBodyBudget;

  constructor(deps: LinearWebhookRouteDeps) {
    this.deps = deps;
    this.verifier = new LinearWebhookClient(deps.webhookSecret);
    this.unverifiedBodies = new UnverifiedBodyBudget(
      deps.unverifiedBodyBudgetBytes ?? DEFAULT_UNVERIFIED_BODY_BUDGET_BYTES,
    );
  }

  /** Mounts the route. Call before the server listens. */
  register(server: FastifyInstance): void {
    server.register(async (scope) => {
      // Encapsulated: the raw bytes are kept for this route only (the signature covers them exactly).
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));
      scope.post(
        LINEAR_WEBHOOK_PATH,
        {
          bodyLimit: LINEAR_WEBHOOK_DEFAULT_MAX_BODY_BYTES,
          onRequest: async (req, reply) => {
            if (!header(req, "linear-signature")) {
              throw new RunError("authentication_required", "Linear webhook: missing Linear-Signature");
            }
            if (Number(header(req, "content-length")) > LINEAR_WEBHOOK_DEFAULT_MAX_BODY_BYTES) {
              throw tooLarge(reply);
            }
          },
          preParsing: async (req, reply, payload) =>
            this.unverifiedBodies.meter(req, reply, payload, LINEAR_WEBHOOK_DEFAULT_MAX_BODY_BYTES, () =>
              tooLarge(reply),
            ),
        },
        (req, reply) => this.handle(req, reply),
      );
    });
  }

  private async handle(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    this.verify(raw, header(req, "linear-signature") ?? "");
    const delivery = header(req, "linear-delivery");
    if (!delivery) throw new RunError("invalid_request", "Linear webhook: missing Linear-Delivery");
    let payload: unknown;
    try {
      payload = JSON.parse(raw.toString("utf8"));
    } catch {
      throw new RunError("invalid_request", "Linear webhook: the body is not JSON");
    }
    const event = parseSessionEvent(payload);
    // Other webhook types (the app may subscribe to more) are acknowledged and left alone.
    if (typeof event === "string") return reply.code(200).send({ ok: true, ignored: event });

    const keys = [{ key: `linear:delivery:${delivery}` }];
    // Linear may send an event again under a new delivery id: what it asks for is deduped too.
    if (event.action === "created") keys.push({ key: `linear:session-created:${event.agentSession.id}` });
    if (event.agentActivity) keys.push({ key: `linear:activity:${event.agentActivity.id}` });
    let accepted: boolean;
    try {
      accepted = await this.deps.store.acceptInbound({
        source: "linear",
        kind: event.action,
        deliveryId: delivery,
        payload: JSON.stringify(event),
        keys,
      });
    } catch (err) {
      this.deps.log.error({ err, delivery }, "could not store a Linear delivery");
      throw new RunError(
        "resource_unavailable",
        "Linear webhook: could not store the delivery; send it again",
        {
          retryAfterSeconds: 5,
        },
      );
    }
    if (accepted) {
      this.deps.queue.kick();
      await this.deps
        .heard?.(event)
        .catch((err: unknown) =>
          this.deps.log.warn({ err, delivery }, "could not record the first answer to a Linear event"),
        );
    }
    return reply.code(200).send({ ok: true, ...(accepted ? {} : { duplicate: true }) });
  }

  /** The signature over the raw bytes, then the signed timestamp; nothing is read from the body before. */
  private verify(raw: Buffer, signature: string): void {
    try {
      if (this.verifier.verify(raw, signature)) return;
    } catch (err) {
      const why = err instanceof Error ? err.message : "";
      if (/timestamp/i.test(why)) {
        throw new RunError(
          "authentication_required",
          "Linear webhook: webhookTimestamp is missing or more than 60 s away from this server's clock",
        );
      }
    }
    throw new RunError("authentication_required", "Linear webhook: Linear-Signature does not match the body");
  }
}

/** The 413 for an oversized body; the connection is closed so the rest of the body is not read. */
function tooLarge(reply: FastifyReply): RunError {
  reply.header("connection", "close");
  return new RunError(
    "payload_too_large",
    `Linear webhook: a body is limited to ${LINEAR_WEBHOOK_DEFAULT_MAX_BODY_BYTES} bytes`,
  );
}

function header(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

import { Webhooks } from "@octokit/webhooks";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { GitHubWebhookConfig } from "../../config.ts";
import { RunError } from "../../model/errors.ts";
import type { InboxQueue, InboxStore } from "../inbox-queue.ts";
import { DEFAULT_UNVERIFIED_BODY_BUDGET_BYTES, UnverifiedBodyBudget } from "../unverified-body-budget.ts";
import {
  isTriggerEvent,
  type Payload,
  type TriggerSettings,
  triggerKeys,
  whyIgnored,
} from "./webhook-events.ts";

export const GITHUB_WEBHOOK_PATH = "/github/webhooks";

/** GitHub's own cap on a webhook payload; only events Dispatch handles may be that large. */
const HANDLED_EVENT_BODY_LIMIT = 25 * 1024 * 1024;
/** Any other event (GitHub sends every event the App subscribes to) is refused beyond this. */
const OTHER_EVENT_BODY_LIMIT = 1024 * 1024;

export interface WebhookRouteDeps {
  config: Pick<GitHubWebhookConfig, "webhookSecret" | "botHandle" | "appId">;
  /** The label that starts a run on an issue (settings `github.label`). */
  label: string;
  store: Pick<InboxStore, "acceptInbound">;
  /** Handles the stored trigger comments, after the acknowledgement. */
  queue: Pick<InboxQueue, "kick">;
  log: Logger;
  /** Bytes of not-yet-verified bodies this route holds at most across requests. */
  unverifiedBodyBudgetBytes?: number;
}

/**
 * POST /github/webhooks: refuses a body over its event's cap before reading it, verifies the signature on
 * the raw bytes before anything is parsed, drops what is not a trigger (webhook-events.ts), stores the
 * trigger in the inbox (deduped on the delivery id and the event's own keys, such as (repo, comment id)),
 * answers 202 and leaves the work to the queue.
 */
export class WebhookRoute {
  private readonly deps: WebhookRouteDeps;
  private readonly webhooks: Webhooks;
  readonly unverifiedBodies: UnverifiedBodyBudget;

  constructor(deps: WebhookRouteDeps) {
    this.deps = deps;
    this.webhooks = new Webhooks({ secret: deps.config.webhookSecret });
    this.unverifiedBodies = new UnverifiedBodyBudget(
      deps.unverifiedBodyBudgetBytes ?? DEFAULT_UNVERIFIED_BODY_BUDGET_BYTES,
    );
  }

  /** Mounts the route. Call before the server listens. */
  register(server: FastifyInstance): void {
    server.register(async (scope) => {
      // Encapsulated: the raw bytes are kept for this route only (the signature covers them exactly).
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(
        ["application/json", "application/x-www-form-urlencoded"],
        { parseAs: "buffer" },
        (_req, body, done) => done(null, body),
      );
      scope.post(
        GITHUB_WEBHOOK_PATH,
        {
          bodyLimit: HANDLED_EVENT_BODY_LIMIT,
          // Unsigned requests and bodies over their event's cap are refused before the body is read.
          onRequest: async (req, reply) => {
            if (!header(req, "x-hub-signature-256")) {
              throw new RunError("authentication_required", "GitHub webhook: missing X-Hub-Signature-256");
            }
            if (Number(header(req, "content-length")) > bodyLimit(req)) throw tooLarge(req, reply);
          },
          // Counted as it arrives (also without Content-Length), against its cap and the route's budget.
          preParsing: async (req, reply, payload) =>
            this.unverifiedBodies.meter(req, reply, payload, bodyLimit(req), () => tooLarge(req, reply)),
        },
        (req, reply) => this.handle(req, reply),
      );
    });
  }

  private trigger(): TriggerSettings {
    return { botHandle: this.deps.config.botHandle, appId: this.deps.config.appId, label: this.deps.label };
  }

  private async handle(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const raw = Buffer.isBuffer(req.body) ? req.body.toString("utf8") : "";
    const signature = header(req, "x-hub-signature-256") ?? "";
    let valid = false;
    try {
      valid = await this.webhooks.verify(raw, signature);
    } catch {
      valid = false;
    }
    if (!valid) throw new RunError("authentication_required", "GitHub webhook: signature mismatch");

    const event = header(req, "x-github-event");
    const delivery = header(req, "x-github-delivery");
    if (!event || !delivery) {
      throw new RunError("invalid_request", "GitHub webhook: missing X-GitHub-Event or X-GitHub-Delivery");
    }
    const payload = parsePayload(header(req, "content-type") ?? "", raw);
    if (!payload) throw new RunError("invalid_request", "GitHub webhook: the body is not a JSON payload");
    if (event === "ping") return reply.code(200).send({ ok: true });

    const ignored = whyIgnored(event, payload, this.trigger());
    if (ignored) return reply.code(202).send({ ok: true, ignored });

    if (!(await this.accept(event, delivery, payload))) {
      req.log.debug({ delivery }, "duplicate GitHub delivery acknowledged");
      return reply.code(200).send({ ok: true, duplicate: true });
    }
    this.deps.queue.kick();
    return reply.code(202).send({ ok: true });
  }

  /**
   * Stores the delivery for the queue, deduped on the delivery id (redeliveries reuse it) and on the
   * event's own keys (a comment delivered under two ids is one comment). Only a stored delivery is acknowledged: if the store cannot take it, GitHub is answered
   * 503 and the delivery can be redelivered.
   */
  private async accept(event: string, delivery: string, p: Payload): Promise<boolean> {
    try {
      return await this.deps.store.acceptInbound({
        source: "github",
        kind: event,
        deliveryId: delivery,
        payload: JSON.stringify(p),
        keys: [`github:delivery:${delivery}`, ...triggerKeys(event, p)].map((key) => ({ key })),
      });
    } catch (err) {
      this.deps.log.error({ err, delivery }, "could not store a GitHub delivery");
      throw new RunError(
        "resource_unavailable",
        "GitHub webhook: could not store the delivery; redeliver it",
        {
          retryAfterSeconds: 5,
        },
      );
    }
  }
}

function bodyLimit(req: FastifyRequest): number {
  return isTriggerEvent(header(req, "x-github-event") ?? "")
    ? HANDLED_EVENT_BODY_LIMIT
    : OTHER_EVENT_BODY_LIMIT;
}

/** The 413 for an oversized body; the connection is closed so the rest of the body is not read. */
function tooLarge(req: FastifyRequest, reply: FastifyReply): RunError {
  reply.header("connection", "close");
  return new RunError(
    "payload_too_large",
    `GitHub webhook: a ${header(req, "x-github-event") ?? "webhook"} body is limited to ${bodyLimit(req)} bytes`,
  );
}

function header(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** GitHub sends JSON, or `payload=<json>` when the hook's content type is form-encoded. */
function parsePayload(contentType: string, raw: string): Record<string, unknown> | undefined {
  try {
    const json = contentType.startsWith("application/x-www-form-urlencoded")
      ? new URLSearchParams(raw).get("payload")
      : raw;
    if (json === null) return undefined;
    const parsed = JSON.parse(json) as unknown;
    return parsed && typeof parsed === "object" && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

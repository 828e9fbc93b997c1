import { createHmac, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { RunError } from "../../model/errors.ts";
import type { InboxQueue, InboxStore } from "../inbox-queue.ts";
import { DEFAULT_UNVERIFIED_BODY_BUDGET_BYTES, UnverifiedBodyBudget } from "../unverified-body-budget.ts";
import { parseTrigger, type TriggerSettings } from "./webhook-events.ts";

export const JIRA_WEBHOOK_PATH = "/jira/webhooks";

/** A Jira webhook carries the issue's fields; a long description fits well within this. */
const BODY_LIMIT = 2 * 1024 * 1024;

export interface JiraWebhookRouteDeps {
  flavour: "cloud" | "datacenter";
  webhookSecret: string;
  triggers: TriggerSettings;
  store: Pick<InboxStore, "acceptInbound">;
  /** Handles the stored triggers, after the acknowledgement. */
  queue: Pick<InboxQueue, "kick">;
  log: Logger;
  /** Bytes of not-yet-verified bodies this route holds at most across requests. */
  unverifiedBodyBudgetBytes?: number;
}

/**
 * POST /jira/webhooks (SECURITY.md). On Cloud, `X-Hub-Signature: sha256=<hex>` is the HMAC-SHA256 of the
 * raw body under JIRA_WEBHOOK_SECRET, checked before anything is parsed. Data Center cannot sign, so its
 * webhook URL carries the secret (`?secret=…`), compared in constant time before the body is read; the
 * access log never shows it (log.ts). What counts is decided on the verified payload (webhook-events.ts);
 * a trigger is stored in the inbox, deduped on the delivery and on what it is about (the comment, the
 * changelog entry), and answered 200 — Jira retries anything else. The work is the queue's.
 */
export class JiraWebhookRoute {
  private readonly deps: JiraWebhookRouteDeps;
  private readonly secret: Buffer;
  readonly unverifiedBodies: UnverifiedBodyBudget;

  constructor(deps: JiraWebhookRouteDeps) {
    this.deps = deps;
    this.secret = Buffer.from(deps.webhookSecret, "utf8");
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
        JIRA_WEBHOOK_PATH,
        {
          bodyLimit: BODY_LIMIT,
          onRequest: async (req, reply) => {
            if (this.deps.flavour === "datacenter") this.verifyUrlSecret(req);
            else if (!header(req, "x-hub-signature")) {
              throw new RunError(
                "authentication_required",
                "Jira webhook: missing X-Hub-Signature; give the webhook the secret Dispatch has as JIRA_WEBHOOK_SECRET",
              );
            }
            if (Number(header(req, "content-length")) > BODY_LIMIT) throw tooLarge(reply);
          },
          preParsing: async (req, reply, payload) =>
            this.unverifiedBodies.meter(req, reply, payload, BODY_LIMIT, () => tooLarge(reply)),
        },
        (req, reply) => this.handle(req, reply),
      );
    });
  }

  private async handle(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    if (this.deps.flavour === "cloud") this.verifySignature(raw, header(req, "x-hub-signature") ?? "");
    let payload: unknown;
    try {
      payload = JSON.parse(raw.toString("utf8"));
    } catch {
      throw new RunError("invalid_request", "Jira webhook: the body is not JSON");
    }
    const trigger = parseTrigger(payload, this.deps.triggers);
    if ("ignored" in trigger) return reply.code(200).send({ ok: true, ignored: trigger.ignored });

    // Jira sends a delivery again under the same identifier; what it is about is deduped as well, so a
    // second webhook registered for the same events starts nothing twice either.
    const delivery = header(req, "x-atlassian-webhook-identifier");
    const about = trigger.comment
      ? `jira:comment:${trigger.comment.id}`
      : `jira:changelog:${trigger.changelogId}:${trigger.kind}`;
    const keys = [{ key: about }, ...(delivery ? [{ key: `jira:delivery:${delivery}` }] : [])];
    let accepted: boolean;
    try {
      accepted = await this.deps.store.acceptInbound({
        source: "jira",
        kind: trigger.kind,
        deliveryId: delivery ?? about,
        payload: JSON.stringify(trigger),
        keys,
      });
    } catch (err) {
      this.deps.log.error({ err, issue: trigger.issue.key }, "could not store a Jira delivery");
      throw new RunError(
        "resource_unavailable",
        "Jira webhook: could not store the delivery; send it again",
        {
          retryAfterSeconds: 5,
        },
      );
    }
    if (accepted) this.deps.queue.kick();
    return reply.code(200).send({ ok: true, ...(accepted ? {} : { duplicate: true }) });
  }

  /** Cloud: the HMAC of the raw bytes, compared in constant time; nothing is read from the body before. */
  private verifySignature(raw: Buffer, signature: string): void {
    const given = /^sha256=([0-9a-f]{64})$/i.exec(signature.trim())?.[1];
    const expected = createHmac("sha256", this.secret).update(raw).digest();
    if (!given || !timingSafeEqual(Buffer.from(given, "hex"), expected)) {
      throw new RunError(
        "authentication_required",
        "Jira webhook: X-Hub-Signature does not match the body; check that the webhook's secret is JIRA_WEBHOOK_SECRET",
      );
    }
  }

  /** Data Center: the URL's `secret`, compared in constant time (as digests, so lengths never differ). */
  private verifyUrlSecret(req: FastifyRequest): void {
    const given = (req.query as Record<string, unknown> | undefined)?.secret;
    const digest = (value: Buffer) => createHmac("sha256", "jira-webhook-url").update(value).digest();
    const ok =
      typeof given === "string" && timingSafeEqual(digest(Buffer.from(given, "utf8")), digest(this.secret));
    if (!ok) {
      throw new RunError(
        "authentication_required",
        `Jira webhook: the URL's secret is missing or wrong; register the webhook as ${JIRA_WEBHOOK_PATH}?secret=<JIRA_WEBHOOK_SECRET>`,
      );
    }
  }
}

function tooLarge(reply: FastifyReply): RunError {
  reply.header("connection", "close");
  return new RunError("payload_too_large", `Jira webhook: a body is limited to ${BODY_LIMIT} bytes`);
}

function header(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

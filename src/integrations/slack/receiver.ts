import type { App, Receiver, ReceiverEvent } from "@slack/bolt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { RunError } from "../../model/errors.ts";
import type { InboundDelivery } from "../../store/store.ts";
import type { InboxQueue, InboxStore } from "../inbox-queue.ts";
import { DEFAULT_UNVERIFIED_BODY_BUDGET_BYTES, UnverifiedBodyBudget } from "../unverified-body-budget.ts";
import { inboundKeys } from "./inbound.ts";
import { checkTimestamp, verifySlackSignature } from "./signature.ts";

export const SLACK_EVENTS_PATH = "/slack/events";

/** Slash commands, events and interactivity payloads are a few KiB; anything near this is not Slack's. */
const SLACK_BODY_LIMIT = 1024 * 1024;

/** Context property saying the receiver already claimed the delivery's dedupe keys. */
export const CLAIMED = "dispatchInboundClaimed";

/**
 * Bolt's receiver on the project's Fastify server: events, slash commands and interactivity all arrive
 * at POST /slack/events. Order per docs/surfaces.md: verify the signature on the raw bytes, dedupe and
 * persist the delivery in the inbox (so a retry after a restart is still recognised, and a delivery
 * acknowledged before a crash is handled after it), answer at once; the inbox queue then hands the
 * delivery to bolt's listeners (`process`).
 */
export class FastifySlackReceiver implements Receiver {
  private app: App | undefined;
  private readonly signingSecret: string;
  private readonly store: Pick<InboxStore, "acceptInbound">;
  private readonly queue: Pick<InboxQueue, "kick">;
  private readonly log: Logger;
  readonly unverifiedBodies: UnverifiedBodyBudget;

  constructor(opts: {
    signingSecret: string;
    store: Pick<InboxStore, "acceptInbound">;
    queue: Pick<InboxQueue, "kick">;
    log: Logger;
    /** Bytes of not-yet-verified bodies this route holds at most across requests. */
    unverifiedBodyBudgetBytes?: number;
  }) {
    this.unverifiedBodies = new UnverifiedBodyBudget(
      opts.unverifiedBodyBudgetBytes ?? DEFAULT_UNVERIFIED_BODY_BUDGET_BYTES,
    );
    this.signingSecret = opts.signingSecret;
    this.store = opts.store;
    this.queue = opts.queue;
    this.log = opts.log;
  }

  init(app: App): void {
    this.app = app;
  }

  // The Fastify server is started and stopped by the service, not by bolt.
  async start(): Promise<void> {}
  async stop(): Promise<void> {}

  /** Mounts the route. Call before the server listens. */
  register(server: FastifyInstance): void {
    server.register(async (scope) => {
      // Encapsulated: these parsers keep the raw bytes for this route only; the API stays JSON-only.
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(
        ["application/x-www-form-urlencoded", "application/json"],
        { parseAs: "buffer" },
        (_req, body, done) => done(null, body),
      );
      scope.post(
        SLACK_EVENTS_PATH,
        {
          bodyLimit: SLACK_BODY_LIMIT,
          // Stale or unsigned requests are refused before their body is read. Callback hooks: a promise
          // per hook and request was measurable in a burst of deliveries (bench/README.md, "Fourth round").
          onRequest: (req, _reply, done) => {
            const check = checkTimestamp(header(req, "x-slack-request-timestamp"));
            if (!check.ok)
              return done(new RunError("authentication_required", `Slack request: ${check.reason}`));
            if (!header(req, "x-slack-signature")) {
              return done(
                new RunError("authentication_required", "Slack request: missing X-Slack-Signature"),
              );
            }
            done();
          },
          preParsing: (req, reply, payload, done) => {
            const declared = declaredLength(req);
            // Past the limit, Fastify refuses the body from its Content-Length without reading it.
            if (declared !== undefined && declared > SLACK_BODY_LIMIT) return done(null, payload);
            if (declared !== undefined) {
              return done(this.unverifiedBodies.holdDeclared(req, reply, declared) ?? null, payload);
            }
            done(
              null,
              this.unverifiedBodies.meter(req, reply, payload, SLACK_BODY_LIMIT, () => {
                reply.header("connection", "close");
                return new RunError(
                  "payload_too_large",
                  `Slack request: the body is limited to ${SLACK_BODY_LIMIT} bytes`,
                );
              }),
            );
          },
        },
        (req, reply) => this.handle(req, reply),
      );
    });
  }

  private async handle(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const check = verifySlackSignature(
      this.signingSecret,
      { signature: header(req, "x-slack-signature"), timestamp: header(req, "x-slack-request-timestamp") },
      raw,
    );
    if (!check.ok) throw new RunError("authentication_required", `Slack request: ${check.reason}`);

    const body = parseBody(header(req, "content-type") ?? "", raw);
    if (!body) throw new RunError("invalid_request", "Slack request: the body is not a Slack payload");
    if (body.type === "url_verification") return reply.send({ challenge: body.challenge });
    if (body.ssl_check) return reply.code(200).send();

    if (!(await this.accept(body))) {
      req.log.debug({ retry: header(req, "x-slack-retry-num") }, "duplicate Slack delivery acknowledged");
      return reply.code(200).send();
    }
    this.queue.kick();
    // Every listener acknowledges without a body: the answers are ephemeral messages and the status card.
    return reply.code(200).send();
  }

  /**
   * Stores the delivery in the inbox, deduped on its keys. Only a stored delivery is acknowledged: if the
   * store cannot take it, Slack gets an error (and retries an event; a person retypes a command).
   */
  private async accept(body: Record<string, unknown>): Promise<boolean> {
    const keys = inboundKeys(body);
    try {
      return await this.store.acceptInbound({
        source: "slack",
        kind: String(body.type ?? (body.command ? "command" : "unknown")),
        deliveryId: keys[0]?.key ?? String(body.type ?? "unknown"),
        payload: JSON.stringify(body),
        keys,
      });
    } catch (err) {
      this.log.error({ err }, "could not store a Slack delivery");
      throw new RunError("resource_unavailable", "Slack request: could not store it; try again", {
        retryAfterSeconds: 1,
      });
    }
  }

  /** Hands a stored delivery to bolt's listeners; resolves when they are done with it. */
  async process(delivery: InboundDelivery): Promise<void> {
    const app = this.app;
    if (!app) throw new Error("the Slack app is not initialised");
    const event: ReceiverEvent = {
      body: JSON.parse(delivery.payload) as Record<string, unknown>,
      // Acknowledged when it was stored.
      ack: async () => {},
      customProperties: { [CLAIMED]: true },
    };
    await app.processEvent(event);
  }
}

function header(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The body's length as its Content-Length declares it; undefined for a chunked body. */
function declaredLength(req: FastifyRequest): number | undefined {
  const length = header(req, "content-length");
  if (length === undefined || header(req, "transfer-encoding") !== undefined) return undefined;
  // node's parser accepts only digits here.
  return Number(length);
}

// biome-ignore lint/suspicious/noExplicitAny: Slack payloads are read field by field, defensively
function parseBody(contentType: string, raw: Buffer): Record<string, any> | undefined {
  try {
    if (contentType.startsWith("application/json")) {
      const parsed = JSON.parse(raw.toString("utf8")) as unknown;
      return parsed && typeof parsed === "object" && !Array.isArray(parsed)
        ? (parsed as Record<string, unknown>)
        : undefined;
    }
    const form = new URLSearchParams(raw.toString("utf8"));
    // Interactivity posts a form with one JSON `payload` field; slash commands are plain form fields.
    const payload = form.get("payload");
    if (payload !== null) {
      const parsed = JSON.parse(payload) as unknown;
      return parsed && typeof parsed === "object" ? (parsed as Record<string, unknown>) : undefined;
    }
    return Object.fromEntries(form);
  } catch {
    return undefined;
  }
}

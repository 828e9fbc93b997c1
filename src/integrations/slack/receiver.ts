import type { App, Receiver, ReceiverEvent } from "@slack/bolt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { RunError } from "../../model/errors.ts";
import type { Store } from "../../store/store.ts";
import { claimDelivery } from "./inbound.ts";
import { checkTimestamp, verifySlackSignature } from "./signature.ts";

export const SLACK_EVENTS_PATH = "/slack/events";

/** Bolt's own limit: Slack drops the request (and retries an event) after 3 s. */
const ACK_DEADLINE_MS = 2_500;

/** Context property saying the receiver already claimed the delivery's dedupe keys. */
export const CLAIMED = "dispatchInboundClaimed";

/**
 * Bolt's receiver on the project's Fastify server: events, slash commands and interactivity all arrive
 * at POST /slack/events. Order per INTEGRATIONS.md: verify the signature on the raw bytes, dedupe
 * (persisted, so a retry after a restart is still recognised), hand to bolt, answer as soon as the
 * listener acks; the listener then works asynchronously.
 */
export class FastifySlackReceiver implements Receiver {
  private app: App | undefined;
  private readonly signingSecret: string;
  private readonly store: Pick<Store, "claimInbound">;
  private readonly log: Logger;

  constructor(opts: { signingSecret: string; store: Pick<Store, "claimInbound">; log: Logger }) {
    this.signingSecret = opts.signingSecret;
    this.store = opts.store;
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
          // Stale or unsigned requests are refused before their body is read.
          onRequest: async (req) => {
            const check = checkTimestamp(header(req, "x-slack-request-timestamp"));
            if (!check.ok) throw new RunError("authentication_required", `Slack request: ${check.reason}`);
            if (!header(req, "x-slack-signature")) {
              throw new RunError("authentication_required", "Slack request: missing X-Slack-Signature");
            }
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

    if (!(await this.claim(body))) {
      req.log.debug({ retry: header(req, "x-slack-retry-num") }, "duplicate Slack delivery acknowledged");
      return reply.code(200).send();
    }
    const app = this.app;
    if (!app)
      throw new RunError("resource_unavailable", "the Slack app is starting", { retryAfterSeconds: 1 });

    const retryNum = header(req, "x-slack-retry-num");
    const retryReason = header(req, "x-slack-retry-reason");
    const response = await new Promise<unknown>((resolve) => {
      let done = false;
      const answer = (value: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(value);
      };
      const timer = setTimeout(() => {
        this.log.warn(
          { type: body.type ?? body.command },
          "Slack delivery not acknowledged in time; answering",
        );
        answer(undefined);
      }, ACK_DEADLINE_MS);
      const event: ReceiverEvent = {
        body,
        ack: async (value?: unknown) => answer(value),
        ...(retryNum ? { retryNum: Number(retryNum) } : {}),
        ...(retryReason ? { retryReason } : {}),
        customProperties: { [CLAIMED]: true },
      };
      app.processEvent(event).then(
        () => answer(undefined),
        (err: unknown) => {
          this.log.error({ err }, "Slack listener failed");
          answer(undefined);
        },
      );
    });
    if (response === undefined || response === "") return reply.code(200).send();
    if (typeof response === "string") return reply.code(200).type("text/plain; charset=utf-8").send(response);
    return reply.code(200).send(response);
  }

  /**
   * Dedupe. If the store cannot record the keys (busy beyond its timeout), the delivery is processed
   * anyway: RunsApi calls carry an idempotency key, and failing the ack would make Slack retry into the
   * same busy store.
   */
  private async claim(body: Record<string, unknown>): Promise<boolean> {
    try {
      return await claimDelivery(this.store, body);
    } catch (err) {
      this.log.warn({ err }, "could not record a Slack delivery for dedupe; processing it");
      return true;
    }
  }
}

function header(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
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

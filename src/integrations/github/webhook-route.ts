import { Webhooks } from "@octokit/webhooks";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { GitHubConfig } from "../../config.ts";
import { RunError } from "../../model/errors.ts";
import type { Store } from "../../store/store.ts";
import { type CommentPayload, whyIgnored } from "./comment-payload.ts";
import type { WorkQueue } from "./work-queue.ts";

export const GITHUB_WEBHOOK_PATH = "/github/webhooks";

export interface WebhookRouteDeps {
  config: Pick<GitHubConfig, "webhookSecret" | "botHandle" | "appId">;
  store: Pick<Store, "claimInbound">;
  queue: WorkQueue;
  /** Handles a trigger comment, after the acknowledgement. */
  onComment: (delivery: string, payload: CommentPayload) => Promise<void>;
  log: Logger;
}

/**
 * POST /github/webhooks: verifies the signature on the raw bytes before anything is parsed, drops what is
 * not a trigger, dedupes (delivery id and (repo, comment id), persisted), answers 202 and leaves the work
 * to the queue.
 */
export class WebhookRoute {
  private readonly deps: WebhookRouteDeps;
  private readonly log: Logger;
  private readonly webhooks: Webhooks;

  constructor(deps: WebhookRouteDeps) {
    this.deps = deps;
    this.log = deps.log;
    this.webhooks = new Webhooks({ secret: deps.config.webhookSecret });
    this.webhooks.on("issue_comment.created", ({ id, payload }) =>
      deps.onComment(id, payload as unknown as CommentPayload),
    );
  }

  /** Mounts the route. Call before the server listens. */
  register(server: FastifyInstance): void {
    server.register(async (scope) => {
      // Encapsulated: the raw bytes are kept for this route only (the signature covers them exactly).
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser(
        ["application/json", "application/x-www-form-urlencoded"],
        { parseAs: "buffer", bodyLimit: 26 * 1024 * 1024 },
        (_req, body, done) => done(null, body),
      );
      scope.post(
        GITHUB_WEBHOOK_PATH,
        {
          onRequest: async (req) => {
            if (!header(req, "x-hub-signature-256")) {
              throw new RunError("authentication_required", "GitHub webhook: missing X-Hub-Signature-256");
            }
          },
        },
        (req, reply) => this.handle(req, reply),
      );
    });
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

    const comment = payload as unknown as CommentPayload;
    const ignored = event === "issue_comment" ? whyIgnored(comment, this.deps.config) : "not issue_comment";
    if (ignored) return reply.code(202).send({ ok: true, ignored });

    if (!(await this.claim(delivery, comment))) {
      req.log.debug({ delivery }, "duplicate GitHub delivery acknowledged");
      return reply.code(200).send({ ok: true, duplicate: true });
    }
    this.deps.queue.enqueue(() =>
      this.webhooks.receive({ id: delivery, name: "issue_comment", payload } as never),
    );
    return reply.code(202).send({ ok: true });
  }

  /**
   * Dedupe on the delivery id (redeliveries reuse it) and on (repo, comment id). If the store cannot
   * record them, the delivery is processed anyway: the RunsApi calls carry idempotency keys.
   */
  private async claim(delivery: string, p: CommentPayload): Promise<boolean> {
    try {
      const claimed = await Promise.all([
        this.deps.store.claimInbound(`github:delivery:${delivery}`, "github"),
        this.deps.store.claimInbound(`github:comment:${p.repository.full_name}:${p.comment.id}`, "github"),
      ]);
      return claimed.every(Boolean);
    } catch (err) {
      this.log.warn({ err, delivery }, "could not record a GitHub delivery for dedupe; processing it");
      return true;
    }
  }
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

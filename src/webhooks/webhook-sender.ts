import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { Webhook } from "standardwebhooks";
import type { ClaimedWebhookDelivery, Store, WebhookAttemptResult } from "../store/store.ts";
import { inSpan } from "../telemetry/spans.ts";
import { postWebhook } from "./post-webhook.ts";
import { TargetRefused } from "./safe-target.ts";
import { webhookBody } from "./webhook-body.ts";

export interface WebhookSenderOptions {
  /** Deliveries attempted at once (across all endpoints). */
  concurrency: number;
  /** Attempts per delivery (counted in the store, so a restart does not reset them), then `failed`. */
  maxAttempts: number;
  /** Exponential backoff with jitter: the n-th retry waits base × 2^(n−1) × [1, 2), at most `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** An attempt without a whole answer within this long failed. */
  timeoutMs: number;
  /** Polling backstop for due deliveries (a delivery queued or redelivered wakes the sender at once). */
  pollMs: number;
  /** DISPATCH_WEBHOOK_ALLOW_PRIVATE: loopback and private targets are allowed (safe-target.ts). */
  allowPrivate: boolean;
}

export const DEFAULT_WEBHOOK_SENDER_OPTIONS: WebhookSenderOptions = {
  concurrency: 16,
  maxAttempts: 8,
  retryBaseMs: 5_000,
  retryMaxMs: 3_600_000,
  timeoutMs: 10_000,
  pollMs: 1_000,
  allowPrivate: false,
};

export type WebhookOutcome = "succeeded" | "retry" | "failed";

/**
 * Sends the webhook outbox (docs/api.md, "Webhooks"): claims due deliveries with a lease, so that replicas
 * on one store never send one twice, and each endpoint gets a run's events in order (the claim hands out a
 * run's next event only once the one before it is done). Each attempt is signed as Standard Webhooks says;
 * a 2xx answer is success, anything else (or none within the timeout) is retried later with backoff, and
 * after the last attempt the delivery is `failed`, listed and redeliverable.
 */
export class WebhookSender {
  readonly owner: string;
  private readonly store: Store;
  private readonly log: Logger;
  private readonly publicUrl: () => string;
  private readonly opts: WebhookSenderOptions;
  private readonly onOutcome: ((outcome: WebhookOutcome) => void) | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private running = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private wakePending = false;

  constructor(deps: {
    store: Store;
    log: Logger;
    publicUrl: () => string;
    options?: Partial<WebhookSenderOptions>;
    onOutcome?: (outcome: WebhookOutcome) => void;
  }) {
    this.store = deps.store;
    this.log = deps.log.child({ component: "webhooks" });
    this.publicUrl = deps.publicUrl;
    this.opts = { ...DEFAULT_WEBHOOK_SENDER_OPTIONS, ...deps.options };
    this.owner = `webhooks-${randomUUID()}`;
    this.onOutcome = deps.onOutcome;
  }

  /** How long a claimed delivery stays ours: past the longest attempt, so no other sender takes it meanwhile. */
  private get leaseMs(): number {
    return this.opts.timeoutMs * 3;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    // Only a queued delivery wakes it: a claim poll after every run change cost a create ≈ 3 % of its CPU,
    // whether or not the team had an endpoint. The signal is a hint, the poll the backstop (retries too).
    this.store.signals.on("webhook_queued", this.poke);
    this.loop = this.run();
  }

  /** Stops claiming, ends attempts under way and hands their deliveries back, unattempted. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.store.signals.off("webhook_queued", this.poke);
    this.stopping.abort();
    this.poke();
    await this.loop;
    await Promise.allSettled([...this.inFlight]);
  }

  private readonly poke = () => {
    this.wakePending = true;
    this.wakeUp?.();
  };

  private async run(): Promise<void> {
    while (this.running) {
      this.wakePending = false;
      const free = this.opts.concurrency - this.inFlight.size;
      let claimed = 0;
      if (free > 0) {
        try {
          const due = await this.store.claimWebhookDeliveries(this.owner, {
            limit: free,
            leaseMs: this.leaseMs,
          });
          claimed = due.length;
          for (const delivery of due) this.track(this.deliver(delivery));
        } catch (err) {
          if (!this.running) break;
          this.log.warn({ err }, "claiming webhook deliveries failed");
        }
      }
      if ((claimed > 0 && claimed === free) || this.wakePending) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.opts.pollMs);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.wakeUp = () => {
          this.wakeUp = undefined;
          done();
        };
      });
    }
  }

  private track(attempt: Promise<void>): void {
    const p = attempt.catch((err: unknown) => {
      // What escapes (the store closed under it) comes back once the lease expires.
      if (this.running)
        this.log.error({ err }, "a webhook attempt failed unrecorded; retried after its lease");
    });
    this.inFlight.add(p);
    void p.finally(() => {
      this.inFlight.delete(p);
      this.poke();
    });
  }

  private async deliver(d: ClaimedWebhookDelivery): Promise<void> {
    const log = this.log.child({
      deliveryId: d.id,
      endpointId: d.endpointId,
      runId: d.runId,
      type: d.eventType,
    });
    // The follow-ups queued before the run started are part of the run as GET shows it (submitted_prompt).
    const queued = await this.store.listQueuedPrompts([d.runId]);
    const body = webhookBody(d.event, this.publicUrl(), queued.get(d.runId) ?? []);
    const sentAt = new Date();
    const headers = {
      "webhook-id": d.eventId,
      "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)),
      "webhook-signature": new Webhook(d.secret).sign(d.eventId, sentAt, body),
    };
    let result: WebhookAttemptResult;
    try {
      const attributes = {
        "dispatch.run.id": d.runId,
        "dispatch.webhook.id": d.endpointId,
        "dispatch.webhook.event": d.eventType,
      };
      const answer = await inSpan(
        "webhook send",
        attributes,
        () =>
          postWebhook(new URL(d.url), headers, body, {
            timeoutMs: this.opts.timeoutMs,
            allowPrivate: this.opts.allowPrivate,
            signal: this.stopping.signal,
          }),
        (a, span) => span.setAttribute("http.response.status_code", a.status),
      );
      const ok = answer.status >= 200 && answer.status < 300;
      result = this.outcome(d, {
        status: answer.status,
        error: ok ? null : `HTTP ${answer.status}`,
        responseExcerpt: answer.excerpt || null,
        succeeded: ok,
      });
    } catch (err) {
      if (this.stopping.signal.aborted) {
        await this.store.releaseWebhookDelivery(d.id, this.owner);
        return;
      }
      const message = err instanceof Error ? err.message : String(err);
      result = this.outcome(d, { status: null, error: message, responseExcerpt: null, succeeded: false });
      if (err instanceof TargetRefused) log.warn({ error: message }, "webhook target refused");
    }
    if (!(await this.store.finishWebhookAttempt(d.id, this.owner, result))) {
      log.warn("a webhook delivery was taken over before its attempt was recorded");
      return;
    }
    this.onOutcome?.(result.outcome);
    if (result.outcome === "failed") {
      log.error({ attempts: d.attempts, error: result.error }, "webhook delivery failed for good");
    } else if (result.outcome === "retry") {
      log.info(
        { attempt: d.attempts, error: result.error, next: result.nextAttemptAt },
        "webhook delivery retried",
      );
    }
  }

  /** What the attempt's answer means: done, another attempt after a backoff, or none left. */
  private outcome(
    d: ClaimedWebhookDelivery,
    a: { status: number | null; error: string | null; responseExcerpt: string | null; succeeded: boolean },
  ): WebhookAttemptResult {
    const at = new Date().toISOString();
    const answer = { at, status: a.status, error: a.error, responseExcerpt: a.responseExcerpt };
    if (a.succeeded) return { outcome: "succeeded", ...answer };
    if (d.attempts >= this.opts.maxAttempts) return { outcome: "failed", ...answer };
    const exponential = this.opts.retryBaseMs * 2 ** (d.attempts - 1);
    const delay = Math.min(this.opts.retryMaxMs, exponential * (1 + Math.random()));
    return { outcome: "retry", ...answer, nextAttemptAt: new Date(Date.now() + delay).toISOString() };
  }
}

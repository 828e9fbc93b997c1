import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { RUN_STATES } from "../model/run-state.ts";
import { OUTBOX_STATES, type Store } from "../store/store.ts";

/** Prometheus metrics served at /metrics. Run gauges are read from the store at scrape time. */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<"method" | "route" | "status">;
  readonly httpDuration: Histogram<"method" | "route">;
  /** Notifier deliveries by message kind and outcome (sent, retry, rate_limited, dead). */
  readonly notifierDeliveries: Counter<"kind" | "outcome">;
  /** Webhook delivery attempts by outcome (succeeded, retry, failed). */
  readonly webhookDeliveries: Counter<"outcome">;

  constructor(store: Pick<Store, "countRunsByState" | "countOutboxByState">) {
    this.httpRequests = new Counter({
      name: "dispatch_http_requests_total",
      help: "HTTP requests served, by route and status.",
      labelNames: ["method", "route", "status"],
      registers: [this.registry],
    });
    this.httpDuration = new Histogram({
      name: "dispatch_http_request_duration_seconds",
      help: "HTTP request latency.",
      labelNames: ["method", "route"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [this.registry],
    });
    const byState = new Gauge({
      name: "dispatch_runs",
      help: "Runs by state.",
      labelNames: ["state"],
      registers: [this.registry],
      async collect() {
        const counts = await store.countRunsByState();
        for (const state of RUN_STATES) this.set({ state }, counts[state]);
      },
    });
    void byState;
    this.notifierDeliveries = new Counter({
      name: "dispatch_notifier_deliveries_total",
      help: "Notifier outbox delivery attempts by message kind and outcome (sent, retry, rate_limited, dead).",
      labelNames: ["kind", "outcome"],
      registers: [this.registry],
    });
    this.webhookDeliveries = new Counter({
      name: "dispatch_webhook_deliveries_total",
      help: "Webhook delivery attempts by outcome (succeeded, retry, failed = no attempt left).",
      labelNames: ["outcome"],
      registers: [this.registry],
    });
    new Gauge({
      name: "dispatch_outbox_messages",
      help: "Notifier outbox messages by state; dead = dead-lettered after the bounded attempts.",
      labelNames: ["state"],
      registers: [this.registry],
      async collect() {
        const counts = await store.countOutboxByState();
        for (const state of OUTBOX_STATES) this.set({ state }, counts[state]);
      },
    });
    new Gauge({
      name: "dispatch_queue_depth",
      help: "Runs waiting for a worker (QUEUED).",
      registers: [this.registry],
      async collect() {
        const counts = await store.countRunsByState();
        this.set(counts.QUEUED);
      },
    });
  }
}

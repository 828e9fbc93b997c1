import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { HttpMetrics } from "../../src/api/http-metrics.ts";

/** The same requests recorded by prom-client's own Counter and Histogram, as /metrics served them before. */
async function promClientText(requests: Array<[string, string, number, number]>): Promise<string> {
  const registry = new Registry();
  const counter = new Counter({
    name: "dispatch_http_requests_total",
    help: "HTTP requests served, by route and status.",
    labelNames: ["method", "route", "status"],
    registers: [registry],
  });
  const histogram = new Histogram({
    name: "dispatch_http_request_duration_seconds",
    help: "HTTP request latency.",
    labelNames: ["method", "route"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  for (const [method, route, status, seconds] of requests) {
    counter.inc({ method, route, status: String(status) });
    histogram.observe({ method, route }, seconds);
  }
  return registry.metrics();
}

describe("HTTP request metrics", () => {
  it("expose what prom-client's Counter and Histogram expose for the same requests", async () => {
    const requests: Array<[string, string, number, number]> = [
      ["GET", "/api/v1/agent/runs/:runId", 200, 0.0004],
      ["GET", "/api/v1/agent/runs/:runId", 200, 0.001],
      ["GET", "/api/v1/agent/runs/:runId", 404, 0.0031],
      ["POST", "/api/v1/agent/runs", 200, 0.02],
      ["GET", "/api/v1/agent/runs/:runId", 200, 3.5],
      ["GET", "unmatched", 404, 0.25],
      ["POST", "/api/v1/agent/runs", 429, 2.5],
    ];
    const registry = new Registry();
    const metrics = new HttpMetrics(registry);
    for (const [method, route, status, seconds] of requests) metrics.record(method, route, status, seconds);
    expect(await registry.metrics()).toBe(await promClientText(requests));
  });

  it("start again from zero when the registry is reset", async () => {
    const registry = new Registry();
    const metrics = new HttpMetrics(registry);
    metrics.record("GET", "/healthz", 200, 0.001);
    registry.resetMetrics();
    expect(await registry.metrics()).toBe(await promClientText([]));
  });
});

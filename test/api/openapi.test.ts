import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildOpenApiDocument } from "../../src/api/openapi.ts";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";

let t: TestDispatch;
beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
});
afterAll(() => t.stop());

describe("OpenAPI document", () => {
  it("the committed openapi.json matches the schemas the server validates with (run `npm run openapi` to update)", () => {
    const committed = JSON.parse(readFileSync(new URL("../../openapi.json", import.meta.url), "utf8"));
    expect(committed).toEqual(buildOpenApiDocument());
  });

  it("names only routes the server has: each operation's method and path answer", () => {
    const doc = buildOpenApiDocument() as { paths: Record<string, Record<string, unknown>> };
    for (const [path, methods] of Object.entries(doc.paths)) {
      const url = `/api/v1${path.replace(/\{(\w+)\}/g, ":$1")}`;
      for (const method of Object.keys(methods)) {
        expect(t.dispatch.server.hasRoute({ method: method.toUpperCase(), url }), `${method} ${url}`).toBe(
          true,
        );
      }
    }
  });

  it("is served without a key at /api/v1/openapi.json and describes every endpoint", async () => {
    const res = await fetch(`${t.url}/api/v1/openapi.json`);
    expect(res.status).toBe(200);
    const doc = await res.json();
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        "/agent/run",
        "/agent/runs",
        "/agent/runs/{runId}",
        "/agent/runs/{runId}/cancel",
        "/agent/runs/{runId}/events",
        "/agent/runs/{runId}/followups",
        "/agent/runs/{runId}/conversation",
        "/agent/runs/{runId}/timeline",
        "/agent/runs/{runId}/transcript",
        "/agent/runs/{runId}/transcript/content",
        "/agent/runs/{runId}/harness-usage",
        "/agent/runs/{runId}/interrupt",
        "/agent/runs/{runId}/approve",
        "/agent/runs/{runId}/budget",
        "/agent/conversations/{conversationId}",
        "/agent/conversations/{conversationId}/followups",
        "/agent/conversations/{conversationId}/interrupt",
        "/agent/conversations/{conversationId}/transcript",
        "/agent/conversations/{conversationId}/screenshots/{screenshotUid}/download",
        "/agent/run-by-external-reference",
        "/networking/egress-ranges",
        "/usage",
        "/agent/sessions/{sessionUuid}/redirect",
        "/agent/conversations/{conversationId}/redirect",
        "/agent/models",
        "/agent/environments",
        "/agent",
        "/agent/identities",
        "/agent/identities/{uid}",
        "/agent/schedules",
        "/agent/schedules/{scheduleId}",
        "/agent/schedules/{scheduleId}/pause",
        "/agent/schedules/{scheduleId}/resume",
        "/agent/artifacts/{artifactUid}",
        "/agent/artifacts/{artifactUid}/download",
        "/agent/artifacts/{artifactUid}/content",
        "/agent/runs/{runId}/handoff/attachments",
        "/agent/attachments/{attachmentId}/content",
        "/webhooks",
        "/webhooks/{webhookId}",
        "/webhooks/{webhookId}/deliveries",
        "/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver",
        "/audit-events",
      ].sort(),
    );
    const listParams = doc.paths["/agent/runs"].get.parameters.map((p: { name: string }) => p.name);
    for (const name of [
      "limit",
      "cursor",
      "sort_by",
      "sort_order",
      "state",
      "name",
      "config_name",
      "q",
      "task_status",
      "updated_after",
    ]) {
      expect(listParams).toContain(name);
    }
    expect(doc.components.schemas.RunItem.required).toContain("run_id");
    expect(doc.components.schemas.CreateRunRequest.properties.prompt).toBeTruthy();
  });
});

describe("health and metrics", () => {
  it("/healthz and /readyz answer without a key", async () => {
    expect(await (await fetch(`${t.url}/healthz`)).json()).toEqual({ status: "ok" });
    expect(await (await fetch(`${t.url}/readyz`)).json()).toMatchObject({ status: "ready" });
  });

  it("/metrics exposes request counts, latency, runs by state and queue depth", async () => {
    await t.api("POST", "/api/v1/agent/runs", { prompt: "x" });
    await t.api("GET", "/api/v1/agent/runs");
    const text = await (await fetch(`${t.url}/metrics`)).text();
    expect(text).toMatch(
      /dispatch_http_requests_total\{method="POST",route="\/api\/v1\/agent\/runs",status="200"\} \d+/,
    );
    expect(text).toContain("dispatch_http_request_duration_seconds_bucket");
    expect(text).toMatch(/dispatch_runs\{state="QUEUED"\} [1-9]/);
    expect(text).toMatch(/dispatch_queue_depth [1-9]/);
  });

  it("echoes a request id and never leaks the key into responses", async () => {
    const res = await fetch(`${t.url}/api/v1/agent/runs/unknown`, {
      headers: { authorization: `Bearer ${t.key}`, "x-request-id": "req-123" },
    });
    expect(res.headers.get("x-request-id")).toBe("req-123");
    const body = await res.text();
    expect(body).toContain("req-123");
    expect(body).not.toContain(t.key);
  });
});

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/dispatch.ts";
import {
  killAgentProcesses,
  newAdminKey,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

/**
 * Webhooks are as durable as runs (docs/api.md, "Webhooks"): a real `dispatch serve` killed with SIGKILL
 * while deliveries wait for a receiver that is down sends them, in order, once it runs again.
 */

// biome-ignore lint/suspicious/noExplicitAny: API bodies are asserted field by field
type Json = any;

let server: ServerProcess | undefined;
let receiver: WebhookReceiver | undefined;
let dataDir: string | undefined;

afterAll(async () => {
  if (server) await stopServerProcess(server);
  await receiver?.close();
  if (dataDir) {
    await killAgentProcesses(dataDir);
    await rm(dataDir, { recursive: true, force: true });
  }
}, 30_000);

describe("webhooks across a kill -9", () => {
  it("delivers what was pending when the process died, after the restart", async () => {
    dataDir = await mkdtemp(join(tmpdir(), "dispatch-webhook-kill-"));
    const key = newAdminKey();
    const env = { DISPATCH_WEBHOOK_ALLOW_PRIVATE: "true", DISPATCH_WEBHOOK_RETRY_BASE_MS: "1000" };
    server = await startServerProcess({ dataDir, key, env, startTimeoutMs: 30_000 });
    receiver = await startWebhookReceiver();
    let up = false;
    receiver.answer = () => (up ? 200 : 503);
    const created = await server.api("POST", "/api/v1/webhooks", { url: receiver.url });
    expect(created.status, created.text).toBe(201);
    receiver.secret = created.body.secret;
    const hook = created.body.id as string;

    const runId = (await server.api("POST", "/api/v1/agent/runs", { prompt: "$ echo durable" })).body.run_id;
    // The run is done and its first event has been refused at least once: everything of it is pending.
    const pending = await waitFor(
      async () => {
        const run = (await server!.api("GET", `/api/v1/agent/runs/${runId}`)).body;
        const { deliveries } = (await server!.api("GET", `/api/v1/webhooks/${hook}/deliveries`)).body;
        const mine = (deliveries as Json[]).filter((d) => d.run_id === runId);
        return run.state === "SUCCEEDED" && mine.length === 3 && mine.some((d) => d.attempts >= 1)
          ? mine
          : undefined;
      },
      { timeoutMs: 30_000, what: "the run to finish with its webhooks pending" },
    );
    expect(pending.every((d: Json) => d.state === "pending" || d.state === "sending")).toBe(true);
    expect(receiver.forRun(runId).every((r) => r.status === 503)).toBe(true);

    server.child.kill("SIGKILL");
    expect((await server.exited).signal).toBe("SIGKILL");
    up = true;
    server = await startServerProcess({ dataDir, key, env, startTimeoutMs: 30_000 });

    await waitFor(() => receiver!.forRun(runId).filter((r) => r.status === 200).length === 3, {
      timeoutMs: 30_000,
      what: "the pending webhooks after the restart",
    });
    const delivered = receiver.forRun(runId).filter((r) => r.status === 200);
    expect(delivered.map((r) => [r.type, r.body.data.state])).toEqual([
      ["run.created", undefined],
      ["run.state_changed", "INPROGRESS"],
      ["run.state_changed", "SUCCEEDED"],
    ]);
    expect(receiver.refused).toEqual([]);
    const { deliveries } = (await server.api("GET", `/api/v1/webhooks/${hook}/deliveries`)).body;
    expect((deliveries as Json[]).map((d) => d.state)).toEqual(["succeeded", "succeeded", "succeeded"]);
  }, 120_000);
});

import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/dispatch.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../support/postgres.ts";
import {
  killAgentProcesses,
  newAdminKey,
  type ServerProcess,
  startServerProcess,
  stopServerProcess,
} from "../support/server-process.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

/**
 * Webhooks on replicas (docs/api.md, "Webhooks"): two real `dispatch serve` processes on one PostgreSQL
 * database both run the notifier role, so both send webhooks. Every event reaches the receiver exactly
 * once, each run's in order, with one attempt each.
 */
const missing = process.env.CI ? undefined : postgresUnavailable();
if (missing)
  console.warn(`PostgreSQL webhook replica tests SKIPPED: ${missing} (apt-get install -y postgresql)`);

// biome-ignore lint/suspicious/noExplicitAny: rows are asserted field by field
type Json = any;

const RUNS = 8;
let cluster: PostgresCluster;
let databaseUrl: string;
const dataDirs: string[] = [];
const servers: ServerProcess[] = [];
let receiver: WebhookReceiver;

beforeAll(async () => {
  if (missing) return;
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
  receiver = await startWebhookReceiver();
  const key = newAdminKey();
  const env = {
    DATABASE_URL: databaseUrl,
    DISPATCH_SIGNING_KEY: randomBytes(32).toString("hex"),
    DISPATCH_WEBHOOK_ALLOW_PRIVATE: "true",
  };
  for (let i = 0; i < 2; i++) dataDirs.push(await mkdtemp(join(tmpdir(), "dispatch-pg-webhooks-")));
  // The first migrates the database; the second starts on it.
  servers.push(await startServerProcess({ dataDir: dataDirs[0]!, key, env, startTimeoutMs: 60_000 }));
  servers.push(
    await startServerProcess({
      dataDir: dataDirs[1]!,
      key,
      env,
      args: ["--role", "notifier"],
      startTimeoutMs: 60_000,
    }),
  );
}, 120_000);

afterAll(async () => {
  for (const server of servers) await stopServerProcess(server);
  await receiver?.close();
  for (const dir of dataDirs) {
    await killAgentProcesses(dir);
    await rm(dir, { recursive: true, force: true });
  }
  await cluster?.stop();
}, 60_000);

async function query(text: string, values: unknown[] = []): Promise<Json[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe.skipIf(Boolean(missing))("webhooks on PostgreSQL replicas", () => {
  it("sends each delivery once, each run's events in order", async () => {
    const api = servers[0]!;
    const created = await api.api("POST", "/api/v1/webhooks", { url: receiver.url });
    expect(created.status, created.text).toBe(201);
    receiver.secret = created.body.secret;

    const ids: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const res = await api.api("POST", "/api/v1/agent/runs", { prompt: `$ echo replica ${i}` });
      expect(res.status, res.text).toBe(200);
      ids.push(res.body.run_id);
    }
    await waitFor(async () => receiver.received.length >= RUNS * 3 && (await finished()) === RUNS * 3, {
      timeoutMs: 90_000,
      what: `${RUNS * 3} webhooks delivered`,
    });

    expect(receiver.refused).toEqual([]);
    const messageIds = receiver.received.map((r) => r.id);
    expect(new Set(messageIds).size).toBe(messageIds.length); // none twice
    expect(messageIds).toHaveLength(RUNS * 3);
    for (const id of ids) {
      expect(receiver.forRun(id).map((r) => [r.type, r.body.data.state])).toEqual([
        ["run.created", undefined],
        ["run.state_changed", "INPROGRESS"],
        ["run.state_changed", "SUCCEEDED"],
      ]);
    }
    const rows = await query("SELECT state, attempts FROM webhook_deliveries");
    expect(rows).toHaveLength(RUNS * 3);
    expect(rows.every((r) => r.state === "succeeded" && r.attempts === 1)).toBe(true);
  }, 120_000);
});

async function finished(): Promise<number> {
  const [row] = await query("SELECT count(*)::int AS n FROM webhook_deliveries WHERE state = 'succeeded'");
  return row.n;
}

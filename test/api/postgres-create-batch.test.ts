import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../support/postgres.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

/**
 * Creates sent at once to the API on PostgreSQL, whose plain creates of one turn are one statement
 * (src/store/postgres/run-create-batch.ts): a team with a webhook endpoint taking run.created has its
 * creates go the transaction path, and each of them reaches the receiver once; the other team's do not.
 */
const missing = process.env.CI ? undefined : postgresUnavailable();
if (missing) console.warn(`PostgreSQL API create batch tests SKIPPED: ${missing}`);

describe.skipIf(missing)("creates sent at once on PostgreSQL, one team with a run.created webhook", () => {
  let cluster: PostgresCluster;
  let t: TestDispatch;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    cluster = await startPostgres();
    receiver = await startWebhookReceiver();
    t = await startTestDispatch(
      {
        DATABASE_URL: await cluster.createDatabase(),
        DISPATCH_MAX_CONCURRENT_RUNS: "0",
        DISPATCH_WEBHOOK_ALLOW_PRIVATE: "true",
      },
      { webhooks: { pollMs: 50 } },
    );
  }, 120_000);

  afterAll(async () => {
    await t?.stop();
    await receiver?.close();
    await cluster?.stop();
  }, 60_000);

  it("delivers run.created once for each run of the team with the endpoint, none for the other team's", async () => {
    const hooked = await t.newKey("team_default");
    const other = await t.newKey("team_other");
    const created = await t.api("POST", "/api/v1/webhooks", { url: receiver.url, events: ["run.created"] });
    expect(created.status, created.text).toBe(201);
    receiver.secret = created.body.secret;

    const keys = Array.from({ length: 12 }, (_, i) => (i % 3 === 0 ? hooked : other));
    const answers = await Promise.all(
      keys.map((key, i) =>
        t.api("POST", "/api/v1/agent/runs", { prompt: `at once ${i}` }, { authorization: `Bearer ${key}` }),
      ),
    );
    for (const answer of answers) expect(answer.status, answer.text).toBe(200);
    const ids = answers.map((a) => a.body.run_id as string);
    const hookedIds = ids.filter((_, i) => keys[i] === hooked);
    await waitFor(() => hookedIds.every((id) => receiver.forRun(id).length >= 1), {
      timeoutMs: 30_000,
      what: "run.created of every run of the team with the endpoint",
    });
    for (const id of hookedIds) expect(receiver.forRun(id).map((r) => r.type)).toEqual(["run.created"]);
    for (const [i, id] of ids.entries()) {
      const team = keys[i] === hooked ? "team_default" : "team_other";
      expect((await t.dispatch.store.listEvents(id, 0, 10)).map((e) => e.seq)).toEqual([1]);
      const { events } = await t.dispatch.store.listAuditEvents(team, { limit: 100 });
      expect(events.filter((e) => e.action === "run.created" && e.target === id)).toHaveLength(1);
    }
    expect(receiver.received.filter((r) => !hookedIds.includes(r.body?.data?.run_id))).toEqual([]);
  });
});

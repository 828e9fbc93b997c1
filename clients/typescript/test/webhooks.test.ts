import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../../../test/support/dispatch.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../../../test/support/webhook-receiver.ts";
import { BadRequestError, Dispatch, NotFoundError, PermissionDeniedError } from "../src/index.ts";

// client.webhooks against a live Dispatch and a loopback receiver that verifies what it gets.

let t: TestDispatch;
let client: Dispatch;
let receiver: WebhookReceiver;

beforeAll(async () => {
  t = await startTestDispatch(
    {
      DISPATCH_WEBHOOK_ALLOW_PRIVATE: "true",
      DISPATCH_WEBHOOK_RETRY_BASE_MS: "50",
      DISPATCH_WEBHOOK_MAX_ATTEMPTS: "1",
    },
    { webhooks: { pollMs: 50 } },
  );
  client = new Dispatch({ apiKey: t.key, baseURL: `${t.url}/api/v1`, maxRetries: 0 });
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
});

describe("client.webhooks", () => {
  it("create answers the secret once; list, retrieve, deliveries, redeliver and delete", async () => {
    const created = await client.webhooks.create({ url: receiver.url, events: ["run.created"] });
    expect(created.secret).toMatch(/^whsec_/);
    receiver.secret = created.secret;
    expect((await client.webhooks.list()).webhooks.map((w) => w.id)).toEqual([created.id]);
    const shown = await client.webhooks.retrieve(created.id);
    expect(shown).toEqual({
      id: created.id,
      url: receiver.url,
      events: ["run.created"],
      created_at: created.created_at,
      created_by: created.created_by,
    });

    let down = true;
    receiver.answer = () => (down ? 500 : 200);
    const run = await client.runs.create({ prompt: "$ echo typed" });
    const failed = await waitFor(
      async () =>
        (await client.webhooks.listDeliveries(created.id, { limit: 5 })).deliveries.find(
          (d) => d.state === "failed",
        ),
      { timeoutMs: 30_000, what: "the delivery to fail" },
    );
    expect(failed).toMatchObject({
      run_id: run.run_id,
      event_type: "run.created",
      attempts: 1,
      last_status: 500,
    });
    down = false;
    expect(await client.webhooks.redeliver(created.id, failed.id)).toMatchObject({
      id: failed.id,
      state: "pending",
    });
    await waitFor(() => receiver.forRun(run.run_id).some((r) => r.status === 200), { timeoutMs: 30_000 });

    await client.webhooks.delete(created.id);
    await expect(client.webhooks.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("raises typed errors: 400 for a refused URL, 403 for a member key", async () => {
    await expect(client.webhooks.create({ url: "http://user:pw@example.com/" })).rejects.toBeInstanceOf(
      BadRequestError,
    );
    const member = new Dispatch({
      apiKey: await t.newKey("team_default", { role: "member" }),
      baseURL: `${t.url}/api/v1`,
      maxRetries: 0,
    });
    await expect(member.webhooks.list()).rejects.toBeInstanceOf(PermissionDeniedError);
    expect(() => client.webhooks.redeliver("wh_x", 0)).toThrow(/deliveryId must be/);
  });
});

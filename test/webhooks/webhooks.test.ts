import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

/**
 * Outbound webhooks end to end (docs/api.md, "Webhooks"): a real Dispatch executing scripted runs, and a
 * loopback receiver that verifies every delivery with the `standardwebhooks` package. Private targets are
 * allowed here (the receiver is on 127.0.0.1); the last block checks they are refused by default.
 */

// biome-ignore lint/suspicious/noExplicitAny: API bodies are asserted field by field
type Json = any;

let t: TestDispatch;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  t = await startTestDispatch(
    {
      DISPATCH_WEBHOOK_ALLOW_PRIVATE: "true",
      DISPATCH_WEBHOOK_RETRY_BASE_MS: "50",
      DISPATCH_WEBHOOK_MAX_ATTEMPTS: "3",
    },
    { webhooks: { pollMs: 50 } },
  );
}, 30_000);

afterAll(async () => {
  await t?.stop();
});

afterEach(async () => {
  // Each test's endpoints go, so that the next test's runs are not sent to them.
  for (const hook of (await t.api("GET", "/api/v1/webhooks")).body.webhooks ?? []) {
    await t.api("DELETE", `/api/v1/webhooks/${hook.id}`);
  }
  for (const r of receivers.splice(0)) await r.close();
});

/** A receiver and a webhook of the default team sending to it. */
async function hook(body: Json = {}): Promise<{ receiver: WebhookReceiver; webhook: Json }> {
  const receiver = await startWebhookReceiver();
  receivers.push(receiver);
  const res = await t.api("POST", "/api/v1/webhooks", { url: receiver.url, ...body });
  expect(res.status, res.text).toBe(201);
  receiver.secret = res.body.secret;
  return { receiver, webhook: res.body };
}

async function run(prompt: string): Promise<string> {
  const res = await t.api("POST", "/api/v1/agent/runs", { prompt });
  expect(res.status, res.text).toBe(200);
  return res.body.run_id;
}

/** The types (and states) of what the receiver got for the run, once `count` have arrived. */
async function received(receiver: WebhookReceiver, runId: string, count: number): Promise<string[]> {
  await waitFor(() => receiver.forRun(runId).filter((r) => r.status === 200).length >= count, {
    timeoutMs: 30_000,
    what: `${count} webhooks of run ${runId}`,
  });
  return receiver
    .forRun(runId)
    .filter((r) => r.status === 200)
    .map((r) =>
      r.type === "run.state_changed" ? `${r.body.data.previous_state}→${r.body.data.state}` : r.type,
    );
}

describe("webhooks", () => {
  it("creates a webhook with a secret shown once; lists and shows it without; admin keys only", async () => {
    const { webhook } = await hook({ description: "CI", events: ["run.state_changed"] });
    expect(webhook).toMatchObject({
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:/),
      description: "CI",
    });
    expect(webhook.id).toMatch(/^wh_[0-9a-f]{16}$/);
    expect(webhook.events).toEqual(["run.state_changed"]);
    // whsec_ + base64 of 24 to 64 random bytes.
    const key = Buffer.from(webhook.secret.slice("whsec_".length), "base64");
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(key.length).toBeGreaterThanOrEqual(24);
    expect(key.length).toBeLessThanOrEqual(64);

    const { secret: _, ...shownFields } = webhook;
    expect((await t.api("GET", "/api/v1/webhooks")).body.webhooks).toEqual([shownFields]);
    const shown = await t.api("GET", `/api/v1/webhooks/${webhook.id}`);
    expect(shown.body).not.toHaveProperty("secret");
    expect(shown.body.id).toBe(webhook.id);

    const member = await t.newKey("team_default", { role: "member" });
    const asMember = await t.api("GET", "/api/v1/webhooks", undefined, { authorization: `Bearer ${member}` });
    expect(asMember.status).toBe(403);
    const create = await t.api(
      "POST",
      "/api/v1/webhooks",
      { url: "https://example.com/hook" },
      { authorization: `Bearer ${member}` },
    );
    expect(create.status).toBe(403);

    const otherTeam = await t.newKey("team_other", { role: "admin" });
    const foreign = await t.api("GET", `/api/v1/webhooks/${webhook.id}`, undefined, {
      authorization: `Bearer ${otherTeam}`,
    });
    expect(foreign.status).toBe(404);
  });

  it("refuses what is not a webhook: unknown event types, other schemes, credentials in the URL", async () => {
    const cases: Array<[Json, RegExp]> = [
      [{ url: "http://127.0.0.1:1/x", events: ["run.exploded"] }, /events: each must be one of run\.created/],
      [{ url: "http://127.0.0.1:1/x", events: [] }, /events: name at least one/],
      [{ url: "ftp://example.com/x" }, /ftp: is not supported/],
      [{ url: "https://user:pw@example.com/x" }, /must not carry credentials/],
      [{ url: "not a url" }, /is not a URL/],
      [{ url: "http://127.0.0.1:1/x", extra: 1 }, /extra/],
    ];
    for (const [body, detail] of cases) {
      const res = await t.api("POST", "/api/v1/webhooks", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.detail).toMatch(detail);
    }
  });

  it("sends a SUCCEEDED run's events in order, each as GET shows the run", async () => {
    const { receiver } = await hook();
    const id = await run("$ echo hello");
    await waitForState(t, id, ["SUCCEEDED"], 30_000);
    expect(await received(receiver, id, 3)).toEqual([
      "run.created",
      "QUEUED→INPROGRESS",
      "INPROGRESS→SUCCEEDED",
    ]);
    const [created, , succeeded] = receiver.forRun(id);
    expect(created!.body).toMatchObject({
      type: "run.created",
      data: { run_id: id, run: { run_id: id, state: "QUEUED" } },
    });
    const now = (await t.api("GET", `/api/v1/agent/runs/${id}`)).body;
    // The run as the API shows it (run_time aside, which the API computes when asked).
    expect({ ...succeeded!.body.data.run, run_time: undefined }).toEqual({ ...now, run_time: undefined });
    expect(Date.parse(succeeded!.body.timestamp)).toBeLessThanOrEqual(Date.parse(now.updated_at));
    expect(receiver.refused).toEqual([]);
  });

  it("sends a FAILED and a CANCELLED run's events in order", async () => {
    const { receiver } = await hook();
    const failed = await run("$ exit 3");
    await waitForState(t, failed, ["FAILED"], 30_000);
    expect(await received(receiver, failed, 3)).toEqual([
      "run.created",
      "QUEUED→INPROGRESS",
      "INPROGRESS→FAILED",
    ]);

    const cancelled = await run("$ sleep 60");
    await waitForState(t, cancelled, ["INPROGRESS"], 30_000);
    expect((await t.api("POST", `/api/v1/agent/runs/${cancelled}/cancel`)).status).toBe(200);
    expect(await received(receiver, cancelled, 3)).toEqual([
      "run.created",
      "QUEUED→INPROGRESS",
      "INPROGRESS→CANCELLED",
    ]);
    expect(receiver.refused).toEqual([]);
  });

  it("sends a follow-up and the execution it starts, and only the event types asked for", async () => {
    const { receiver } = await hook();
    const { receiver: states } = await hook({ events: ["run.state_changed"] });
    const id = await run("$ echo one");
    await waitForState(t, id, ["SUCCEEDED"], 30_000);
    const res = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "$ echo two" });
    expect(res.status, res.text).toBeLessThan(300);
    await waitFor(async () => (await received(receiver, id, 7)).length === 7, { timeoutMs: 30_000 });
    expect(await received(receiver, id, 7)).toEqual([
      "run.created",
      "QUEUED→INPROGRESS",
      "INPROGRESS→SUCCEEDED",
      "run.followup",
      "SUCCEEDED→QUEUED",
      "QUEUED→INPROGRESS",
      "INPROGRESS→SUCCEEDED",
    ]);
    const followup = receiver.forRun(id)[3]!.body.data;
    expect(followup.followup).toMatchObject({ message: "$ echo two", outcome: "handoff_execution" });
    expect(await received(states, id, 5)).toEqual([
      "QUEUED→INPROGRESS",
      "INPROGRESS→SUCCEEDED",
      "SUCCEEDED→QUEUED",
      "QUEUED→INPROGRESS",
      "INPROGRESS→SUCCEEDED",
    ]);
  });

  it("retries a receiver that fails twice: the third attempt delivers, the run's next events after it", async () => {
    const { receiver, webhook } = await hook({ events: ["run.created", "run.state_changed"] });
    receiver.answer = (w, attempt) => (w.type === "run.created" && attempt <= 2 ? 503 : 200);
    const id = await run("$ echo retry");
    expect(await received(receiver, id, 3)).toEqual([
      "run.created",
      "QUEUED→INPROGRESS",
      "INPROGRESS→SUCCEEDED",
    ]);
    // The same message each time: one webhook-id, answered 503, 503, 200.
    const created = receiver.forRun(id).filter((r) => r.type === "run.created");
    expect(created.map((r) => r.status)).toEqual([503, 503, 200]);
    expect(new Set(created.map((r) => r.id)).size).toBe(1);
    const { deliveries } = (await t.api("GET", `/api/v1/webhooks/${webhook.id}/deliveries`)).body;
    const first = deliveries.find((d: Json) => d.run_id === id && d.event_type === "run.created");
    expect(first).toMatchObject({ state: "succeeded", last_status: 200, message_id: created[0]!.id });
    expect(first.attempts).toBeGreaterThanOrEqual(3);
  });

  it("fails a delivery after its last attempt, shows it, and redelivers it", async () => {
    const { receiver, webhook } = await hook({ events: ["run.created"] });
    let down = true;
    receiver.answer = () => (down ? 500 : 200);
    const id = await run("$ echo down");
    const path = `/api/v1/webhooks/${webhook.id}/deliveries`;
    const failed = await waitFor(
      async () =>
        (await t.api("GET", path)).body.deliveries.find((d: Json) => d.run_id === id && d.state === "failed"),
      { timeoutMs: 30_000, what: "the delivery to fail" },
    );
    expect(failed).toMatchObject({ attempts: 3, last_status: 500, last_error: "HTTP 500" });
    expect(failed.response_excerpt).toBe("no thanks (500)");
    expect(failed).not.toHaveProperty("next_attempt_at");
    expect(receiver.forRun(id).map((r) => r.status)).toEqual([500, 500, 500]);

    down = false;
    const redeliver = await t.api("POST", `${path}/${failed.id}/redeliver`);
    expect(redeliver.status, redeliver.text).toBe(202);
    expect(redeliver.body).toMatchObject({ id: failed.id, state: "pending", attempts: 0 });
    await waitFor(
      async () =>
        (await t.api("GET", path)).body.deliveries.find((d: Json) => d.id === failed.id).state ===
        "succeeded",
      {
        timeoutMs: 30_000,
        what: "the redelivery",
      },
    );
    expect(receiver.forRun(id).map((r) => r.status)).toEqual([500, 500, 500, 200]);
    expect(receiver.forRun(id).at(-1)!.id).toBe(failed.message_id);

    expect((await t.api("POST", `${path}/999999/redeliver`)).status).toBe(404);
    expect((await t.api("POST", `${path}/x/redeliver`)).status).toBe(404);
    expect((await t.api("GET", `${path}?cursor=abc`)).status).toBe(400);
  });

  it("pages deliveries newest first", async () => {
    const { receiver, webhook } = await hook({ events: ["run.created", "run.state_changed"] });
    const id = await run("$ echo pages");
    await received(receiver, id, 3);
    const path = `/api/v1/webhooks/${webhook.id}/deliveries`;
    const first = (await t.api("GET", `${path}?limit=2`)).body;
    expect(first.deliveries.map((d: Json) => d.event_type)).toEqual([
      "run.state_changed",
      "run.state_changed",
    ]);
    expect(first.page_info.has_next_page).toBe(true);
    const second = (await t.api("GET", `${path}?limit=2&cursor=${first.page_info.next_cursor}`)).body;
    expect(second.deliveries.map((d: Json) => d.event_type)).toEqual(["run.created"]);
    expect(second.page_info).toEqual({ has_next_page: false });
  });

  it("stops sending once a webhook is deleted", async () => {
    const { receiver, webhook } = await hook();
    expect((await t.api("DELETE", `/api/v1/webhooks/${webhook.id}`)).status).toBe(204);
    expect((await t.api("GET", `/api/v1/webhooks/${webhook.id}`)).status).toBe(404);
    const id = await run("$ echo nobody listens");
    await waitForState(t, id, ["SUCCEEDED"], 30_000);
    expect(receiver.forRun(id)).toEqual([]);
  });
});

describe("webhook targets, with private addresses not allowed (the default)", () => {
  let strict: TestDispatch;
  beforeAll(async () => {
    strict = await startTestDispatch(
      { DISPATCH_WEBHOOK_RETRY_BASE_MS: "50", DISPATCH_WEBHOOK_MAX_ATTEMPTS: "1" },
      { webhooks: { pollMs: 50 } },
    );
  }, 30_000);
  afterAll(async () => {
    await strict?.stop();
  });

  it("refuses loopback, private, link-local, carrier-grade NAT and metadata addresses (400)", async () => {
    for (const url of [
      "http://127.0.0.1:8080/hook",
      "http://localhost/hook",
      "http://[::1]/hook",
      "http://[::ffff:127.0.0.1]/hook",
      "http://10.1.2.3/hook",
      "http://192.168.0.10/hook",
      "http://172.16.5.4/hook",
      "http://169.254.169.254/latest/meta-data/",
      "http://100.100.100.200/",
      "http://[fd00:ec2::254]/",
      "http://0.0.0.0/",
    ]) {
      const res = await strict.api("POST", "/api/v1/webhooks", { url });
      expect(res.status, url).toBe(400);
      expect(res.body.detail, url).toMatch(/refused: .* (loopback|private|link-local|metadata|unspecified)/);
    }
    expect((await strict.api("GET", "/api/v1/webhooks")).body.webhooks).toEqual([]);
  });

  it("checks again when sending: a target that became private is refused, the delivery fails", async () => {
    // As if a public name now resolved to loopback (DNS rebinding): the stored URL is checked at send time.
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    await strict.dispatch.store.createWebhookEndpoint({
      id: "wh_00000000000000aa",
      teamId: "team_default",
      url: receiver.url,
      events: ["run.created"],
      description: null,
      secret: `whsec_${Buffer.alloc(32, 7).toString("base64")}`,
      createdBy: "admin",
      createdAt: new Date().toISOString(),
    });
    const id = (await strict.api("POST", "/api/v1/agent/runs", { prompt: "$ echo rebound" })).body.run_id;
    const failed = await waitFor(
      async () =>
        (await strict.api("GET", "/api/v1/webhooks/wh_00000000000000aa/deliveries")).body.deliveries.find(
          (d: Json) => d.run_id === id && d.state === "failed",
        ),
      { timeoutMs: 30_000, what: "the delivery to be refused" },
    );
    expect(failed.last_error).toMatch(/refused: 127\.0\.0\.1 is a loopback address/);
    expect(failed).not.toHaveProperty("last_status");
    expect(receiver.received).toEqual([]);
    expect(receiver.refused).toEqual([]);
  });
});

describe("the sender's wake-up, with no polling backstop in the test's time", () => {
  let quiet: TestDispatch;

  beforeAll(async () => {
    quiet = await startTestDispatch(
      { DISPATCH_WEBHOOK_ALLOW_PRIVATE: "true" },
      { webhooks: { pollMs: 3_600_000 } },
    );
  }, 30_000);

  afterAll(async () => {
    await quiet?.stop();
  });

  it("claims only when a delivery was queued: runs of a team without endpoints never wake it", async () => {
    const store = quiet.dispatch.store;
    let claims = 0;
    const claim = store.claimWebhookDeliveries.bind(store);
    store.claimWebhookDeliveries = (...args) => {
      claims += 1;
      return claim(...args);
    };
    for (let i = 0; i < 5; i += 1) {
      const id = (await quiet.api("POST", "/api/v1/agent/runs", { prompt: `$ echo quiet ${i}` })).body.run_id;
      await waitForState(quiet, id, ["SUCCEEDED"]);
    }
    expect(claims).toBe(0);

    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    const res = await quiet.api("POST", "/api/v1/webhooks", { url: receiver.url, events: ["run.created"] });
    receiver.secret = res.body.secret;
    const id = (await quiet.api("POST", "/api/v1/agent/runs", { prompt: "$ echo heard" })).body.run_id;
    // Sent long before the poll (an hour): the queued delivery woke the sender.
    await waitFor(() => receiver.forRun(id).some((r) => r.status === 200), {
      timeoutMs: 30_000,
      what: `run.created of run ${id}`,
    });
    expect(claims).toBeGreaterThan(0);
  });
});

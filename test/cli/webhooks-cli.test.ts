import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliFor } from "../support/cli.ts";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

// `dispatch webhooks …` as a user runs it: a child process of src/main.ts configured only by
// DISPATCH_BASE_URL and DISPATCH_API_KEY, against a live server and a verifying loopback receiver.

const NO_STACK = /^\s+at /m;

let t: TestDispatch;
let receiver: WebhookReceiver;

beforeAll(async () => {
  t = await startTestDispatch(
    {
      DISPATCH_WEBHOOK_ALLOW_PRIVATE: "true",
      DISPATCH_WEBHOOK_RETRY_BASE_MS: "50",
      DISPATCH_WEBHOOK_MAX_ATTEMPTS: "2",
    },
    { webhooks: { pollMs: 50 } },
  );
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
});

const dispatch = cliFor(() => t);

describe("dispatch webhooks", () => {
  it("creates, lists, shows, pages deliveries, redelivers and deletes", async () => {
    const created = await dispatch([
      "webhooks",
      "create",
      receiver.url,
      "--event",
      "run.created",
      "--description",
      "CI",
    ]);
    expect(created.code, created.stderr).toBe(0);
    const [id, secret] = created.stdout.trim().split("\n");
    expect(id).toMatch(/^wh_[0-9a-f]{16}$/);
    expect(secret).toMatch(/^whsec_/);
    expect(created.stderr).toMatch(/signing secret, shown only now/);
    receiver.secret = secret;

    const list = await dispatch(["webhooks", "list"]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+CREATED\s+EVENTS\s+URL$/m);
    expect(list.stdout).toContain(`${id}  `);
    expect(list.stdout).not.toContain("whsec_");
    const shown = await dispatch(["webhooks", "get", id!]);
    expect(shown.stdout).toMatch(/^events\s+run\.created$/m);
    expect(shown.stdout).toMatch(/^description\s+CI$/m);

    // A receiver that refuses, then a redelivery it takes.
    let down = true;
    receiver.answer = () => (down ? 502 : 200);
    const run = await t.api("POST", "/api/v1/agent/runs", { prompt: "$ echo cli" });
    const failed = await waitFor(
      async () => {
        const out = JSON.parse((await dispatch(["webhooks", "deliveries", id!, "--json"])).stdout);
        return out.deliveries.find((d: { state: string }) => d.state === "failed");
      },
      { timeoutMs: 30_000, what: "the delivery to fail" },
    );
    expect(failed.run_id).toBe(run.body.run_id);
    const table = await dispatch(["webhooks", "deliveries", id!]);
    expect(table.stdout).toMatch(/^ID\s+CREATED\s+EVENT\s+STATE\s+ATTEMPTS\s+LAST ANSWER\s+RUN$/m);
    expect(table.stdout).toMatch(
      new RegExp(
        `^${failed.id}\\s.*run\\.created\\s+failed\\s+2\\s+HTTP 502: no thanks \\(502\\)\\s+${failed.run_id}$`,
        "m",
      ),
    );

    down = false;
    const again = await dispatch(["webhooks", "redeliver", id!, String(failed.id)]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/is pending again \(run\.created of run /);
    await waitFor(() => receiver.forRun(run.body.run_id).some((r) => r.status === 200), {
      timeoutMs: 30_000,
    });

    const removed = await dispatch(["webhooks", "delete", id!]);
    expect(removed.code, removed.stderr).toBe(0);
    const gone = await dispatch(["webhooks", "get", id!]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/no webhook .* in this team.*\(HTTP 404 resource_not_found\)/);
    expect(gone.stderr).not.toMatch(NO_STACK);
  });

  it("explains refusals: a member key, a private URL, a missing argument", async () => {
    const member = await t.newKey("team_default", { role: "member" });
    const asMember = await dispatch(["webhooks", "list"], { DISPATCH_API_KEY: member });
    expect(asMember.code).toBe(1);
    expect(asMember.stderr).toMatch(/needs an admin key .*\(HTTP 403/);

    const bad = await dispatch(["webhooks", "create", "ftp://example.com/x"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/ftp: is not supported.*\(HTTP 400 invalid_request\)/);

    const usage = await dispatch(["webhooks", "create"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/give the URL[\s\S]*Usage:[\s\S]*dispatch webhooks create <url>/);
    expect((await dispatch(["webhooks", "redeliver", "wh_x"])).code).toBe(2);
    expect((await dispatch(["webhooks"])).code).toBe(2);
  });
});

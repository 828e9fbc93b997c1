import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunError } from "../../src/model/errors.ts";
import { HttpRunsApi } from "../../src/runs/http-runs-api.ts";
import { readPlan, waitsForApproval } from "../../src/runs/waiting-run.ts";
import { CHANNEL, type SlackDispatch, startSlackDispatch, TEAM } from "../integrations/slack/support.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";

// Remote mode: a bot process (Slack app + notifier, no executor) fronts another Dispatch over HTTP.
let service: TestDispatch;
let bot: SlackDispatch;
beforeAll(async () => {
  service = await startTestDispatch();
  bot = await startSlackDispatch({
    env: {
      DISPATCH_RUN_SERVICE_URL: service.url,
      DISPATCH_RUN_SERVICE_API_KEY: service.key,
      DISPATCH_MAX_CONCURRENT_RUNS: "0",
    },
  });
});
afterAll(async () => {
  await bot?.stop();
  await service?.stop();
});

describe("remote mode (DISPATCH_RUN_SERVICE_URL)", () => {
  it("a slash command to the bot runs on the remote service, for the Slack user, and the card reports it", async () => {
    const res = await bot.command({ text: "$ echo from afar", user_id: "U42" });
    expect(res.status).toBe(200);
    const run = await waitFor(
      async () => (await service.api("GET", "/api/v1/agent/runs?source=SLACK")).body.runs[0],
      { what: "the run on the remote service" },
    );
    expect(run).toMatchObject({
      source: "SLACK",
      creator: { type: "user", uid: `slack:${TEAM}:U42` },
      trigger_url: `https://slack.com/app_redirect?team=${TEAM}&channel=${CHANNEL}`,
    });
    await waitForState(service, run.run_id, ["SUCCEEDED"]);
    // The bot's notifier reads the remote run over HTTP and answers in the thread, mentioning the user.
    await waitFor(
      () =>
        bot.fake
          .succeeded("chat.postMessage")
          .some((c) => String(c.args.text).includes("<@U42>") && c.args.channel === CHANNEL),
      { what: "the terminal reply" },
    );
    // Nothing ran on the bot itself.
    expect((await bot.t.api("GET", "/api/v1/agent/runs")).body.runs).toEqual([]);
  });

  it("the Cancel button on the bot cancels the remote run, in the clicking user's name", async () => {
    // Under the default `channel` policy the person cancelling must be in the run's channel.
    bot.fake.channelMembers.get(CHANNEL)?.push("U43");
    const res = await bot.command({ text: "$ sleep 30", user_id: "U43" });
    expect(res.status).toBe(200);
    const run = await waitFor(
      async () =>
        (await service.api("GET", "/api/v1/agent/runs?source=SLACK&state=INPROGRESS")).body.runs.find(
          (r: { creator: { uid: string } }) => r.creator.uid === `slack:${TEAM}:U43`,
        ),
      { what: "the remote run to start" },
    );
    await bot.clickCancel(run.run_id, { user: "U43" });
    const cancelled = await waitForState(service, run.run_id, ["CANCELLED"]);
    expect(cancelled.status_message.message).toBe("Cancelled by user-U43");
  });

  it("on_behalf_of is honoured for admin keys only", async () => {
    const member = await service.newKey("team_default");
    const body = {
      prompt: "x",
      on_behalf_of: { creator: { type: "user", uid: "slack:T:U1", display_name: "U1" }, source: "SLACK" },
    };
    const asAdmin = (await service.api("POST", "/api/v1/agent/runs", body)).body.run_id;
    const asMember = (
      await service.api("POST", "/api/v1/agent/runs", body, { authorization: `Bearer ${member}` })
    ).body.run_id;
    expect((await service.api("GET", `/api/v1/agent/runs/${asAdmin}`)).body).toMatchObject({
      source: "SLACK",
      creator: { uid: "slack:T:U1" },
    });
    expect((await service.api("GET", `/api/v1/agent/runs/${asMember}`)).body).toMatchObject({
      source: "API",
      creator: { type: "user" },
    });
  });

  it("HttpRunsApi maps the five operations and passes problem details through", async () => {
    const api = new HttpRunsApi({ baseUrl: `${service.url}/api/v1`, apiKey: service.key });
    const created = await api.create(
      { prompt: "$ true", title: "over http" },
      { idempotencyKey: "remote-1" },
    );
    const again = await api.create({ prompt: "$ true", title: "over http" }, { idempotencyKey: "remote-1" });
    expect(again.run_id).toBe(created.run_id);
    expect((await api.get(created.run_id)).title).toBe("over http");
    await waitForState(service, created.run_id, ["SUCCEEDED"]);
    expect(await api.followup(created.run_id, "$ sleep 30")).toMatchObject({ outcome: "handoff_execution" });
    await waitForState(service, created.run_id, ["INPROGRESS"]);
    await api.cancel(created.run_id);
    expect((await api.get(created.run_id)).state).toBe("CANCELLED");
    // The remote problem comes back as the domain's error: its code and the server's own detail.
    const refused = await api.cancel(created.run_id).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(RunError);
    expect(refused).toMatchObject({ code: "invalid_request", detail: expect.stringContaining("CANCELLED") });
    await expect(api.get("no-such-run")).rejects.toMatchObject({ code: "resource_not_found" });
    const page = await api.list({ sort_by: "updated_at", sort_order: "asc", limit: 500 });
    expect(page.runs.map((r) => r.run_id)).toContain(created.run_id);
  });

  it("HttpRunsApi answers a plan that waits for approval, and reads the plan from the transcript", async () => {
    const api = new HttpRunsApi({ baseUrl: `${service.url}/api/v1`, apiKey: service.key });
    const { run_id } = await api.create({ prompt: "$ echo planned", mode: "plan" });
    await waitForState(service, run_id, ["BLOCKED"], 30_000);
    const waiting = await api.get(run_id);
    expect(waitsForApproval(waiting)).toBe(true);
    expect(await readPlan(api, run_id)).toContain("$ echo planned");
    const revised = await api.approve(
      run_id,
      { action: "revise", message: "$ echo revised" },
      { idempotencyKey: "remote-revise" },
    );
    expect(revised.outcome).toBe("live_session");
    await waitFor(async () => (await readPlan(api, run_id))?.includes("$ echo revised"), {
      what: "the revised plan",
      timeoutMs: 30_000,
    });
    await waitForState(service, run_id, ["BLOCKED"], 30_000);
    await api.approve(run_id, { action: "approve" });
    expect((await waitForState(service, run_id, ["SUCCEEDED", "FAILED"], 30_000)).state).toBe("SUCCEEDED");
    await expect(api.approve(run_id, { action: "approve" })).rejects.toMatchObject({
      code: "conflict",
      detail: expect.stringContaining("no plan waiting"),
    });
  });
});

import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/dispatch.ts";
import { CHANNEL, nextTs, type SlackDispatch, startSlackDispatch, TEAM } from "./support.ts";

/** Waits until the run with this prompt exists and is bound to a Slack thread. */
async function runWithPrompt(s: SlackDispatch, prompt: string) {
  const run = await waitFor(async () => (await s.runs()).find((r) => r.prompt === prompt), {
    what: `a run with prompt ${JSON.stringify(prompt)}`,
  });
  await waitFor(() => s.t.dispatch.store.getThreadBinding(run.run_id), { what: "its thread binding" });
  return run;
}

describe("POST /slack/events: signatures", () => {
  let s: SlackDispatch;
  beforeAll(async () => {
    s = await startSlackDispatch();
  });
  afterAll(() => s.stop());

  it("answers 401 to a bad, stale or missing signature and creates nothing", async () => {
    const body = new URLSearchParams({
      team_id: TEAM,
      channel_id: CHANNEL,
      user_id: "U1",
      command: "/agent",
      text: "$ echo should never run",
    }).toString();
    const form = "application/x-www-form-urlencoded";
    const bad = await s.post(body, form, { "x-slack-signature": `v0=${"0".repeat(64)}` });
    const stale = await s.post(body, form, {
      "x-slack-request-timestamp": String(Math.floor(Date.now() / 1000) - 6 * 60),
    });
    const missing = await fetch(`${s.t.url}/slack/events`, {
      method: "POST",
      headers: { "content-type": form },
      body,
    });
    for (const res of [bad, stale, { status: missing.status, text: await missing.text() }]) {
      expect(res.status).toBe(401);
      expect(JSON.parse(res.text)).toMatchObject({ status: 401, error_code: "authentication_required" });
    }
    expect(JSON.parse(stale.text).detail).toContain("stale");
    // A body altered after signing does not verify either.
    const tampered = await s.post(body, form, {
      "x-slack-signature": (await import("../../../src/integrations/slack/signature.ts")).signSlackRequest(
        "8f742231b10e8888abcd99yyyzzz85a5",
        String(Math.floor(Date.now() / 1000)),
        `${body}x`,
      ),
    });
    expect(tampered.status).toBe(401);
    expect(await s.runs()).toEqual([]);
    expect(s.fake.calls).toEqual([]);
  });

  it("answers the url_verification challenge", async () => {
    const res = await s.post(
      JSON.stringify({
        token: "x",
        challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
        type: "url_verification",
      }),
      "application/json",
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual({
      challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
    });
  });

  it("leaves the API JSON-only: form bodies are still 415 there", async () => {
    const res = await s.t.api("POST", "/api/v1/agent/runs", "prompt=x", {
      "content-type": "application/x-www-form-urlencoded",
    });
    expect(res.status).toBe(415);
  });
});

describe("slash command", () => {
  let s: SlackDispatch;
  beforeAll(async () => {
    // env=web must name a configured environment (an unknown environment_id is refused at create).
    s = await startSlackDispatch({ settings: "slack: {}\nenvironments:\n  web: {}\n" });
  });
  afterAll(() => s.stop());

  it("creates a run for the user with the options, binds it to the channel and acks at once", async () => {
    const res = await s.command({
      text: "tidy the README [model=acme/m1, name=docs] env=web",
      user_id: "U7",
    });
    expect(res.status).toBe(200);
    expect(res.text).toBe("");
    const run = await runWithPrompt(s, "tidy the README");
    expect(run).toMatchObject({
      source: "SLACK",
      creator: { type: "user", uid: `slack:${TEAM}:U7`, display_name: "user-U7" },
      agent_config: { model_id: "acme/m1", name: "docs", environment_id: "web" },
      // A slash command has no message of its own: the run links to the channel it was typed in.
      trigger_url: `https://slack.com/app_redirect?team=${TEAM}&channel=${CHANNEL}`,
    });
    expect(await s.t.dispatch.store.getThreadBinding(run.run_id)).toMatchObject({
      platform: "slack",
      workspace: TEAM,
      channel: CHANNEL,
      triggerRef: null,
      requester: "U7",
    });
    // The notifier posts the status card as a root message; its ts becomes the run's thread.
    const binding = await waitFor(
      async () => {
        const b = await s.t.dispatch.store.getThreadBinding(run.run_id);
        return b?.thread ? b : undefined;
      },
      { what: "the status card's ts as the thread" },
    );
    const card = s.fake.message(CHANNEL, binding.thread!);
    expect(String(card?.text)).toContain("tidy the README");
    // The card names the agent with its model (agent-wording.ts).
    expect(JSON.stringify(card?.blocks)).toContain("Agent: Dispatch builtin (acme/m1)");
  });

  it("acks while another connection holds the write lock, before the work behind the ack", async () => {
    const dbPath = s.t.dispatch.config.databasePath;
    // A second connection on its own thread: node:sqlite waits for a lock synchronously, so the holder
    // must not share this event loop.
    const holder = new Worker(
      `const { DatabaseSync } = require("node:sqlite");
       const { workerData, parentPort } = require("node:worker_threads");
       const db = new DatabaseSync(workerData.path);
       db.exec("BEGIN IMMEDIATE");
       parentPort.postMessage("locked");
       setTimeout(() => { db.exec("COMMIT"); db.close(); parentPort.postMessage("released"); }, workerData.holdMs);`,
      { eval: true, workerData: { path: dbPath, holdMs: 400 } },
    );
    const released = new Promise((resolve) => holder.on("message", (m) => m === "released" && resolve(m)));
    await new Promise((resolve) => holder.once("message", resolve));
    // The work behind the ack (users.info, then creating the run) is held back until the ack is in.
    const releaseUsersInfo = s.fake.holdBack("users.info");
    try {
      const res = await s.command({ text: "$ echo while busy", user_id: "UBUSY" });
      expect(res.status).toBe(200);
      expect((await s.runs()).some((r) => r.prompt === "$ echo while busy")).toBe(false);
    } finally {
      releaseUsersInfo();
    }
    await released;
    await holder.terminate();
    await runWithPrompt(s, "$ echo while busy");
  });

  it("acks 40 concurrent commands and creates 40 runs", async () => {
    // Every ack comes while the work behind it (users.info, then creating the run) is held back.
    const releaseUsersInfo = s.fake.holdBack("users.info");
    try {
      const responses = await Promise.all(
        Array.from({ length: 40 }, (_, i) => s.command({ text: `$ echo burst ${i}`, user_id: `UB${i}` })),
      );
      for (const res of responses) expect(res.status).toBe(200);
      expect((await s.runs()).filter((r) => r.prompt.startsWith("$ echo burst"))).toEqual([]);
    } finally {
      releaseUsersInfo();
    }
    await waitFor(
      async () => (await s.runs()).filter((r) => r.prompt.startsWith("$ echo burst")).length === 40,
      {
        what: "40 runs",
      },
    );
  });

  it("a retyped command is one run; a different user typing the same text is another", async () => {
    const text = "$ echo typed twice";
    const first = await s.command({ text, user_id: "U2" });
    const again = await s.command({ text, user_id: "U2" });
    const other = await s.command({ text, user_id: "U3" });
    expect([first.status, again.status, other.status]).toEqual([200, 200, 200]);
    await waitFor(async () => (await s.runs()).filter((r) => r.prompt === text).length === 2, {
      what: "2 runs",
    });
    await s.t.dispatch.surfaces.get("slack")!.inbound!.idle();
    const runs = (await s.runs()).filter((r) => r.prompt === text);
    expect(runs.map((r) => r.creator.uid).sort()).toEqual([`slack:${TEAM}:U2`, `slack:${TEAM}:U3`]);
  });

  it("answers grammar errors with an ephemeral message listing the valid keys", async () => {
    await s.command({ text: "fix it colour=red", user_id: "U4" });
    const text = await s.ephemeral("U4");
    expect(text).toContain('unknown option "colour"');
    expect(text).toContain("model, name, env, skill, title, harness");
    expect((await s.runs()).some((r) => r.prompt.includes("fix it"))).toBe(false);
  });

  it("help, list and status answer ephemerally", async () => {
    await s.command({ text: "help", user_id: "U5" });
    expect(await s.ephemeral("U5", 1)).toContain("/agent <prompt> [options]");
    await s.command({ text: "$ echo for status", user_id: "U5" });
    const run = await runWithPrompt(s, "$ echo for status");
    await s.command({ text: `status ${run.run_id}`, user_id: "U5" });
    expect(await s.ephemeral("U5", 2)).toContain("$ echo for status");
    await s.command({ text: "list", user_id: "U5" });
    expect(await s.ephemeral("U5", 3)).toContain(run.run_id);
  });

  it("cancel <run> cancels; a finished run is 'already finished'", async () => {
    await s.command({ text: "$ sleep 30", user_id: "U6" });
    const run = await runWithPrompt(s, "$ sleep 30");
    await s.command({ text: `cancel ${run.run_id}`, user_id: "U6" });
    await waitFor(
      async () => (await s.t.api("GET", `/api/v1/agent/runs/${run.run_id}`)).body.state === "CANCELLED",
      {
        what: "CANCELLED",
      },
    );
    const cancelled = (await s.t.api("GET", `/api/v1/agent/runs/${run.run_id}`)).body;
    expect(cancelled.status_message.message).toBe("Cancelled by user-U6");
    // Retyped after the first one took effect (a new trigger, outside the dedupe window's text match).
    await s.command({ text: `cancel  ${run.run_id}`, user_id: "U6" });
    expect(await s.ephemeral("U6")).toContain("already finished (Cancelled)");
  });
});

describe("mentions and thread follow-ups", () => {
  let s: SlackDispatch;
  beforeAll(async () => {
    // No executor slots: the test moves runs between states itself.
    s = await startSlackDispatch({ env: { DISPATCH_MAX_CONCURRENT_RUNS: "0" } });
  });
  afterAll(() => s.stop());

  it("a mention starts a run threaded under it, with 👀 and the permalink as trigger_url", async () => {
    const ts = nextTs();
    const res = await s.mention({
      text: "<@UBOT> refactor the &lt;Header&gt; component model=acme/m2",
      ts,
      user: "U1",
    });
    expect(res.status).toBe(200);
    const run = await runWithPrompt(s, "refactor the <Header> component");
    expect(run.agent_config.model_id).toBe("acme/m2");
    expect(run.trigger_url).toBe(`https://fake.slack.com/archives/${CHANNEL}/p${ts.replace(".", "")}`);
    expect(await s.t.dispatch.store.getThreadBinding(run.run_id)).toMatchObject({
      channel: CHANNEL,
      thread: ts,
      triggerRef: ts,
      requester: "U1",
    });
    const eyes = s.fake.succeeded("reactions.add").find((c) => c.args.timestamp === ts);
    expect(eyes?.args.name).toBe("eyes");
  });

  it("a retried event (X-Slack-Retry-Num) or the same message twice is one run", async () => {
    const ts = nextTs();
    const event = { text: "<@UBOT> $ echo retried", ts };
    await s.mention(event, { eventId: "EvRETRY1" });
    const retry = await s.mention(event, {
      eventId: "EvRETRY1",
      headers: { "x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout" },
    });
    expect(retry.status).toBe(200);
    // The same message delivered under another event id (a second subscription) is not a new run either.
    await s.mention(event, { eventId: "EvRETRY2" });
    await runWithPrompt(s, "$ echo retried");
    await s.t.dispatch.surfaces.get("slack")!.inbound!.idle();
    expect((await s.runs()).filter((r) => r.prompt === "$ echo retried")).toHaveLength(1);
  });

  it("a mention in the thread is a follow-up, routed by the run's state", async () => {
    const root = nextTs();
    await s.mention({ text: "<@UBOT> $ echo first", ts: root, user: "U1" });
    const run = await runWithPrompt(s, "$ echo first");
    const followups = () => s.t.dispatch.store.takePendingFollowups(run.run_id, 99);
    // Runs of earlier tests wait in the queue too: cancel them so that the claim below takes this one.
    for (const other of await s.runs()) {
      if (other.run_id !== run.run_id && other.state === "QUEUED") {
        await s.t.api("POST", `/api/v1/agent/runs/${other.run_id}/cancel`);
      }
    }

    await s.mention({ text: "<@UBOT> also add tests", thread_ts: root, user: "U1" });
    expect(await s.ephemeral("U1", 1)).toContain("has not started yet");

    const claimed = await s.t.dispatch.store.claimNextRun("test-worker", 60_000);
    expect(claimed?.id).toBe(run.run_id);
    // Claimed, its agent not started yet (its workspace is being prepared): held for the agent.
    await s.mention({ text: "<@UBOT> and update the changelog", thread_ts: root, user: "U1" });
    expect(await s.ephemeral("U1", 2)).toContain("the agent gets it when it starts");

    await s.t.api("POST", `/api/v1/agent/runs/${run.run_id}/cancel`);
    await s.mention({ text: "<@UBOT> please continue model=ignored-here", thread_ts: root, user: "U1" });
    expect(await s.ephemeral("U1", 3)).toContain("continues with your follow-up");
    const after = (await s.t.api("GET", `/api/v1/agent/runs/${run.run_id}`)).body;
    expect(after.state).toBe("QUEUED");
    const messages = (await followups()).map((f) => f.message);
    expect(messages).toEqual([
      "also add tests",
      "and update the changelog",
      "please continue model=ignored-here",
    ]);
  });

  it("@bot status, @bot cancel and @bot new in a run's thread", async () => {
    const root = nextTs();
    await s.mention({ text: "<@UBOT> $ echo threaded", ts: root, user: "U8" });
    const first = await runWithPrompt(s, "$ echo threaded");

    await s.mention({ text: "<@UBOT> status", thread_ts: root, user: "U8" });
    expect(await s.ephemeral("U8", 1)).toContain("$ echo threaded");

    await s.mention({ text: "<@UBOT> new $ echo second [name=again]", thread_ts: root, user: "U8" });
    const second = await runWithPrompt(s, "$ echo second");
    expect(second.agent_config.name).toBe("again");
    expect(await s.t.dispatch.store.getThreadBinding(second.run_id)).toMatchObject({ thread: root });

    // The thread's latest run is now the second one.
    await s.mention({ text: "<@UBOT> cancel", thread_ts: root, user: "U8" });
    await waitFor(
      async () => (await s.t.api("GET", `/api/v1/agent/runs/${second.run_id}`)).body.state === "CANCELLED",
      {
        what: "the second run CANCELLED",
      },
    );
    expect((await s.t.api("GET", `/api/v1/agent/runs/${first.run_id}`)).body.state).toBe("QUEUED");
  });

  it("refuses people from other organisations (Slack Connect) by default", async () => {
    const ts = nextTs();
    await s.mention({ text: "<@UBOT> $ echo from outside", ts, user: "UEXT", user_team: "T0OTHER" });
    expect(await s.ephemeral("UEXT")).toContain("outside this workspace");
    await s.t.dispatch.surfaces.get("slack")!.inbound!.idle();
    expect((await s.runs()).some((r) => r.prompt === "$ echo from outside")).toBe(false);
    expect(s.fake.calls.some((c) => c.method === "reactions.add" && c.args.timestamp === ts)).toBe(false);
  });

  it("answers a grammar error in a mention with the valid keys", async () => {
    await s.mention({ text: "<@UBOT> do it speed=fast", user: "U9" });
    expect(await s.ephemeral("U9")).toContain("valid keys are: model, name, env, skill, title, harness");
  });
});

describe("Cancel button", () => {
  let s: SlackDispatch;
  beforeAll(async () => {
    s = await startSlackDispatch({ settings: "slack:\n  cancel: requester\n" });
  });
  afterAll(() => s.stop());

  it("cancels the running run as the clicking user; others are refused under requester-only", async () => {
    await s.command({ text: "$ sleep 30", user_id: "U1" });
    const run = await runWithPrompt(s, "$ sleep 30");
    await waitFor(
      async () => (await s.t.api("GET", `/api/v1/agent/runs/${run.run_id}`)).body.state === "INPROGRESS",
      {
        what: "INPROGRESS",
      },
    );

    const refused = await s.clickCancel(run.run_id, { user: "U2" });
    expect(refused.status).toBe(200);
    expect(await s.ephemeral("U2")).toContain("Only <@U1>");
    expect((await s.t.api("GET", `/api/v1/agent/runs/${run.run_id}`)).body.state).toBe("INPROGRESS");

    await s.clickCancel(run.run_id, { user: "U1" });
    const cancelled = await waitFor(
      async () => {
        const body = (await s.t.api("GET", `/api/v1/agent/runs/${run.run_id}`)).body;
        return body.state === "CANCELLED" ? body : undefined;
      },
      { what: "CANCELLED" },
    );
    expect(cancelled.status_message.message).toBe("Cancelled by user-U1");

    await s.clickCancel(run.run_id, { user: "U1" });
    expect(await s.ephemeral("U1")).toContain("already finished (Cancelled)");
  });
});

describe("allowlists", () => {
  let s: SlackDispatch;
  beforeAll(async () => {
    s = await startSlackDispatch({
      settings: `slack:\n  allowed_users: [U1]\n  allowed_channels: [${CHANNEL}]\n`,
    });
  });
  afterAll(() => s.stop());

  it("refuses a user outside the allowlist ephemerally and creates no run", async () => {
    await s.command({ text: "$ echo not allowed", user_id: "U2" });
    expect(await s.ephemeral("U2")).toContain("not on Dispatch's list of allowed users");
    await s.command({ text: "$ echo wrong channel", user_id: "U1", channel_id: "C0ELSE" });
    expect(await s.ephemeral("U1")).toContain("not enabled in this channel");
    await s.command({ text: "$ echo allowed", user_id: "U1" });
    await runWithPrompt(s, "$ echo allowed");
    await s.t.dispatch.surfaces.get("slack")!.inbound!.idle();
    expect((await s.runs()).map((r) => r.prompt)).toEqual(["$ echo allowed"]);
  });
});

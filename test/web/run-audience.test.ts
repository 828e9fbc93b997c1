import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SlackDispatch, startSlackDispatch } from "../integrations/slack/support.ts";
import { waitFor } from "../support/dispatch.ts";
import { SseStream } from "../support/sse.ts";
import { Browser, csrfOf, runIdsOf, submitFirstForm } from "./browser.ts";

/** A private channel that only U1 is in; the default channel has U1 to U9. */
const PRIVATE = "C0PRIVATE";

/**
 * The one access rule (docs/architecture.md) on the web app and the API: a Slack user who signs
 * in through `/agent login` in one channel sees the runs of the channels they are in, and the runs of a
 * private channel they are not in do not exist for them — on the dashboard and its live feed, the run
 * page, its event stream and every action — as Slack's own verbs answer "no run in this channel".
 */
describe("a run's audience on the web app and the API", () => {
  let s: SlackDispatch;
  let privateRun: string;
  let publicRun: string;

  beforeAll(async () => {
    // No executor slot: runs stay QUEUED, so that every action on them is still possible.
    s = await startSlackDispatch({ env: { DISPATCH_MAX_CONCURRENT_RUNS: "0" } });
    s.fake.channelMembers.set(PRIVATE, ["U1"]);
    await s.command({ text: "$ echo the private plan", user_id: "U1", channel_id: PRIVATE });
    await s.command({ text: "$ echo the public plan", user_id: "U1" });
    const runs = await waitFor(async () => {
      const all = await s.runs();
      return all.length >= 2 ? all : undefined;
    });
    privateRun = runs.find((r) => r.prompt === "$ echo the private plan")!.run_id;
    publicRun = runs.find((r) => r.prompt === "$ echo the public plan")!.run_id;
  });
  afterAll(() => s?.stop());

  /** Opens a Slack login link in `browser` and presses the button that names the account. */
  const openLink = async (browser: Browser, link: string): Promise<void> => {
    const page = await submitFirstForm(browser, await browser.get(link));
    expect(page.status).toBe(303);
    expect(browser.cookies.has("dispatch_session")).toBe(true);
  };

  /** A browser signed in as Slack user `user` through `/agent login` typed in the default channel. */
  const signIn = async (user: string): Promise<Browser> => {
    const before = s.ephemerals(user).length;
    expect((await s.command({ text: "login", user_id: user })).status).toBe(200);
    const text = await s.ephemeral(user, before + 1);
    const link = /<(http[^|>]+)\|Sign in to Dispatch>/.exec(text)?.[1];
    if (!link) throw new Error(`no link in ${text}`);
    const browser = new Browser(s.t.url);
    await openLink(browser, link);
    return browser;
  };

  it("hides a private channel's runs from a signed-in Slack user who is not in it, on every route and action", async () => {
    const outsider = await signIn("U2");
    const home = await outsider.get("/");
    expect(home.status).toBe(200);
    expect(runIdsOf(home)).toEqual([publicRun]);
    expect(home.html).not.toContain("private plan");
    // The counts are of what they may see: one queued run, not two.
    expect(home.html).toContain('id="count-total">1<');

    for (const path of [
      `/runs/${privateRun}`,
      `/runs/${privateRun}/items`,
      `/runs/${privateRun}/events`,
      `/runs/${privateRun}/cancel`,
    ]) {
      const page = await outsider.get(path);
      expect(page.status, path).toBe(404);
      expect(page.html, path).not.toContain("private plan");
    }
    const rows = await outsider.get(`/dashboard/rows?ids=${privateRun},${publicRun}`);
    expect(rows.status).toBe(200);
    expect(rows.html).toContain(publicRun);
    expect(rows.html).not.toContain(privateRun);

    // Every action is the same 404, and nothing happens to the run.
    const csrf = csrfOf(await outsider.get(`/runs/${publicRun}`));
    const actions: Array<[string, Record<string, string>]> = [
      ["followup", { csrf, message: "$ echo steered by an outsider" }],
      ["cancel", { csrf }],
      ["retry", { csrf, retry_key: "0123456789abcdef0123456789abcdef" }],
      ["approve", { csrf, note: "$ echo approved by an outsider" }],
      ["revise", { csrf, message: "$ echo steered by an outsider" }],
    ];
    for (const [action, form] of actions) {
      const page = await outsider.post(`/runs/${privateRun}/${action}`, form);
      expect(page.status, action).toBe(404);
    }
    const after = await s.t.api("GET", `/api/v1/agent/runs/${privateRun}`);
    expect(after.body.state).toBe("QUEUED");
    expect((await s.runs()).length).toBe(2);
    const events = await s.t.api("GET", `/api/v1/agent/runs/${privateRun}/events`);
    expect(JSON.stringify(events.body)).not.toContain("steered by an outsider");

    // The channel's member sees and steers it.
    const member = await signIn("U1");
    const page = await member.get(`/runs/${privateRun}`);
    expect(page.status).toBe(200);
    expect(page.html).toContain("private plan");
    expect(runIdsOf(await member.get("/"))).toEqual(expect.arrayContaining([privateRun, publicRun]));
    const sent = await member.post(`/runs/${privateRun}/followup`, {
      csrf: csrfOf(page),
      message: "$ echo from the member",
    });
    expect(sent.status).toBe(303);
  });

  it("keeps a private channel's changes out of an outsider's live feed", async () => {
    const outsider = await signIn("U3");
    const cookie = `dispatch_session=${outsider.cookies.get("dispatch_session")}`;
    const feed = await SseStream.open(`${s.t.url}/dashboard/events`, { headers: { cookie } });
    try {
      expect(feed.status).toBe(200);
      // A change to the private run, then one to the public run: the feed shows the second only.
      const admin = { authorization: `Bearer ${s.t.key}` };
      expect(
        (
          await s.t.api(
            "POST",
            `/api/v1/agent/runs/${privateRun}/followups`,
            { message: "private news" },
            admin,
          )
        ).status,
      ).toBe(200);
      expect(
        (
          await s.t.api(
            "POST",
            `/api/v1/agent/runs/${publicRun}/followups`,
            { message: "public news" },
            admin,
          )
        ).status,
      ).toBe(200);
      await feed.waitFor((e) => e.event === "runs" && e.data.includes(publicRun), "the public run's change");
      expect(feed.events.map((e) => e.data).join("\n")).not.toContain(privateRun);
    } finally {
      feed.close();
    }
  });

  it("answers the API by the same rule: a member key sees the team's API runs, not a channel's", async () => {
    const member = { authorization: `Bearer ${await s.t.newKey("team_default", { role: "member" })}` };
    const own = await s.t.api("POST", "/api/v1/agent/runs", { prompt: "$ echo from the API" }, member);
    expect(own.status).toBe(200);
    const listed = await s.t.api("GET", "/api/v1/agent/runs", undefined, member);
    expect(listed.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([own.body.run_id]);
    for (const [method, path, body] of [
      ["GET", `/api/v1/agent/runs/${privateRun}`, undefined],
      ["GET", `/api/v1/agent/runs/${privateRun}/events`, undefined],
      ["GET", `/api/v1/agent/runs/${privateRun}/handoff/attachments`, undefined],
      ["POST", `/api/v1/agent/runs/${privateRun}/followups`, { message: "$ echo via the API" }],
      ["POST", `/api/v1/agent/runs/${privateRun}/cancel`, undefined],
      ["POST", "/api/v1/agent/runs", { prompt: "continue", conversation_id: privateRun }],
    ] as const) {
      const res = await s.t.api(method, path, body, member);
      expect(res.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${method} ${path}`).toBeLessThan(500);
      expect(res.status === 404 || res.body.error_code === "invalid_request", `${method} ${path}`).toBe(true);
    }
    expect((await s.t.api("GET", `/api/v1/agent/runs/${privateRun}`)).body.state).toBe("QUEUED");

    // A schedule made in the private channel has the channel's audience too: its prompt stays there.
    const before = s.ephemerals("U1").length;
    await s.command({
      text: 'schedule "0 9 * * 1" name:secret-digest $ echo the private digest',
      user_id: "U1",
      channel_id: PRIVATE,
    });
    await waitFor(() => s.ephemerals("U1")[before], { what: "the schedule's confirmation" });
    const all = (await s.t.api("GET", "/api/v1/agent/schedules")).body.schedules;
    const secret = all.find((x: { name: string }) => x.name === "secret-digest");
    expect(secret).toBeDefined();
    const theirs = await s.t.api("GET", "/api/v1/agent/schedules", undefined, member);
    expect(theirs.status).toBe(200);
    expect(theirs.text).not.toContain("private digest");
    for (const [method, path, body] of [
      ["GET", `/api/v1/agent/schedules/${secret.id}`, undefined],
      [
        "PUT",
        `/api/v1/agent/schedules/${secret.id}`,
        { name: "mine", cron_schedule: "0 9 * * 1", prompt: "x", enabled: true },
      ],
      ["POST", `/api/v1/agent/schedules/${secret.id}/pause`, {}],
      ["DELETE", `/api/v1/agent/schedules/${secret.id}`, undefined],
    ] as const) {
      expect((await s.t.api(method, path, body, member)).status, `${method} ${path}`).toBe(404);
    }
    expect((await s.t.api("GET", `/api/v1/agent/schedules/${secret.id}`)).body).toMatchObject({
      name: "secret-digest",
      enabled: true,
    });
    // The admin key sees every run of its team.
    expect((await s.t.api("GET", `/api/v1/agent/runs/${privateRun}`)).status).toBe(200);
  });

  it("lets a requester-only policy keep other channel members from steering", async () => {
    const r = await startSlackDispatch({
      env: { DISPATCH_MAX_CONCURRENT_RUNS: "0" },
      settings: "slack:\n  cancel: requester\n  followup: requester\n",
    });
    try {
      await r.command({ text: "$ echo mine alone", user_id: "U1" });
      const run = (await waitFor(async () => (await r.runs())[0])).run_id;
      const before = r.ephemerals("U2").length;
      expect((await r.command({ text: "login", user_id: "U2" })).status).toBe(200);
      const link = /<(http[^|>]+)\|Sign in to Dispatch>/.exec(await r.ephemeral("U2", before + 1))![1]!;
      const browser = new Browser(r.t.url);
      await openLink(browser, link);
      const page = await browser.get(`/runs/${run}`);
      expect(page.status).toBe(200); // in the channel: they see it
      const refused = await browser.post(`/runs/${run}/cancel`, { csrf: csrfOf(page) });
      expect(refused.status).toBe(403);
      expect(refused.html).toContain("who started this run");
      // Answering a plan is steering too: refused by the policy before anything else is looked at.
      const answer = await browser.post(`/runs/${run}/approve`, { csrf: csrfOf(page) });
      expect(answer.status).toBe(403);
      expect(answer.html).toContain("who started this run");
      expect((await r.t.api("GET", `/api/v1/agent/runs/${run}`)).body.state).toBe("QUEUED");
    } finally {
      await r.stop();
    }
  });
});

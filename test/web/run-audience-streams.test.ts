import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/auth/bootstrap.ts";
import { type SlackDispatch, startSlackDispatch, TEAM } from "../integrations/slack/support.ts";
import { waitFor } from "../support/dispatch.ts";
import { SseStream } from "../support/sse.ts";
import { Browser, csrfOf, submitFirstForm } from "./browser.ts";

/** A private channel of U1, U2 and U3; the default channel has U1 to U9. */
const PRIVATE = "C0PRIVATE";
/** Streams must end within a few of their access checks (1 s apart here) once access is gone. */
const ENDS_WITHIN_MS = 15_000;

/**
 * The access rule on streams that are already open (docs/architecture.md, SECURITY.md): an event stream
 * of a run — the run page's, the API's — and the dashboard's live feed passed the rule when they opened;
 * they ask it again while they last, and end once their viewer has left the run's audience (removed from
 * the private channel) or their key was revoked. Here they ask every second and Slack's member lists
 * are not cached, so that the test waits seconds, not the half-minute of the defaults.
 */
describe("open streams of a run whose viewer leaves its audience", () => {
  let s: SlackDispatch;
  let privateRun: string;

  beforeAll(async () => {
    // No executor slot: the run stays QUEUED, and its transcript grows only by the follow-ups sent here.
    s = await startSlackDispatch({
      env: { DISPATCH_MAX_CONCURRENT_RUNS: "0", DISPATCH_STREAM_ACCESS_CHECK_S: "1" },
      settings: "slack:\n  membership_cache_seconds: 0\n",
    });
    s.fake.channelMembers.set(PRIVATE, ["U1", "U2", "U3"]);
    await s.command({ text: "$ echo the private plan", user_id: "U1", channel_id: PRIVATE });
    privateRun = (await waitFor(async () => (await s.runs())[0])).run_id;
  });
  afterAll(() => s?.stop());

  /**
   * A browser signed in as Slack user `user` through `/agent login` typed in the default channel (once per
   * user: the same command again is the same Slack delivery).
   */
  const signIn = async (user: string): Promise<Browser> => {
    const before = s.ephemerals(user).length;
    expect((await s.command({ text: "login", user_id: user })).status).toBe(200);
    const text = await s.ephemeral(user, before + 1);
    const link = /<(http[^|>]+)\|Sign in to Dispatch>/.exec(text)?.[1];
    if (!link) throw new Error(`no link in ${text}`);
    const browser = new Browser(s.t.url);
    expect((await submitFirstForm(browser, await browser.get(link))).status).toBe(303);
    return browser;
  };
  const cookieOf = (b: Browser) => ({ cookie: `dispatch_session=${b.cookies.get("dispatch_session")}` });
  /** An API key of the Slack user `user` (a key of their principal, as an integration would hold it). */
  const keyOf = async (user: string) =>
    (
      await createApiKey(s.t.dispatch.store, {
        team: "team_default",
        principalType: "user",
        principalUid: `slack:${TEAM}:${user}`,
        role: "member",
      })
    ).key;
  const followup = async (message: string) => {
    const res = await s.t.api("POST", `/api/v1/agent/runs/${privateRun}/followups`, { message });
    expect(res.status, res.text).toBe(200);
  };
  const says = (stream: SseStream, text: string) =>
    stream.waitFor((e) => e.data.includes(text), `"${text}" on the stream`);

  it("ends the run page's stream, the API's and the live feed once the viewer is removed from the channel", async () => {
    const leaver = await signIn("U2");
    const stayer = await signIn("U1");
    const leaverKey = await keyOf("U2");
    const page = await SseStream.open(`${s.t.url}/runs/${privateRun}/events`, { headers: cookieOf(leaver) });
    const api = await SseStream.open(`${s.t.url}/api/v1/agent/runs/${privateRun}/events`, {
      headers: { authorization: `Bearer ${leaverKey}` },
    });
    const feed = await SseStream.open(`${s.t.url}/dashboard/events`, { headers: cookieOf(leaver) });
    const staying = await SseStream.open(`${s.t.url}/runs/${privateRun}/events`, {
      headers: cookieOf(stayer),
    });
    const streams = [page, api, feed, staying];
    try {
      for (const stream of streams) expect(stream.status).toBe(200);
      // While U2 is in the channel, every one of their streams follows the run.
      await followup("while U2 is in");
      await says(page, "while U2 is in");
      await says(api, "while U2 is in");
      await feed.waitFor((e) => e.event === "runs" && e.data.includes(privateRun), "the run on the feed");

      s.fake.channelMembers.set(PRIVATE, ["U1", "U3"]);
      await waitFor(() => page.isEnded && api.isEnded && feed.isEnded, {
        timeoutMs: ENDS_WITHIN_MS,
        what: "U2's three streams to end",
      });

      // What happens in the channel from now on reaches its member only.
      await followup("after U2 left");
      await says(staying, "after U2 left");
      for (const stream of [page, api]) {
        expect(stream.events.map((e) => e.data).join("\n")).not.toContain("after U2 left");
      }
      // Reconnecting gets what an unknown run gets, and the feed reconnects to what U2 may see now.
      expect((await leaver.get(`/runs/${privateRun}/events`)).status).toBe(404);
      const again = await SseStream.open(`${s.t.url}/api/v1/agent/runs/${privateRun}/events`, {
        headers: { authorization: `Bearer ${leaverKey}` },
      });
      streams.push(again);
      expect(again.status).toBe(404);
      const newFeed = await SseStream.open(`${s.t.url}/dashboard/events`, { headers: cookieOf(leaver) });
      streams.push(newFeed);
      expect(newFeed.status).toBe(200);
      await followup("seen by the channel only");
      await says(staying, "seen by the channel only");
      const publicRun = (
        await s.t.api("POST", "/api/v1/agent/runs", { prompt: "$ echo for everyone", title: "for everyone" })
      ).body.run_id as string;
      await newFeed.waitFor(
        (e) => e.event === "runs" && e.data.includes(publicRun),
        "a team run on the feed",
      );
      expect(newFeed.events.map((e) => e.data).join("\n")).not.toContain(privateRun);
      expect(staying.isEnded).toBe(false);
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it("ends an API stream once its key is revoked, and a run page's once its session signs out", async () => {
    const key = await keyOf("U3");
    const browser = await signIn("U3");
    const api = await SseStream.open(`${s.t.url}/api/v1/agent/runs/${privateRun}/events`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const page = await SseStream.open(`${s.t.url}/runs/${privateRun}/events`, { headers: cookieOf(browser) });
    try {
      expect(api.status).toBe(200);
      expect(page.status).toBe(200);
      await followup("before the key went");
      await says(api, "before the key went");
      await says(page, "before the key went");

      expect(await s.t.dispatch.store.revokeApiKey(key.slice(0, 10), new Date().toISOString())).toBeDefined();
      await waitFor(() => api.isEnded, {
        timeoutMs: ENDS_WITHIN_MS,
        what: "the revoked key's stream to end",
      });
      expect(page.isEnded).toBe(false);

      const signedOut = await browser.post("/logout", { csrf: csrfOf(await browser.get("/")) });
      expect(signedOut.status).toBe(303);
      await waitFor(() => page.isEnded, {
        timeoutMs: ENDS_WITHIN_MS,
        what: "the signed-out session's stream to end",
      });
    } finally {
      api.close();
      page.close();
    }
  });
});

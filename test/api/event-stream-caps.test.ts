import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { type SlackDispatch, startSlackDispatch } from "../integrations/slack/support.ts";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";
import { SseStream } from "../support/sse.ts";
import { Browser, signInWithKey } from "../web/browser.ts";

let t: TestDispatch | undefined;
let s: SlackDispatch | undefined;
const streams: SseStream[] = [];
afterEach(async () => {
  for (const stream of streams.splice(0)) stream.close();
  await t?.stop();
  await s?.stop();
  t = undefined;
  s = undefined;
});

/** Opens an event stream (closed after the test), from the loopback address `from` when given. */
async function openStream(url: string, opts: { from?: string; headers?: Record<string, string> } = {}) {
  const stream = await SseStream.open(url, opts);
  streams.push(stream);
  return stream;
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** A run that stays QUEUED (no executor), so its stream stays open. */
async function queuedRun(d: TestDispatch): Promise<{ id: string; session: string }> {
  const created = await d.api("POST", "/api/v1/agent/runs", { prompt: "wait" });
  expect(created.status, created.text).toBe(200);
  const run = await d.api("GET", `/api/v1/agent/runs/${created.body.run_id}`);
  return { id: run.body.run_id, session: run.body.session_id };
}

describe("caps on event streams", () => {
  it("refuses a key its streams past the per-client cap (429, Retry-After) while another key streams", async () => {
    t = await startTestDispatch({
      DISPATCH_MAX_CONCURRENT_RUNS: "0",
      DISPATCH_MAX_EVENT_STREAMS_PER_CLIENT: "2",
    });
    const run = await queuedRun(t);
    const events = `${t.url}/api/v1/agent/runs/${run.id}/events`;
    const first = await openStream(events, { headers: bearer(t.key) });
    const second = await openStream(events, { headers: bearer(t.key) });
    expect([first.status, second.status]).toEqual([200, 200]);

    const third = await openStream(events, { headers: bearer(t.key) });
    expect(third.status).toBe(429);
    expect(third.headers["retry-after"]).toBe("10");
    expect(third.headers["content-type"]).toMatch(/^application\/problem\+json/);
    const problem = JSON.parse(third.text);
    expect(problem).toMatchObject({ status: 429, error_code: "rate_limited", retryable: true });
    expect(problem.detail).toContain("this client has 2 event streams open");
    expect(problem.detail).toContain("DISPATCH_MAX_EVENT_STREAMS_PER_CLIENT");

    // Another key of the team is another client: it streams, and sees what the run does.
    const other = await openStream(events, { headers: bearer(await t.newKey("team_default")) });
    expect(other.status).toBe(200);
    await t.dispatch.store.appendEvent(run.id, "log", { message: "still streaming" });
    await other.waitFor((e) => e.data.includes("still streaming"), "the other key's stream");

    // A stream that ends frees its slot.
    first.close();
    await waitFor(async () => (await openStream(events, { headers: bearer(t!.key) })).status === 200, {
      what: "the key to stream again once one of its streams closed",
    });
  });

  it("counts the public session page's streams per address", async () => {
    t = await startTestDispatch({
      DISPATCH_MAX_CONCURRENT_RUNS: "0",
      DISPATCH_MAX_EVENT_STREAMS_PER_CLIENT: "2",
    });
    const run = await queuedRun(t);
    const live = `${t.url}/sessions/${run.session}/events`;
    for (let i = 0; i < 2; i++) expect((await openStream(live, { from: "127.2.0.1" })).status).toBe(200);
    const refused = await openStream(live, { from: "127.2.0.1" });
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text).detail).toContain("this client has 2 event streams open");
    // A session cookie of its own making gives nobody fresh slots on a page that needs none.
    const madeUp = await openStream(live, {
      from: "127.2.0.1",
      headers: { cookie: "dispatch_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
    });
    expect(madeUp.status).toBe(429);
    expect((await openStream(live, { from: "127.2.0.2" })).status).toBe(200);
  });

  it("counts a signed-in browser's run page streams per session, not per address", async () => {
    t = await startTestDispatch({
      DISPATCH_MAX_CONCURRENT_RUNS: "0",
      DISPATCH_MAX_EVENT_STREAMS_PER_CLIENT: "2",
    });
    const run = await queuedRun(t);
    // Two people behind one address (an office's NAT), each signed in.
    const from = "127.4.0.1";
    const sessionCookie = async () => {
      const browser = new Browser(t!.url, { from });
      expect((await signInWithKey(browser, t!.key)).status).toBe(303);
      return { cookie: `dispatch_session=${browser.cookies.get("dispatch_session")}` };
    };
    const [ada, bob] = [await sessionCookie(), await sessionCookie()];
    const live = `${t.url}/runs/${run.id}/events`;
    for (let i = 0; i < 2; i++) expect((await openStream(live, { from, headers: ada })).status).toBe(200);
    expect((await openStream(live, { from, headers: ada })).status).toBe(429);
    expect((await openStream(live, { from, headers: bob })).status).toBe(200);
  });

  it("refuses a run its streams past the per-run cap, while its watchers' other runs stream", async () => {
    t = await startTestDispatch({
      DISPATCH_MAX_CONCURRENT_RUNS: "0",
      DISPATCH_MAX_EVENT_STREAMS_PER_RUN: "2",
    });
    const crowded = await queuedRun(t);
    const quiet = await queuedRun(t);
    const keys = [t.key, await t.newKey("team_default"), await t.newKey("team_default")];
    const url = (runId: string) => `${t!.url}/api/v1/agent/runs/${runId}/events`;
    expect((await openStream(url(crowded.id), { headers: bearer(keys[0]!) })).status).toBe(200);
    expect((await openStream(url(crowded.id), { headers: bearer(keys[1]!) })).status).toBe(200);
    const refused = await openStream(url(crowded.id), { headers: bearer(keys[2]!) });
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text).detail).toContain("DISPATCH_MAX_EVENT_STREAMS_PER_RUN");
    expect((await openStream(url(quiet.id), { headers: bearer(keys[2]!) })).status).toBe(200);
  });

  it("keeps connections for health checks and webhooks while streams are at their cap", async () => {
    s = await startSlackDispatch({
      env: {
        DISPATCH_MAX_CONCURRENT_RUNS: "0",
        DISPATCH_MAX_CONNECTIONS: "8",
        DISPATCH_MAX_EVENT_STREAMS: "4",
      },
    });
    const d = s.t;
    const run = await queuedRun(d);
    // Streams from clients under their own caps, until the server's cap answers: as many as the
    // connections the server accepts, at most.
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const from = `127.3.0.${i + 1}`;
      const stream = await openStream(`${d.url}/sessions/${run.session}/events`, { from });
      statuses.push(stream.status);
      if (stream.status === 429) {
        expect(JSON.parse(stream.text).detail).toContain("DISPATCH_MAX_EVENT_STREAMS");
        break;
      }
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429]);

    expect((await fetch(`${d.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${d.url}/readyz`)).status).toBe(200);
    const ack = await s.command({ text: "$ echo while streams are at their cap" });
    expect(ack.status).toBe(200);
    await waitFor(
      async () => (await s!.runs()).some((r) => r.prompt === "$ echo while streams are at their cap"),
      { what: "the Slack command's run" },
    );
  });

  it("stops start-up when the streams' cap leaves no connection for anything else", () => {
    expect(() => loadConfig({ DISPATCH_MAX_CONNECTIONS: "100", DISPATCH_MAX_EVENT_STREAMS: "100" })).toThrow(
      /DISPATCH_MAX_EVENT_STREAMS: must be less than DISPATCH_MAX_CONNECTIONS \(100\)/,
    );
    const defaults = loadConfig({ DISPATCH_MAX_CONNECTIONS: "100" }).http.eventStreams;
    expect(defaults).toEqual({ max: 80, perClient: 20, perRun: 200 });
    expect(() => loadConfig({ DISPATCH_TRUST_PROXY: "true" })).toThrow(
      /DISPATCH_TRUST_PROXY: must be a comma/,
    );
    expect(() => loadConfig({ DISPATCH_TRUST_PROXY: "10.0.0.0/33" })).toThrow(/DISPATCH_TRUST_PROXY/);
    expect(loadConfig({ DISPATCH_TRUST_PROXY: "10.0.0.0/8, loopback" }).http.trustProxy).toBe(
      "10.0.0.0/8,loopback",
    );
  });
});

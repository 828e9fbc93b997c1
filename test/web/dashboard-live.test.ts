import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";
import { type SseEvent, SseStream } from "../support/sse.ts";
import { Browser, runIdsOf, signInWithKey } from "./browser.ts";

interface RunsFrame {
  runs: Array<{ id: string; state: string; row: string }>;
}

const runsOf = (e: SseEvent) => (e.event === "runs" ? (JSON.parse(e.data) as RunsFrame).runs : []);
const mentions = (e: SseEvent, id: string) => runsOf(e).some((r) => r.id === id);

/**
 * The dashboard's live side: GET /dashboard/events tells an open dashboard which of its team's
 * runs changed, with the row to show; GET /dashboard/rows answers which of some runs match the page's
 * filters. Nothing executes here (no executor slots), so runs stay where the test puts them.
 */
describe("web dashboard live updates", () => {
  let t: TestDispatch;
  let ours: Browser;
  let theirs: Browser;
  let otherKey: string;
  const streams: SseStream[] = [];

  const cookieOf = (b: Browser) => ({
    cookie: [...b.cookies].map(([k, v]) => `${k}=${v}`).join("; "),
  });
  const open = async (b: Browser, headers: Record<string, string> = {}) => {
    const stream = await SseStream.open(`${t.url}/dashboard/events`, {
      headers: { ...cookieOf(b), ...headers },
    });
    streams.push(stream);
    expect(stream.status).toBe(200);
    expect(stream.headers["content-type"]).toContain("text/event-stream");
    // The stream is registered once its first comment arrived.
    await waitForComment(stream);
    return stream;
  };
  const create = async (title: string, key = t.key) => {
    const res = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: `$ echo ${title}`, title },
      { authorization: `Bearer ${key}` },
    );
    expect(res.status).toBe(200);
    return res.body.run_id as string;
  };

  beforeAll(async () => {
    t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
    otherKey = await t.newKey("team_other", { role: "admin", displayName: "Other admin" });
    ours = new Browser(t.url);
    theirs = new Browser(t.url);
    expect((await signInWithKey(ours, t.key)).status).toBe(303);
    expect((await signInWithKey(theirs, otherKey)).status).toBe(303);
  });
  afterAll(async () => {
    for (const s of streams) s.close();
    await t?.stop();
  });

  it("shows a run created through the API on the team's open dashboards, and on no other team's", async () => {
    const mine = await open(ours);
    const other = await open(theirs);

    const runId = await create("live deploy");
    const frame = await mine.waitFor((e) => mentions(e, runId), "the new run on our dashboard");
    const row = runsOf(frame).find((r) => r.id === runId)!;
    expect(row.state).toBe("QUEUED");
    expect(row.row).toContain(`<tr data-run-id="${runId}">`);
    expect(row.row).toContain(`<a href="/runs/${runId}">live deploy</a>`);
    expect(row.row).toContain(">Queued<");
    const counts = await mine.waitFor((e) => e.event === "counts", "the counts");
    expect(JSON.parse(counts.data).QUEUED).toBeGreaterThanOrEqual(1);

    // The other team's dashboard learns of its own run, and of ours never: frames arrive in order, and ours
    // changed first.
    const theirRun = await create("their run", otherKey);
    await other.waitFor((e) => mentions(e, theirRun), "their run on their dashboard");
    expect(other.events.some((e) => e.data.includes(runId))).toBe(false);
    expect(mine.events.some((e) => e.data.includes(theirRun))).toBe(false);

    // A state change reaches the open dashboard with the row as it is now.
    expect((await t.api("POST", `/api/v1/agent/runs/${runId}/cancel`)).status).toBe(200);
    const cancelled = await mine.waitFor(
      (e) => runsOf(e).some((r) => r.id === runId && r.state === "CANCELLED"),
      "the cancelled state",
    );
    expect(runsOf(cancelled).find((r) => r.id === runId)!.row).toContain(">Cancelled<");
  });

  it("answers which runs match the page's filters, for its own team only", async () => {
    const alpha = await create("alpha rows");
    const beta = await create("beta rows");
    const foreign = await create("alpha rows elsewhere", otherKey);
    const rows = await ours.get(`/dashboard/rows?ids=${alpha},${beta},${foreign}`);
    expect(rows.status).toBe(200);
    expect(new Set(runIdsOf(rows))).toEqual(new Set([alpha, beta]));
    expect(rows.html).not.toContain("<html");

    const filtered = await ours.get(`/dashboard/rows?q=ALPHA&state=QUEUED&ids=${alpha},${beta},${foreign}`);
    expect(runIdsOf(filtered)).toEqual([alpha]);

    expect((await ours.get("/dashboard/rows?ids=")).status).toBe(400);
    expect((await ours.get(`/dashboard/rows?ids=${alpha}&colour=red`)).status).toBe(400);
    expect((await new Browser(t.url).get(`/dashboard/rows?ids=${alpha}`)).status).toBe(401);
  });

  it("refuses a stream to a visitor who is not signed in", async () => {
    const res = await fetch(`${t.url}/dashboard/events`, { headers: { accept: "text/event-stream" } });
    expect(res.status).toBe(401);
    await res.body?.cancel();
  });

  it("starts a reconnected stream with a resync and the counts", async () => {
    const again = await open(ours, { "last-event-id": "1" });
    await again.waitFor((e) => e.event === "resync", "the resync");
    const counts = await again.waitFor((e) => e.event === "counts", "the counts");
    const page = await ours.get("/");
    const queued = JSON.parse(counts.data).QUEUED;
    expect(page.html).toContain(`<span id="count-QUEUED">${queued}</span>`);
  });

  it("puts the live script on the page, telling it where new runs may appear", async () => {
    const first = await ours.get("/");
    expect(first.html).toContain('<table id="runs" data-insert="all">');
    expect(first.html).toContain('new EventSource("/dashboard/events")');
    const filtered = await ours.get("/?q=alpha");
    expect(filtered.html).toContain('data-insert="filtered"');
    const byTitle = await ours.get("/?sort_by=title");
    expect(byTitle.html).toContain('data-insert="none"');
    const second = await ours.get("/?limit=1");
    const next = /<a id="next-page" rel="next" href="([^"]+)"/
      .exec(second.html)![1]!
      .replaceAll("&amp;", "&");
    expect((await ours.get(next)).html).toContain('data-insert="none"');
  });

  it("ends open streams when Dispatch stops", async () => {
    const stream = await open(ours);
    await t.stop();
    await stream.ended;
    expect(stream.isEnded).toBe(true);
  });
});

async function waitForComment(stream: SseStream): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (stream.comments === 0) {
    if (Date.now() > deadline) throw new Error("the stream sent nothing");
    await new Promise((r) => setTimeout(r, 10));
  }
}

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";
import { Browser, runIdsOf, signInWithKey } from "./browser.ts";

/** The web app's clock runs this far ahead of the runs' creation, so that ages read in minutes. */
const AHEAD_MS = 7 * 60_000;

/**
 * What the dashboard shows around the list (docs/surfaces.md): relative times with the exact one kept, source
 * links built from a thread binding, cost when a run recorded one, the team's schedules, and usage over
 * the last days as a chart with a table of the same numbers.
 */
describe("web dashboard sections", () => {
  let t: TestDispatch;
  let browser: Browser;
  const ids: string[] = [];

  const create = async (title: string, key = t.key) => {
    const res = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: `$ echo ${title}`, title },
      { authorization: `Bearer ${key}` },
    );
    expect(res.status).toBe(200);
    return res.body as { run_id: string; created_at?: string };
  };
  const schedule = async (body: Record<string, unknown>, key = t.key) => {
    const res = await t.api("POST", "/api/v1/agent/schedules", body, { authorization: `Bearer ${key}` });
    expect(res.status).toBe(201);
    return res.body as { schedule_id?: string; id?: string };
  };

  beforeAll(async () => {
    t = await startTestDispatch(
      { DISPATCH_MAX_CONCURRENT_RUNS: "0" },
      { web: { now: () => new Date(Date.now() + AHEAD_MS) } },
    );
    for (let i = 0; i < 20; i++) ids.push((await create(`${"a long run title ".repeat(10)}${i}`)).run_id);
    const bob = await t.newKey("team_default", { role: "member", displayName: "Bob" });
    ids.push((await create("bob's costly run", bob)).run_id);
    await t.dispatch.store.recordUsage(ids.at(-1)!, {
      input_tokens: 1000,
      output_tokens: 500,
      total_tokens: 1500,
      inference_cost: 0.42,
    });
    await t.dispatch.store.bindThread({
      runId: ids[0]!,
      platform: "slack",
      workspace: "T0001",
      channel: "C0002",
      thread: "1712345678.000100",
      triggerRef: null,
      requester: "U0003",
      createdAt: new Date().toISOString(),
    });
    await schedule({ name: "nightly tidy", cron_schedule: "0 3 * * *", prompt: "tidy up" });
    await schedule({ name: "paused report", cron_schedule: "*/5 * * * *", prompt: "report", enabled: false });
    // Another team's schedule and usage are not shown here.
    const other = await t.newKey("team_other", { role: "admin" });
    await schedule({ name: "their schedule", cron_schedule: "0 9 * * 1", prompt: "theirs" }, other);
    await create("their run", other);
    browser = new Browser(t.url);
    expect((await signInWithKey(browser, t.key)).status).toBe(303);
  });
  afterAll(() => t?.stop());

  it("says how long ago each run was asked for, keeping the exact time", async () => {
    const page = await browser.get("/");
    const run = (await t.api("GET", `/api/v1/agent/runs/${ids[0]}`)).body;
    const tag = new RegExp(
      `<time datetime="${run.created_at}" title="(\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC)">(\\d+) min ago</time>`,
    ).exec(page.html);
    expect(tag, "the run's age as a <time>").not.toBeNull();
    expect(tag![1]).toBe(`${run.created_at.slice(0, 10)} ${run.created_at.slice(11, 16)} UTC`);
    expect(Number(tag![2])).toBeGreaterThanOrEqual(7);
    // No ISO durations anywhere a person reads.
    expect(page.html).not.toMatch(/>PT\d/);
  });

  it("links each run to where it was asked for, and shows a cost only when one was recorded", async () => {
    const page = await browser.get("/");
    expect(page.html).toContain(
      '<a href="https://app.slack.com/client/T0001/C0002/thread/C0002-1712345678.000100">API</a>',
    );
    const bobRow = page.html.split("\n").find((line) => line.includes(`data-run-id="${ids.at(-1)}"`))!;
    expect(bobRow).toContain('<td class="num" data-label="Cost">$0.42</td>');
    const otherRow = page.html.split("\n").find((line) => line.includes(`data-run-id="${ids[1]}"`))!;
    expect(otherRow).toMatch(/<td class="num" data-label="Cost"><\/td><\/tr>$/);
  });

  it("lists the team's schedules with their cron, state and next run", async () => {
    const page = await browser.get("/");
    const section = /<section aria-labelledby="schedules-h">[\s\S]*?<\/section>/.exec(page.html)![0];
    expect(section).toContain(">nightly tidy</a>");
    expect(section).toContain("<code>0 3 * * *</code> UTC");
    expect(section).toMatch(
      /nightly tidy[\s\S]*?Enabled[\s\S]*?<time datetime="[^"]+T03:00:00.000Z" title="[^"]+">(in \d+ (min|h)|tomorrow)<\/time>/,
    );
    expect(section).toMatch(/paused report[\s\S]*?Paused<\/span><\/td><td>—<\/td><td>never<\/td>/);
    expect(section).not.toContain("their schedule");
    // Each schedule links to the runs it fired, through the list's own filter.
    expect(section).toMatch(/<a href="\/\?schedule_id=[^"]+">nightly tidy<\/a>/);
  });

  it("shows usage as a line per day, the busy days and each person in tables with the same numbers", async () => {
    const page = await browser.get("/");
    const section = /<section aria-labelledby="usage-h">[\s\S]*?<\/section>/.exec(page.html)![0];
    expect(section).toContain('<h2 id="usage-h">Usage, last 14 days</h2>');
    expect(section).toContain("21 runs · 1,500 tokens · $0.42");
    // One line over the 14 days, an image that says what it shows; a point per day, titled with its figures.
    const chart = /<svg class="usage-chart" role="img" aria-labelledby="usage-chart-t"[\s\S]*?<\/svg>/.exec(
      section,
    )![0];
    expect(chart).toMatch(
      /<title id="usage-chart-t">Runs per day over the last 14 days: 21 in all, most on \d+ \w{3} \(21\)\.<\/title>/,
    );
    expect(chart.match(/<circle /g)).toHaveLength(14);
    expect(chart).toMatch(/<polyline class="line" points="[\d., ]+"\/>/);
    const today = new Date().toISOString().slice(0, 10);
    expect(chart).toContain(`<title>${today}: 21 runs, 1,500 tokens, $0.42</title>`);
    // The table has the busy days only: not fourteen rows of zeros.
    expect(section).toContain("<caption>Busy days (UTC)</caption>");
    expect(section.match(/<time datetime="\d{4}-\d\d-\d\d">/g)).toHaveLength(1);
    expect(section).toMatch(
      new RegExp(
        `<time datetime="${today}">[^<]+</time></th><td class="num">21</td><td class="num">1,500</td><td class="num">\\$0.42</td>`,
      ),
    );
    expect(section).toMatch(/<caption>Per person<\/caption>/);
    expect(section).toMatch(
      />Admin<\/a><\/th><td class="num">20<\/td><td class="num">0<\/td><td class="num">—<\/td>/,
    );
    expect(section).toMatch(
      />Bob<\/a><\/th><td class="num">1<\/td><td class="num">1,500<\/td><td class="num">\$0.42<\/td>/,
    );
  });

  it("weighs under 100 KB with 20 long-titled rows, schedules and usage", async () => {
    const page = await browser.get("/?limit=20");
    expect(runIdsOf(page)).toHaveLength(20);
    expect(Buffer.byteLength(page.html)).toBeLessThan(100 * 1024);
  });
});

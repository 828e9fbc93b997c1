import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHANNEL, type SlackDispatch, startSlackDispatch, TEAM } from "../integrations/slack/support.ts";
import { waitFor, waitForState } from "../support/dispatch.ts";
import { type FakeModel, startFakeModel } from "../support/fake-model/server.ts";
import { GitRemotes } from "../support/git-remotes.ts";

/**
 * GET /api/v1/usage against a real Dispatch on SQLite (docs/api.md, "Usage"): runs made through the run
 * service — from the API, a Slack channel and a schedule — whose builtin agent called a loopback model, so
 * that their tokens and costs are what the cost meter recorded. A priced model and one without a price.
 */
const PRICED = "openai-compatible/fake-coder";
const UNPRICED = "openai-compatible/gpt-fake";
const TERMINAL = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"];

let s: SlackDispatch;
let fake: FakeModel;
let remotes: GitRemotes;
let repository: string;
let clock = Date.now();
let memberKey: string;
/** The runs as GET shows them once finished, by what they were. */
// biome-ignore lint/suspicious/noExplicitAny: runs as the API returned them
const runs: Record<"api" | "slack" | "member" | "scheduled", any> = {} as never;
let started: number;

const as = (key: string) => ({ authorization: `Bearer ${key}` });
const usage = (query: string, headers: Record<string, string> = {}) =>
  s.t.api("GET", `/api/v1/usage?${query}`, undefined, headers);
/** A period around every run of the test. */
const period = () =>
  `from=${new Date(started - 60_000).toISOString()}&to=${new Date(Date.now() + 3_600_000).toISOString()}`;

beforeAll(async () => {
  started = Date.now();
  fake = await startFakeModel([]);
  remotes = new GitRemotes();
  repository = `${remotes.serverUrl}/acme/app.git`;
  remotes.create("acme/app", { "README.md": "# app\n" });
  s = await startSlackDispatch({
    settings: `slack: {}\nprices:\n  ${PRICED}: { input_per_mtok: 1, output_per_mtok: 2 }\n`,
    env: {
      OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl("openai"),
      DISPATCH_DEFAULT_MODEL: PRICED,
      DISPATCH_ALLOW_FILE_REMOTES: "true",
    },
    dispatch: { scheduler: { now: () => clock, maxSleepMs: 50 } },
  });
  memberKey = await s.t.newKey("team_default", { role: "member", displayName: "Mia Member" });
  const create = async (body: Record<string, unknown>, key = s.t.key) => {
    const res = await s.t.api("POST", "/api/v1/agent/runs", body, as(key));
    expect(res.status, res.text).toBe(200);
    return res.body.run_id as string;
  };
  const ids = {
    api: await create({ prompt: "Read the README", config: { model_id: PRICED, repository } }),
    member: await create({ prompt: "Say hello", config: { model_id: UNPRICED } }, memberKey),
  };
  expect((await s.command({ text: "Summarise the channel", user_id: "U1" })).status).toBe(200);
  const schedule = await s.t.api("POST", "/api/v1/agent/schedules", {
    name: "nightly digest",
    cron_schedule: "* * * * *",
    prompt: "Write the digest",
  });
  expect(schedule.status, schedule.text).toBe(201);
  // The scheduler's clock moves to the next minute: the schedule fires once.
  clock = (Math.floor(clock / 60_000) + 1) * 60_000 + 1_000;
  const fired = await waitFor(async () => {
    const list = await s.t.api("GET", `/api/v1/agent/runs?schedule_id=${schedule.body.id}`);
    return list.body.runs[0]?.run_id as string | undefined;
  });
  const slack = await waitFor(
    async () => (await s.runs()).find((r) => r.prompt === "Summarise the channel")?.run_id,
  );
  for (const [name, id] of Object.entries({ ...ids, slack, scheduled: fired })) {
    runs[name as keyof typeof runs] = await waitForState(s.t, id as string, TERMINAL, 60_000);
  }
  // Another team's run is never this team's usage.
  const other = await s.t.newKey("team_other", { role: "admin" });
  await create({ prompt: "Elsewhere", config: { model_id: PRICED } }, other);
}, 120_000);

afterAll(async () => {
  await s?.stop();
  await fake?.close();
  remotes?.remove();
});

const sum = (list: Array<{ request_usage: { input_tokens: number; output_tokens: number } }>) => ({
  input_tokens: list.reduce((n, r) => n + r.request_usage.input_tokens, 0),
  output_tokens: list.reduce((n, r) => n + r.request_usage.output_tokens, 0),
});
const cost = (run: { request_usage: { inference_cost?: number } }) => run.request_usage.inference_cost!;

describe("GET /api/v1/usage", () => {
  it("the runs really spent: tokens on each, a cost on the priced model's", () => {
    for (const run of Object.values(runs)) expect(run.request_usage.input_tokens).toBeGreaterThan(0);
    expect(cost(runs.api)).toBeGreaterThan(0);
    expect(runs.member.request_usage.inference_cost).toBeUndefined();
  });

  it("totals the admin's team: each run once, the unpriced one counted apart", async () => {
    const res = await usage(period());
    expect(res.status, res.text).toBe(200);
    const all = Object.values(runs);
    const known = cost(runs.api) + cost(runs.slack) + cost(runs.scheduled);
    expect(res.body.group_by).toEqual([]);
    expect(res.body.totals).toEqual({
      runs: 4,
      ...sum(all),
      cost_usd: null,
      known_cost_usd: expect.closeTo(known, 6),
      unpriced_runs: 1,
    });
    expect(res.body.rows).toEqual([res.body.totals]);
  });

  it("groups by person, with names, most cost first", async () => {
    const res = await usage(`${period()}&group_by=person`);
    const byPerson = Object.fromEntries(res.body.rows.map((r: { person: string }) => [r.person, r]));
    expect(byPerson[runs.member.creator.uid]).toMatchObject({
      person_name: "Mia Member",
      runs: 1,
      ...sum([runs.member]),
      cost_usd: null,
      unpriced_runs: 1,
    });
    expect(byPerson[runs.slack.creator.uid]).toMatchObject({
      runs: 1,
      cost_usd: expect.closeTo(cost(runs.slack), 6),
    });
    expect(runs.slack.creator.uid).toContain("U1");
    // The admin asked for the API run and owns the schedule that fired the other.
    expect(byPerson[runs.api.creator.uid]).toMatchObject({
      runs: 2,
      ...sum([runs.api, runs.scheduled]),
      cost_usd: expect.closeTo(cost(runs.api) + cost(runs.scheduled), 6),
    });
    const costs = res.body.rows.map((r: { known_cost_usd: number }) => r.known_cost_usd);
    expect(costs).toEqual([...costs].sort((a, b) => b - a));
  });

  it("groups by repository, channel, schedule and model", async () => {
    const keys = async (by: string, key: string) =>
      Object.fromEntries(
        (await usage(`${period()}&group_by=${by}`)).body.rows.map((r: Record<string, unknown>) => [
          String(r[key]),
          r.runs,
        ]),
      );
    expect(await keys("repository", "repository")).toEqual({ [repository]: 1, null: 3 });
    expect(await keys("channel", "channel")).toEqual({ [`slack:${TEAM}:${CHANNEL}`]: 1, null: 3 });
    const bySchedule = await usage(`${period()}&group_by=schedule`);
    expect(bySchedule.body.rows.find((r: { schedule: string | null }) => r.schedule)).toMatchObject({
      schedule: runs.scheduled.schedule.schedule_id,
      schedule_name: "nightly digest",
      runs: 1,
    });
    const byModel = await usage(`${period()}&group_by=model`);
    expect(
      byModel.body.rows.map((r: { model: string; runs: number; cost_usd: number | null }) => [
        r.model,
        r.runs,
        r.cost_usd === null,
      ]),
    ).toEqual([
      [PRICED, 3, false],
      [UNPRICED, 1, true],
    ]);
    // Two keys at once, in the order asked.
    const both = await usage(`${period()}&group_by=model,channel`);
    expect(both.body.group_by).toEqual(["model", "channel"]);
    expect(both.body.rows).toHaveLength(3);
  });

  it("answers CSV with a header row for Accept: text/csv or format=csv", async () => {
    for (const [query, headers] of [
      [`${period()}&group_by=person,model`, { accept: "text/csv" }],
      [`${period()}&group_by=person,model&format=csv`, {}],
    ] as const) {
      const res = await usage(query, headers);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
      expect(res.headers.get("content-disposition")).toMatch(
        /^attachment; filename="usage-\d{4}-\d\d-\d\d-\d{4}-\d\d-\d\d\.csv"$/,
      );
      const lines = res.text.split("\r\n");
      expect(lines[0]).toBe(
        "person,person_name,model,runs,input_tokens,output_tokens,cost_usd,known_cost_usd,unpriced_runs,from,to",
      );
      expect(lines.at(-1)).toBe("");
      const member = lines.find((l) => l.includes("Mia Member"))!.split(",");
      expect(member.slice(2, 9)).toEqual([
        UNPRICED,
        "1",
        String(runs.member.request_usage.input_tokens),
        String(runs.member.request_usage.output_tokens),
        "",
        "0",
        "1",
      ]);
    }
    // JSON when asked for first, or by format.
    const json = await usage(period(), { accept: "application/json, text/csv;q=0.5" });
    expect(json.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("keeps a name's commas and quotes in its CSV cell and never lets it start a formula", async () => {
    const key = await s.t.newKey("team_csv", {
      role: "admin",
      displayName: '=HYPERLINK("https://x.test"), me',
    });
    const run = await s.t.api("POST", "/api/v1/agent/runs", { prompt: "$ echo hi" }, as(key));
    expect(run.status).toBe(200);
    const res = await usage(`${period()}&group_by=person&format=csv`, as(key));
    const row = res.text.split("\r\n")[1]!;
    expect(row).toMatch(/^[^,]+,"'=HYPERLINK\(""https:\/\/x\.test""\), me",1,0,0,0,0,0,/);
  });

  it("shows a member only the runs in their audience: not a channel they are not in", async () => {
    const res = await usage(`${period()}&group_by=channel`, as(memberKey));
    expect(res.status).toBe(200);
    expect(res.body.totals.runs).toBe(3);
    expect(res.body.rows.map((r: { channel: string | null }) => r.channel)).toEqual([null]);
  });

  it("refuses a bad period or grouping with a 400 that names the fix", async () => {
    const refused = async (query: string, says: RegExp) => {
      const res = await usage(query);
      expect(res.status, query).toBe(400);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(res.body.error_code).toBe("invalid_request");
      expect(res.body.detail ?? res.body.error).toMatch(says);
    };
    await refused("from=yesterday", /from must be a date such as 2026-03-01/);
    await refused("from=2026-02-30", /2026-02-30 is not a day of the calendar/);
    await refused("to=0000-01-01", /from 1970-01-01 on/);
    await refused("from=2026-03-02&to=2026-03-01", /is after to .* give from before to/);
    await refused("from=2025-01-01&to=2026-03-01", /over 366 days; ask for a year or less/);
    await refused(
      "group_by=person,team",
      /unknown key "team"; group by any of person, repository, channel, schedule, model/,
    );
    await refused("group_by=model&group_by=model", /names model twice/);
    await refused("format=xml", /format must be json or csv/);
    await refused("since=2026-03-01", /unknown query parameter since/);
  });

  it("defaults to this month so far", async () => {
    const res = await usage("");
    const now = new Date();
    expect(res.body.period.from).toBe(
      new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
    );
    expect(Date.parse(res.body.period.to)).toBeGreaterThanOrEqual(now.getTime() - 60_000);
    // A date alone is its midnight; to alone covers its month.
    const march = await usage("to=2026-04-01");
    expect(march.body.period).toEqual({ from: "2026-03-01T00:00:00.000Z", to: "2026-04-01T00:00:00.000Z" });
  });
});

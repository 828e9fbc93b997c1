import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";

/**
 * /agent/schedules over HTTP against a live Dispatch whose scheduler runs on a test clock: CRUD,
 * validation, team isolation, pause and resume, Idempotency-Key, and firings (the run a slot makes,
 * nothing while paused, a spawn failure shown by GET and cleared by the next firing).
 */
const START = Date.parse("2030-01-01T00:00:10.000Z");
let clock = START;
const at = (iso: string) => {
  clock = Date.parse(iso);
};

let t: TestDispatch;
let other: string;
let reader: string;
const base = "/api/v1/agent/schedules";

beforeAll(async () => {
  t = await startTestDispatch({}, { scheduler: { now: () => clock, maxSleepMs: 50, retryMs: 60_000 } });
  other = await t.newKey("team_other");
  reader = await t.newKey("team_default", { role: "read" });
});
afterAll(async () => {
  await t?.stop();
});

const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  t.api("POST", base, body, headers);
const as = (key: string) => ({ authorization: `Bearer ${key}` });
const scheduledRuns = async (scheduleId: string) =>
  (await t.api("GET", `/api/v1/agent/runs?schedule_id=${scheduleId}&sort_by=created_at&sort_order=asc`)).body
    .runs as Array<Record<string, unknown>>;

describe("schedules CRUD", () => {
  it("creates a schedule (201) with the Oz fields, its history and the UTC default", async () => {
    const res = await create({
      name: "crud-daily",
      cron_schedule: "0 9 * * *",
      prompt: "$ echo daily",
      agent_config: { name: "reviewer" },
      metadata: { ticket: "ENG-1" },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: "crud-daily",
      cron_schedule: "0 9 * * *",
      timezone: "UTC",
      enabled: true,
      prompt: "$ echo daily",
      created_at: new Date(clock).toISOString(),
      updated_at: new Date(clock).toISOString(),
      last_spawn_error: null,
      agent_config: { name: "reviewer" },
      metadata: { ticket: "ENG-1" },
      created_by: { type: "service_account", uid: "admin", display_name: expect.any(String) },
      updated_by: { type: "service_account", uid: "admin", display_name: expect.any(String) },
      history: { last_ran: null, next_run: "2030-01-01T09:00:00.000Z" },
      scope: { type: "Team", uid: "team_default" },
    });
    const got = await t.api("GET", `${base}/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it("reads cron_schedule in the schedule's timezone", async () => {
    const res = await create({
      name: "crud-paris",
      cron_schedule: "0 9 * * *",
      timezone: "Europe/Paris",
      prompt: "$ echo bonjour",
    });
    expect(res.status).toBe(201);
    expect(res.body.history.next_run).toBe("2030-01-01T08:00:00.000Z");
  });

  it("lists the team's schedules sorted by name as {schedules}", async () => {
    await create({ name: "crud-b", cron_schedule: "0 1 * * *", prompt: "x" });
    await create({ name: "crud-a", cron_schedule: "0 1 * * *", prompt: "x" });
    const res = await t.api("GET", base);
    expect(res.status).toBe(200);
    const names = (res.body.schedules as Array<{ name: string }>).map((s) => s.name);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(["crud-a", "crud-b"]));
    expect((await t.api("GET", `${base}?limit=5`)).status).toBe(400);
  });

  it("PUT replaces every field (what is left out takes its default); DELETE answers {success: true}", async () => {
    const { body: s } = await create({
      name: "crud-put",
      cron_schedule: "0 9 * * *",
      timezone: "Asia/Tokyo",
      prompt: "$ echo one",
      agent_config: { name: "first" },
      metadata: { a: "1" },
    });
    const put = await t.api("PUT", `${base}/${s.id}`, {
      name: "crud-put-renamed",
      cron_schedule: "30 6 * * 1-5",
      enabled: false,
      prompt: "$ echo two",
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      id: s.id,
      name: "crud-put-renamed",
      cron_schedule: "30 6 * * 1-5",
      timezone: "UTC",
      enabled: false,
      prompt: "$ echo two",
      agent_config: {},
      metadata: {},
      created_at: s.created_at,
      history: { last_ran: null, next_run: null },
    });
    const missingEnabled = await t.api("PUT", `${base}/${s.id}`, {
      name: "x",
      cron_schedule: "* * * * *",
      prompt: "x",
    });
    expect(missingEnabled.status).toBe(400);
    expect(missingEnabled.body.detail).toContain("enabled");
    const del = await t.api("DELETE", `${base}/${s.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    const gone = await t.api("GET", `${base}/${s.id}`);
    expect(gone.status).toBe(404);
    expect(gone.headers.get("content-type")).toContain("application/problem+json");
    expect(gone.body.error_code).toBe("resource_not_found");
    expect((await t.api("DELETE", `${base}/${s.id}`)).status).toBe(404);
  });

  it("pauses and resumes with an empty JSON body or none", async () => {
    const { body: s } = await create({ name: "crud-pause", cron_schedule: "0 9 * * *", prompt: "x" });
    const paused = await t.api("POST", `${base}/${s.id}/pause`, {});
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ enabled: false, history: { next_run: null } });
    const resumed = await t.api("POST", `${base}/${s.id}/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ enabled: true, history: { next_run: "2030-01-01T09:00:00.000Z" } });
    expect((await t.api("POST", `${base}/nope/pause`, {})).status).toBe(404);
  });

  it("an Idempotency-Key makes a retried create one schedule; another body under it is refused", async () => {
    const body = { name: "crud-idem", cron_schedule: "0 9 * * *", prompt: "x" };
    const first = await create(body, { "idempotency-key": "sched-idem-1" });
    const again = await create(body, { "idempotency-key": "sched-idem-1" });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    const reused = await create({ ...body, name: "crud-idem-2" }, { "idempotency-key": "sched-idem-1" });
    expect(reused.status).toBe(422);
    expect(reused.body.error_code).toBe("idempotency_key_reused");
    const dup = await create(body);
    expect(dup.status).toBe(409);
    expect(dup.body.error_code).toBe("conflict");
  });
});

describe("schedule validation", () => {
  const bad = async (body: unknown, naming: string) => {
    const res = await t.api("POST", base, body);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect(res.body.detail).toContain(naming);
    return res;
  };

  it("names the field that is wrong", async () => {
    await bad({ cron_schedule: "0 9 * * *", prompt: "x" }, "name");
    await bad({ name: "v", prompt: "x" }, "cron_schedule");
    await bad({ name: "v", cron_schedule: "0 9 * * *" }, "prompt");
    await bad({ name: "v", cron_schedule: "0 9 * * *", prompt: "   " }, "prompt");
    await bad({ name: "v", cron_schedule: "61 * * * *", prompt: "x" }, "cron_schedule");
    await bad({ name: "v", cron_schedule: "0 0 9 * * *", prompt: "x" }, "cron_schedule");
    await bad({ name: "v", cron_schedule: "@daily", prompt: "x" }, "cron_schedule");
    await bad({ name: "v", cron_schedule: "0 0 30 2 *", prompt: "x" }, "never fires");
    await bad({ name: "v", cron_schedule: "0 9 * * *", timezone: "Mars/Olympus", prompt: "x" }, "timezone");
    await bad({ name: "v", cron_schedule: "0 9 * * *", prompt: "x", agent_uid: "someone" }, "agent_uid");
    await bad({ name: "v", cron_schedule: "0 9 * * *", prompt: "x", team: false }, "team");
    await bad(
      { name: "v", cron_schedule: "0 9 * * *", prompt: "x", metadata: { "bad key": "1" } },
      "metadata",
    );
    const notJson = await t.api("POST", base, "not json", { "content-type": "application/json" });
    expect(notJson.status).toBe(400);
    await bad([], "body");
  });

  it("accepts a skill instead of a prompt", async () => {
    const res = await create({
      name: "valid-skill",
      cron_schedule: "0 9 * * *",
      agent_config: { skill_spec: "acme/tools:review" },
    });
    expect(res.status).toBe(201);
    expect(res.body.prompt).toBe("");
  });

  it("refuses renaming onto another schedule's name (409)", async () => {
    await create({ name: "valid-one", cron_schedule: "0 9 * * *", prompt: "x" });
    const { body: two } = await create({ name: "valid-two", cron_schedule: "0 9 * * *", prompt: "x" });
    const res = await t.api("PUT", `${base}/${two.id}`, {
      name: "valid-one",
      cron_schedule: "0 9 * * *",
      enabled: true,
      prompt: "x",
    });
    expect(res.status).toBe(409);
    expect(res.body.detail).toContain("valid-one");
  });
});

describe("team isolation and roles", () => {
  it("another team's schedule is not found, nor listed; the same name is free there", async () => {
    const { body: mine } = await create({ name: "iso-mine", cron_schedule: "0 9 * * *", prompt: "x" });
    for (const [method, path, body] of [
      ["GET", `${base}/${mine.id}`, undefined],
      [
        "PUT",
        `${base}/${mine.id}`,
        { name: "stolen", cron_schedule: "0 9 * * *", enabled: true, prompt: "x" },
      ],
      ["DELETE", `${base}/${mine.id}`, undefined],
      ["POST", `${base}/${mine.id}/pause`, {}],
      ["POST", `${base}/${mine.id}/resume`, {}],
    ] as const) {
      const res = await t.api(method, path, body, as(other));
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    const listed = await t.api("GET", base, undefined, as(other));
    expect(listed.body.schedules).toEqual([]);
    const theirs = await t.api(
      "POST",
      base,
      { name: "iso-mine", cron_schedule: "0 9 * * *", prompt: "x" },
      as(other),
    );
    expect(theirs.status).toBe(201);
    expect(theirs.body.scope).toEqual({ type: "Team", uid: "team_other" });
    expect((await t.api("GET", `${base}/${mine.id}`)).body.name).toBe("iso-mine");
  });

  it("needs a key, and a read-only key cannot change schedules", async () => {
    expect((await t.api("GET", base, undefined, { authorization: "Bearer nope" })).status).toBe(401);
    expect((await t.api("GET", base, undefined, as(reader))).status).toBe(200);
    const res = await t.api(
      "POST",
      base,
      { name: "ro", cron_schedule: "0 9 * * *", prompt: "x" },
      as(reader),
    );
    expect(res.status).toBe(403);
  });
});

describe("firing", () => {
  it("each due slot becomes one SCHEDULED_AGENT run with the schedule on it; paused fires nothing", async () => {
    at("2030-01-02T00:00:30.000Z");
    const { body: every } = await create({
      name: "fire-every-minute",
      cron_schedule: "* * * * *",
      prompt: "$ echo scheduled",
      metadata: { origin: "cron" },
    });
    const { body: paused } = await create({
      name: "fire-paused",
      cron_schedule: "* * * * *",
      prompt: "$ echo never",
      enabled: false,
    });
    at("2030-01-02T00:01:00.000Z");
    const [run] = await waitFor(async () => {
      const runs = await scheduledRuns(every.id);
      return runs.length > 0 ? runs : undefined;
    });
    expect(run).toMatchObject({
      source: "SCHEDULED_AGENT",
      title: "fire-every-minute",
      prompt: "$ echo scheduled",
      creator: { type: "service_account", uid: "admin" },
      metadata: { origin: "cron" },
      schedule: {
        schedule_id: every.id,
        schedule_name: "fire-every-minute",
        cron_schedule: "* * * * *",
        fire_time: "2030-01-02T00:01:00.000Z",
      },
    });
    const done = await waitForState(t, String(run!.run_id), ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(done.state).toBe("SUCCEEDED");
    const after = await t.api("GET", `${base}/${every.id}`);
    expect(after.body.history).toEqual({ last_ran: run!.created_at, next_run: "2030-01-02T00:02:00.000Z" });

    // The next slot fires once more; the paused schedule, watched by the same scheduler, never.
    at("2030-01-02T00:02:00.000Z");
    await waitFor(async () => ((await scheduledRuns(every.id)).length === 2 ? true : undefined));
    expect(await scheduledRuns(paused.id)).toEqual([]);
    const resumed = await t.api("POST", `${base}/${paused.id}/resume`, {});
    expect(resumed.body.history.next_run).toBe("2030-01-02T00:03:00.000Z");
    at("2030-01-02T00:03:00.000Z");
    const fired = await waitFor(async () => {
      const runs = await scheduledRuns(paused.id);
      return runs.length > 0 ? runs : undefined;
    });
    // Resuming does not catch up on the slots missed while paused.
    expect(fired.map((r) => (r.schedule as { fire_time: string }).fire_time)).toEqual([
      "2030-01-02T00:03:00.000Z",
    ]);
    await t.api("POST", `${base}/${every.id}/pause`, {});
    await t.api("POST", `${base}/${paused.id}/pause`, {});
  });

  it("records a spawn failure in last_spawn_error and clears it with the next firing that works", async () => {
    at("2030-01-03T00:00:30.000Z");
    const { body: s } = await create({
      name: "fire-broken",
      cron_schedule: "* * * * *",
      prompt: "$ echo hi",
      agent_config: { environment_id: "no-such-environment" },
    });
    at("2030-01-03T00:01:00.000Z");
    const failed = await waitFor(async () => {
      const res = await t.api("GET", `${base}/${s.id}`);
      return res.body.last_spawn_error ? res.body : undefined;
    });
    expect(failed.last_spawn_error).toContain("environment_id");
    expect(failed.history.last_ran).toBeNull();
    expect(await scheduledRuns(s.id)).toEqual([]);

    const fixed = await t.api("PUT", `${base}/${s.id}`, {
      name: "fire-broken",
      cron_schedule: "* * * * *",
      enabled: true,
      prompt: "$ echo hi",
    });
    expect(fixed.status).toBe(200);
    at("2030-01-03T00:02:00.000Z");
    const healed = await waitFor(async () => {
      const res = await t.api("GET", `${base}/${s.id}`);
      return res.body.last_spawn_error === null && res.body.history.last_ran ? res.body : undefined;
    });
    const runs = await scheduledRuns(s.id);
    expect(runs.map((r) => (r.schedule as { fire_time: string }).fire_time)).toEqual([
      "2030-01-03T00:02:00.000Z",
    ]);
    expect(healed.history.last_ran).toBe(runs[0]!.created_at);
    await t.api("DELETE", `${base}/${s.id}`);
  });
});

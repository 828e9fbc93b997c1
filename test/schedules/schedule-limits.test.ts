import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";

/**
 * What keeps schedules from piling up work (docs/api.md): a team, and each person in it, may own only so
 * many (DISPATCH_SCHEDULES_PER_TEAM, DISPATCH_SCHEDULES_PER_CREATOR), and a firing while the schedule's
 * previous run has not even started is skipped, and says so. A live Dispatch with no executor slots (every
 * run stays QUEUED) and a scheduler on a test clock.
 */
let clock = Date.parse("2030-01-01T00:00:10.000Z");
const at = (iso: string) => {
  clock = Date.parse(iso);
};

let t: TestDispatch;
const base = "/api/v1/agent/schedules";
const as = (key: string) => ({ authorization: `Bearer ${key}` });

beforeAll(async () => {
  t = await startTestDispatch(
    {
      DISPATCH_MAX_CONCURRENT_RUNS: "0",
      DISPATCH_SCHEDULES_PER_TEAM: "3",
      DISPATCH_SCHEDULES_PER_CREATOR: "2",
    },
    { scheduler: { now: () => clock, maxSleepMs: 50 } },
  );
});
afterAll(async () => {
  await t?.stop();
});

describe("schedule limits", () => {
  it("refuses a schedule over the person's limit, then over the team's, naming the limit and what to do", async () => {
    const alice = await t.newKey("team_limits", { displayName: "Alice" });
    const bob = await t.newKey("team_limits", { displayName: "Bob" });
    const create = (key: string, name: string, headers: Record<string, string> = {}) =>
      t.api(
        "POST",
        base,
        { name, cron_schedule: "0 9 * * *", prompt: "$ echo hi" },
        { ...as(key), ...headers },
      );

    expect((await create(alice, "alice-1", { "idempotency-key": "limits-1" })).status).toBe(201);
    expect((await create(alice, "alice-2")).status).toBe(201);
    const third = await create(alice, "alice-3");
    expect(third.status).toBe(403);
    expect(third.headers.get("content-type")).toContain("application/problem+json");
    expect(third.body).toMatchObject({ error_code: "not_authorized", retryable: false });
    expect(third.body.detail).toContain("you have 2 schedules in this team");
    expect(third.body.detail).toContain("DISPATCH_SCHEDULES_PER_CREATOR");
    expect(third.body.detail).toContain("delete one of yours");
    // A retry of a create that worked is still answered with its schedule, not refused.
    const retried = await create(alice, "alice-1", { "idempotency-key": "limits-1" });
    expect(retried.status).toBe(201);

    expect((await create(bob, "bob-1")).status).toBe(201);
    const fourth = await create(bob, "bob-2");
    expect(fourth.status).toBe(403);
    expect(fourth.body.error_code).toBe("not_authorized");
    expect(fourth.body.detail).toContain("this team has 3 schedules");
    expect(fourth.body.detail).toContain("DISPATCH_SCHEDULES_PER_TEAM");
    const listed = await t.api("GET", base, undefined, as(bob));
    expect((listed.body.schedules as Array<{ name: string }>).map((s) => s.name)).toEqual([
      "alice-1",
      "alice-2",
      "bob-1",
    ]);

    // Deleting one makes room; other teams count apart.
    await t.api("DELETE", `${base}/${retried.body.id}`, undefined, as(alice));
    expect((await create(bob, "bob-2")).status).toBe(201);
    expect((await create(t.key, "default-team-1")).status).toBe(201);
  });
});

describe("a firing while the previous run is still queued", () => {
  it("is skipped: no second run, and the schedule says why until a firing makes a run again", async () => {
    at("2030-01-01T00:00:30.000Z");
    const { body: s } = await t.api("POST", base, {
      name: "every-minute",
      cron_schedule: "* * * * *",
      prompt: "$ echo tick",
    });
    const runsOf = async () =>
      (await t.api("GET", `/api/v1/agent/runs?schedule_id=${s.id}&sort_by=created_at&sort_order=asc`)).body
        .runs as Array<{ run_id: string; state: string; created_at: string }>;

    at("2030-01-01T00:01:00.000Z");
    const [first] = await waitFor(async () => {
      const runs = await runsOf();
      return runs.length > 0 ? runs : undefined;
    });
    expect(first!.state).toBe("QUEUED");

    at("2030-01-01T00:02:00.000Z");
    const skipped = await waitFor(
      async () => {
        const res = await t.api("GET", `${base}/${s.id}`);
        return res.body.last_spawn_error ? res.body : undefined;
      },
      { what: "the skipped firing to be recorded" },
    );
    expect(skipped.last_spawn_error).toContain("skipped the firing of 2030-01-01T00:02:00.000Z");
    expect(skipped.last_spawn_error).toContain(`previous run ${first!.run_id} is still queued`);
    expect(skipped.history).toEqual({ last_ran: first!.created_at, next_run: "2030-01-01T00:03:00.000Z" });
    expect((await runsOf()).map((r) => r.run_id)).toEqual([first!.run_id]);

    // Once that run is no longer queued (here: cancelled), the next fire time makes a run again.
    expect((await t.api("POST", `/api/v1/agent/runs/${first!.run_id}/cancel`)).status).toBe(200);
    at("2030-01-01T00:03:00.000Z");
    const runs = await waitFor(async () => {
      const all = await runsOf();
      return all.length === 2 ? all : undefined;
    });
    expect(runs[1]!.state).toBe("QUEUED");
    const after = await t.api("GET", `${base}/${s.id}`);
    expect(after.body.last_spawn_error).toBeNull();
    expect(after.body.history.last_ran).toBe(runs[1]!.created_at);
    await t.api("POST", `${base}/${s.id}/pause`, {});
  });
});

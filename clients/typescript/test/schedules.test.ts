import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../../../test/support/dispatch.ts";
import {
  BadRequestError,
  ConflictError,
  Dispatch,
  NotFoundError,
  type ScheduledAgentItem,
} from "../src/index.ts";

// client.schedules against a live Dispatch whose scheduler runs on a test clock.

const START = Date.parse("2030-03-04T08:00:30.000Z");
let clock = START;
let t: TestDispatch;
let client: Dispatch;

beforeAll(async () => {
  t = await startTestDispatch(
    { DISPATCH_MAX_CONCURRENT_RUNS: "0" },
    { scheduler: { now: () => clock, maxSleepMs: 50 } },
  );
  client = new Dispatch({ apiKey: t.key, baseURL: `${t.url}/api/v1`, maxRetries: 0 });
});
afterAll(async () => {
  await t?.stop();
});

describe("client.schedules", () => {
  let created: ScheduledAgentItem;

  it("create returns the ScheduledAgentItem with its next run; retrieve and list find it", async () => {
    created = await client.schedules.create({
      name: "client-weekday",
      cron_schedule: "0 9 * * 1-5",
      timezone: "Europe/Paris",
      prompt: "$ echo weekday",
      agent_config: { name: "reviewer" },
      metadata: { team: "web" },
    });
    expect(created).toMatchObject({
      name: "client-weekday",
      cron_schedule: "0 9 * * 1-5",
      timezone: "Europe/Paris",
      enabled: true,
      agent_config: { name: "reviewer" },
      metadata: { team: "web" },
      history: { last_ran: null },
    });
    // 2030-03-04 is a Monday; 09:00 in Paris (UTC+1 in March) is 08:00 UTC, already past: next is Tuesday.
    expect(created.history.next_run).toBe("2030-03-05T08:00:00.000Z");
    expect(await client.schedules.retrieve(created.id)).toEqual(created);
    const { schedules } = await client.schedules.list();
    expect(schedules.map((s) => s.id)).toContain(created.id);
  });

  it("update replaces; pause and resume toggle enabled; delete answers {success: true}", async () => {
    const updated = await client.schedules.update(created.id, {
      name: "client-renamed",
      cron_schedule: "30 6 * * *",
      enabled: true,
      prompt: "$ echo renamed",
    });
    expect(updated).toMatchObject({ name: "client-renamed", timezone: "UTC", agent_config: {} });
    const paused = await client.schedules.pause(created.id);
    expect(paused.enabled).toBe(false);
    expect(paused.history.next_run).toBeNull();
    const resumed = await client.schedules.resume(created.id);
    expect(resumed.enabled).toBe(true);
    expect(resumed.history.next_run).toBe("2030-03-05T06:30:00.000Z");
    expect(await client.schedules.delete(created.id)).toEqual({ success: true });
    await expect(client.schedules.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("errors are typed: an invalid cron is a 400 naming the field, a taken name a 409", async () => {
    const bad = client.schedules.create({ name: "client-bad", cron_schedule: "every day", prompt: "x" });
    await expect(bad).rejects.toBeInstanceOf(BadRequestError);
    await expect(bad).rejects.toThrow(/cron_schedule/);
    await client.schedules.create({ name: "client-taken", cron_schedule: "0 1 * * *", prompt: "x" });
    await expect(
      client.schedules.create({ name: "client-taken", cron_schedule: "0 2 * * *", prompt: "y" }),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(() => client.schedules.retrieve("")).toThrow(/scheduleId/);
  });

  it("a firing creates a run that names its schedule", async () => {
    const every = await client.schedules.create({
      name: "client-every-minute",
      cron_schedule: "* * * * *",
      prompt: "$ echo tick",
    });
    clock += 60_000;
    const run = await waitFor(
      async () => {
        for await (const r of client.runs.list({ schedule_id: every.id })) return r;
        return undefined;
      },
      { what: "the scheduled run" },
    );
    expect(run.schedule).toMatchObject({ schedule_id: every.id, schedule_name: "client-every-minute" });
    expect((await client.schedules.retrieve(every.id)).history.last_ran).not.toBeNull();
  });
});

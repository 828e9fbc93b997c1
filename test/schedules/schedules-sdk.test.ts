import OzAPI, { NotFoundError } from "oz-agent-sdk";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";

/**
 * The official Oz TypeScript SDK driving every schedule method against a live Dispatch, and reading the
 * run a firing made (with `schedule` on the RunItem and the `schedule_id` filter).
 */
let clock = Date.parse("2030-02-01T00:00:10.000Z");
let t: TestDispatch;
let oz: OzAPI;

beforeAll(async () => {
  t = await startTestDispatch({}, { scheduler: { now: () => clock, maxSleepMs: 50 } });
  oz = new OzAPI({ baseURL: `${t.url}/api/v1`, apiKey: t.key, maxRetries: 0 });
});
afterAll(async () => {
  await t?.stop();
});

it("create, retrieve, list, update, pause, resume and delete through the Oz SDK", async () => {
  const created = await oz.agent.schedules.create({
    name: "sdk-review",
    cron_schedule: "* * * * *",
    prompt: "$ echo from the sdk",
    enabled: true,
  });
  expect(created).toMatchObject({
    name: "sdk-review",
    cron_schedule: "* * * * *",
    enabled: true,
    prompt: "$ echo from the sdk",
    last_spawn_error: null,
    history: { last_ran: null, next_run: "2030-02-01T00:01:00.000Z" },
    scope: { type: "Team", uid: "team_default" },
    created_by: { uid: "admin" },
  });

  expect(await oz.agent.schedules.retrieve(created.id)).toEqual(created);
  const other = await oz.agent.schedules.create({ name: "a-first", cron_schedule: "0 9 * * *", prompt: "x" });
  const list = await oz.agent.schedules.list();
  expect(list.schedules.map((s) => s.name)).toEqual(["a-first", "sdk-review"]);

  const updated = await oz.agent.schedules.update(created.id, {
    name: "sdk-review",
    cron_schedule: "* * * * *",
    enabled: true,
    prompt: "$ echo updated",
    agent_config: { name: "sdk-agent" },
  });
  expect(updated).toMatchObject({ prompt: "$ echo updated", agent_config: { name: "sdk-agent" } });

  clock = Date.parse("2030-02-01T00:01:00.000Z");
  const runs = await waitFor(async () => {
    const page = await oz.agent.runs.list({ schedule_id: created.id });
    return page.runs.length > 0 ? page.runs : undefined;
  });
  expect(runs).toHaveLength(1);
  expect(runs[0]).toMatchObject({
    source: "SCHEDULED_AGENT",
    prompt: "$ echo updated",
    agent_config: { name: "sdk-agent" },
    schedule: { schedule_id: created.id, schedule_name: "sdk-review", cron_schedule: "* * * * *" },
  });
  const item = await oz.agent.runs.retrieve(runs[0]!.run_id);
  expect(item.schedule?.schedule_id).toBe(created.id);

  const paused = await oz.agent.schedules.pause(created.id);
  expect(paused.enabled).toBe(false);
  expect(paused.history?.next_run).toBeNull();
  expect(paused.history?.last_ran).toBe(runs[0]!.created_at);
  const resumed = await oz.agent.schedules.resume(created.id);
  expect(resumed.enabled).toBe(true);
  expect(resumed.history?.next_run).toBe("2030-02-01T00:02:00.000Z");

  expect(await oz.agent.schedules.delete(created.id)).toEqual({ success: true });
  await expect(oz.agent.schedules.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  expect((await oz.agent.schedules.list()).schedules.map((s) => s.id)).toEqual([other.id]);
  // The deleted schedule's run stays, still found by its schedule id.
  expect((await oz.agent.runs.list({ schedule_id: created.id })).runs.map((r) => r.run_id)).toEqual([
    runs[0]!.run_id,
  ]);
});

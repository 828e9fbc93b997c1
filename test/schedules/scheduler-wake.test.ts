import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { RunAccess } from "../../src/access/run-access.ts";
import { createLogger } from "../../src/log.ts";
import { RunService } from "../../src/runs/run-service.ts";
import { ScheduleService } from "../../src/schedules/schedule-service.ts";
import { Scheduler } from "../../src/schedules/scheduler.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { waitFor } from "../support/dispatch.ts";

/**
 * The scheduler sleeps until the next fire time rather than polling: on a clock running 600 times
 * faster than real time (a minute per 100 ms) with the default 30 s bound on a sleep, firings arrive
 * minute after minute only if it wakes at the fire times, and a schedule created while it sleeps with
 * nothing to do is picked up at once (the change re-arms it).
 */
const SPEED = 600;
let dir: string;
let store: SqliteStore;
let scheduler: Scheduler | undefined;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "dispatch-scheduler-"));
  store = new SqliteStore(join(dir, "dispatch.db"));
  await store.migrate();
  await store.ensureTeam({ id: "team_default", name: "Default team" });
});
afterEach(async () => {
  await scheduler?.stop();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

it("wakes at each fire time of an accelerated clock and re-arms when a schedule is created", async () => {
  const realStart = Date.now();
  const simStart = Date.parse("2030-04-01T00:00:30.000Z");
  const now = () => simStart + (Date.now() - realStart) * SPEED;
  scheduler = new Scheduler({
    store,
    runService: new RunService(store, { capacity: 4, access: new RunAccess(store) }),
    log: createLogger("silent"),
    now,
    speed: SPEED,
  });
  scheduler.start();
  // Nothing to do yet: the scheduler sleeps for its full bound (30 s real) unless the change wakes it.
  const schedule = await new ScheduleService(store, {
    limits: { perTeam: 100, perCreator: 100 },
    now,
  }).create(
    { teamId: "team_default", who: { type: "user", uid: "alice", display_name: "Alice" } },
    { name: "fast", cronSchedule: "* * * * *", prompt: "$ echo tick" },
  );
  const runs = await waitFor(
    async () => {
      // Start each run as a worker would: a firing while the previous run is still queued is skipped.
      while (await store.claimNextRun("test-worker", 3_600_000));
      const { runs } = await store.listRuns("team_default", {
        limit: 100,
        sortBy: "created_at",
        sortOrder: "asc",
        scheduleId: schedule.id,
      });
      return runs.length >= 3 ? runs : undefined;
    },
    { timeoutMs: 15_000, what: "three firings" },
  );
  const times = runs.map((run) => Date.parse(run.schedule!.fireTime));
  // Whole minutes, strictly increasing (a slot a loaded machine slept through collapses, never repeats).
  for (const [i, time] of times.entries()) {
    expect(time % 60_000).toBe(0);
    if (i > 0) expect(time).toBeGreaterThan(times[i - 1]!);
  }
  await scheduler.stop();
  scheduler = undefined;
});

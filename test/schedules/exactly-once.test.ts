import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ScheduleRecord } from "../../src/model/schedule.ts";
import { ScheduleService } from "../../src/schedules/schedule-service.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { waitFor } from "../support/dispatch.ts";

/**
 * Exactly once across processes and restarts: two schedulers as real OS processes on one SQLite
 * database, a test clock both read from a file, a schedule due every minute. Each minute fires once,
 * also when one process is killed with SIGKILL and started again in between; slots missed while every
 * scheduler was down fire once, as the latest; a paused schedule fires nothing; a spawn failure is
 * recorded on the schedule.
 */
const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ALICE = { type: "user" as const, uid: "alice", display_name: "Alice" };

let dir: string;
let clockFile: string;
let dbPath: string;
let store: SqliteStore;
let schedules: ScheduleService;
let clock = "2030-03-01T00:00:30.000Z";
const children = new Set<ChildProcess>();

/** Moves the shared clock (write then rename: a reader never sees a half-written file). */
function setClock(iso: string): void {
  clock = iso;
  const tmp = `${clockFile}.tmp`;
  writeFileSync(tmp, iso);
  renameSync(tmp, clockFile);
}

async function startScheduler(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["test/support/scheduler-process.ts"], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, DISPATCH_TEST_DB: dbPath, DISPATCH_TEST_CLOCK: clockFile },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  child.once("exit", () => children.delete(child));
  await waitFor(() => output.includes("ready") || child.exitCode !== null, {
    timeoutMs: 30_000,
    what: "the scheduler process to start",
  });
  if (!output.includes("ready")) throw new Error(`scheduler process failed: ${output}`);
  return child;
}

async function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill(signal);
  await exited;
}

const fireTimes = async (schedule: ScheduleRecord) =>
  (
    await store.listRuns("team_default", {
      limit: 100,
      sortBy: "created_at",
      sortOrder: "asc",
      scheduleId: schedule.id,
    })
  ).runs.map((run) => run.schedule?.fireTime);

/**
 * Waits for the schedule's `count`th run, then starts it as a worker would (these processes have no
 * executor): a firing while the previous run is still queued is skipped, and each minute here must fire.
 */
const untilFired = async (schedule: ScheduleRecord, count: number) => {
  await waitFor(async () => ((await fireTimes(schedule)).length >= count ? true : undefined), {
    timeoutMs: 30_000,
    what: `${count} runs of ${schedule.name}`,
  });
  while (await store.claimNextRun("test-worker", 3_600_000));
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "dispatch-schedules-"));
  clockFile = join(dir, "clock");
  dbPath = join(dir, "dispatch.db");
  setClock(clock);
  store = new SqliteStore(dbPath);
  await store.migrate();
  await store.ensureTeam({ id: "team_default", name: "Default team" });
  schedules = new ScheduleService(store, {
    limits: { perTeam: 100, perCreator: 100 },
    now: () => Date.parse(clock),
  });
});

afterAll(async () => {
  await Promise.all([...children].map((child) => kill(child, "SIGKILL")));
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("fires each minute exactly once with two processes, a kill -9 and a restart; a missed window once", async () => {
  const actor = { teamId: "team_default", who: ALICE };
  const every = await schedules.create(actor, {
    name: "every-minute",
    cronSchedule: "* * * * *",
    prompt: "$ echo tick",
  });
  const paused = await schedules.create(actor, {
    name: "paused",
    cronSchedule: "* * * * *",
    prompt: "$ echo never",
    enabled: false,
  });
  const broken = await schedules.create(actor, {
    name: "broken",
    cronSchedule: "* * * * *",
    prompt: "$ echo hi",
    agentConfig: { environment_id: "removed-environment" },
  });

  let a = await startScheduler();
  const b = await startScheduler();

  // Minute 1: both processes race for the slot.
  setClock("2030-03-01T00:01:00.000Z");
  await untilFired(every, 1);
  const failure = await waitFor(
    async () => (await store.getSchedule("team_default", broken.id))?.lastSpawnError,
    {
      what: "the spawn failure to be recorded",
    },
  );
  expect(failure).toContain("environment_id");

  // Minute 2: A is killed (no clean shutdown); B alone fires; the clock also moves within the minute.
  await kill(a, "SIGKILL");
  setClock("2030-03-01T00:02:00.000Z");
  await untilFired(every, 2);
  setClock("2030-03-01T00:02:40.000Z");

  // Minute 3: A is back; both race again.
  a = await startScheduler();
  setClock("2030-03-01T00:03:00.000Z");
  await untilFired(every, 3);
  setClock("2030-03-01T00:03:59.000Z");
  // A clean stop lets a firing under way finish: whatever either process was doing is in the store now.
  await Promise.all([kill(a, "SIGTERM"), kill(b, "SIGTERM")]);
  expect(await fireTimes(every)).toEqual([
    "2030-03-01T00:01:00.000Z",
    "2030-03-01T00:02:00.000Z",
    "2030-03-01T00:03:00.000Z",
  ]);

  // Every scheduler down from 00:03:59 to 00:07:30: the four slots missed fire once, as 00:07.
  setClock("2030-03-01T00:07:30.000Z");
  const [c, d] = await Promise.all([startScheduler(), startScheduler()]);
  await untilFired(every, 4);
  await Promise.all([kill(c, "SIGTERM"), kill(d, "SIGTERM")]);
  expect(await fireTimes(every)).toEqual([
    "2030-03-01T00:01:00.000Z",
    "2030-03-01T00:02:00.000Z",
    "2030-03-01T00:03:00.000Z",
    "2030-03-01T00:07:00.000Z",
  ]);

  // The paused schedule fired nothing in all that time, the broken one never made a run.
  expect(await fireTimes(paused)).toEqual([]);
  expect(await fireTimes(broken)).toEqual([]);
  const after = await store.getSchedule("team_default", every.id);
  expect(after).toMatchObject({ lastFireTime: "2030-03-01T00:07:00.000Z", lastSpawnError: null });
  const runs = await store.listRuns("team_default", {
    limit: 100,
    sortBy: "created_at",
    sortOrder: "asc",
    scheduleId: every.id,
  });
  for (const run of runs.runs) {
    expect(run).toMatchObject({
      state: "INPROGRESS",
      source: "SCHEDULED_AGENT",
      creator: ALICE,
      title: "every-minute",
      schedule: { scheduleId: every.id, scheduleName: "every-minute", cronSchedule: "* * * * *" },
    });
  }
});

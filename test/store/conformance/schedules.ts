import { v7 as uuidv7 } from "uuid";
import { describe, expect, it } from "vitest";
import type { ScheduleRecord } from "../../../src/model/schedule.ts";
import type { IdempotencyClaim, ScheduleFire } from "../../../src/store/store.ts";
import type { StoreSuite } from "./suite.ts";

const T0 = "2026-01-01T00:00:00.000Z";
const ALICE = { type: "user" as const, uid: "u1", display_name: "Alice" };
const BOB = { type: "user" as const, uid: "u2", display_name: "Bob" };

export function newSchedule(over: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    id: uuidv7(),
    teamId: "t1",
    name: "nightly",
    cronSchedule: "0 3 * * *",
    timezone: "UTC",
    enabled: true,
    prompt: "$ echo nightly",
    agentConfig: { name: "night-owl" },
    metadata: { team: "infra" },
    createdBy: ALICE,
    updatedBy: ALICE,
    createdAt: T0,
    updatedAt: T0,
    revision: 1,
    activeSince: T0,
    lastFireTime: null,
    lastRan: null,
    lastSpawnError: null,
    reportTo: null,
    ...over,
  };
}

/** Limits no test here reaches, except those about limits. */
const ROOMY = { perTeam: 1000, perCreator: 1000 };

export function schedulesConformance(t: StoreSuite): void {
  describe("schedules", () => {
    const created = async (over: Partial<ScheduleRecord> = {}) => {
      const result = await t.store.createSchedule(newSchedule(over), ROOMY);
      if (typeof result === "string" || result.kind !== "created")
        throw new Error(`not created: ${String(result)}`);
      return result.value;
    };
    const change = (s: ScheduleRecord, over: Partial<ScheduleRecord> = {}) => {
      const { name, cronSchedule, timezone, enabled, prompt, agentConfig, metadata } = { ...s, ...over };
      return {
        name,
        cronSchedule,
        timezone,
        enabled,
        prompt,
        agentConfig,
        metadata,
        updatedBy: over.updatedBy ?? BOB,
        updatedAt: over.updatedAt ?? "2026-01-02T00:00:00.000Z",
      };
    };
    const fireOf = (s: ScheduleRecord, fireTime: string, over: Partial<ScheduleFire> = {}): ScheduleFire => ({
      scheduleId: s.id,
      revision: s.revision,
      fireTime,
      at: fireTime,
      ...over,
    });
    const runFor = (s: ScheduleRecord, fireTime: string) =>
      t.newRun({
        teamId: s.teamId,
        source: "SCHEDULED_AGENT",
        schedule: { scheduleId: s.id, scheduleName: s.name, cronSchedule: s.cronSchedule, fireTime },
      });
    const scheduledRuns = async (teamId: string, scheduleId: string) =>
      (await t.store.listRuns(teamId, { limit: 100, sortBy: "created_at", sortOrder: "asc", scheduleId }))
        .runs;

    it("creates, reads and lists a team's schedules sorted by name, apart from other teams'", async () => {
      const b = await created({ name: "b-weekly" });
      const a = await created({ name: "a-daily", reportTo: null });
      const other = await created({ name: "a-daily", teamId: "t2" });
      expect(b).toEqual(newSchedule({ ...b }));
      expect(await t.store.getSchedule("t1", a.id)).toEqual(a);
      expect(await t.store.getSchedule("t2", a.id)).toBeUndefined();
      expect((await t.store.listSchedules("t1")).map((s) => s.name)).toEqual(["a-daily", "b-weekly"]);
      expect((await t.store.listSchedules("t2")).map((s) => s.id)).toEqual([other.id]);
    });

    it("refuses a second schedule of the same name in a team", async () => {
      await created({ name: "nightly" });
      expect(await t.store.createSchedule(newSchedule({ name: "nightly" }), ROOMY)).toBe("name_taken");
      expect(await t.store.listSchedules("t1")).toHaveLength(1);
    });

    it("honours an idempotency claim: an equal retry is replayed, another request under the key refused", async () => {
      const claim: IdempotencyClaim = {
        principalId: "u1",
        key: "k1",
        requestHash: "h1",
        respond: (s) => ({ schedule_id: (s as ScheduleRecord).id }),
        notBefore: "2000-01-01T00:00:00.000Z",
      };
      const first = await t.store.createSchedule(newSchedule({ name: "once" }), ROOMY, claim);
      expect(first).toMatchObject({ kind: "created" });
      const id = (first as { value: ScheduleRecord }).value.id;
      expect(await t.store.createSchedule(newSchedule({ name: "once" }), ROOMY, claim)).toEqual({
        kind: "replayed",
        response: { schedule_id: id },
      });
      expect(
        await t.store.createSchedule(newSchedule({ name: "twice" }), ROOMY, { ...claim, requestHash: "h2" }),
      ).toEqual({
        kind: "key_reused",
      });
      expect((await t.store.listSchedules("t1")).map((s) => s.id)).toEqual([id]);
    });

    it("refuses a schedule over the team's or its creator's limit, counting each team apart", async () => {
      const limits = { perTeam: 3, perCreator: 2 };
      const make = (name: string, over: Partial<ScheduleRecord> = {}) =>
        t.store.createSchedule(newSchedule({ name, ...over }), limits);
      expect(await make("a1")).toMatchObject({ kind: "created" });
      expect(await make("a2")).toMatchObject({ kind: "created" });
      expect(await make("a3")).toBe("creator_limit");
      expect(await make("b1", { createdBy: BOB, updatedBy: BOB })).toMatchObject({ kind: "created" });
      expect(await make("b2", { createdBy: BOB, updatedBy: BOB })).toBe("team_limit");
      expect(await make("a1", { teamId: "t2" })).toMatchObject({ kind: "created" });
      expect((await t.store.listSchedules("t1")).map((s) => s.name)).toEqual(["a1", "a2", "b1"]);
      // Deleting one makes room again.
      const [a1] = await t.store.listSchedules("t1");
      await t.store.deleteSchedule("t1", a1!.id);
      expect(await make("a3")).toMatchObject({ kind: "created" });
    });

    it("a take-over makes the editor the owner, within the editor's limit; an edit without one keeps the owner", async () => {
      const s = await created({ name: "alices" });
      const paused = await t.store.updateSchedule("t1", s.id, change(s, { enabled: false }));
      expect(paused).toMatchObject({ createdBy: ALICE, updatedBy: BOB });
      const taken = await t.store.updateSchedule("t1", s.id, {
        ...change(s, { prompt: "$ echo bob's" }),
        takeOver: { perCreator: 5 },
      });
      expect(taken).toMatchObject({ createdBy: BOB, updatedBy: BOB, prompt: "$ echo bob's" });
      expect(await t.store.getSchedule("t1", s.id)).toMatchObject({ createdBy: BOB });
      // Bob's count now includes it: a take-over beyond his limit is refused and changes nothing.
      const other = await created({ name: "alices-other" });
      expect(
        await t.store.updateSchedule("t1", other.id, {
          ...change(other, { prompt: "$ echo mine now" }),
          takeOver: { perCreator: 1 },
        }),
      ).toBe("creator_limit");
      expect(await t.store.getSchedule("t1", other.id)).toEqual(other);
      // The owner editing their own schedule is no take-over, whatever they own.
      expect(
        await t.store.updateSchedule("t1", s.id, {
          ...change(s, { prompt: "$ echo again" }),
          takeOver: { perCreator: 1 },
        }),
      ).toMatchObject({ createdBy: BOB, prompt: "$ echo again" });
    });

    it("a schedule reporting to a channel mentions its new owner there after a take-over, or nobody", async () => {
      const target = {
        platform: "slack" as const,
        workspace: "T1",
        channel: "C1",
        thread: null,
        requester: "U1",
      };
      const s = await created({ name: "channel-report", reportTo: target });
      const takeOver = (by: typeof ALICE) =>
        t.store.updateSchedule("t1", s.id, {
          ...change(s),
          updatedBy: by,
          takeOver: { perCreator: 5 },
        });
      // Taken over by someone of the API (no Slack account): nobody is mentioned, not the first owner.
      expect(await takeOver(BOB)).toMatchObject({ createdBy: BOB, reportTo: { ...target, requester: "" } });
      // Then by a Slack user of that workspace: they are.
      const slackUser = { type: "user" as const, uid: "slack:T1:U7", display_name: "Grace" };
      expect(await takeOver(slackUser)).toMatchObject({ reportTo: { ...target, requester: "U7" } });
    });

    it("replaces the user's fields, bumps the revision, and restarts the clock only on resume or a new cron", async () => {
      const s = await created();
      const renamed = await t.store.updateSchedule(
        "t1",
        s.id,
        change(s, { name: "renamed", prompt: "$ echo 2" }),
      );
      expect(renamed).toMatchObject({
        name: "renamed",
        prompt: "$ echo 2",
        revision: 2,
        updatedBy: BOB,
        createdBy: ALICE,
        activeSince: T0,
      });
      const paused = (await t.store.updateSchedule(
        "t1",
        s.id,
        change(s, { enabled: false, updatedAt: "2026-01-03T00:00:00.000Z" }),
      )) as ScheduleRecord;
      expect(paused).toMatchObject({ enabled: false, revision: 3, activeSince: T0 });
      const resumed = (await t.store.updateSchedule(
        "t1",
        s.id,
        change(s, { enabled: true, updatedAt: "2026-01-04T00:00:00.000Z" }),
      )) as ScheduleRecord;
      expect(resumed).toMatchObject({ enabled: true, revision: 4, activeSince: "2026-01-04T00:00:00.000Z" });
      const recron = (await t.store.updateSchedule(
        "t1",
        s.id,
        change(s, { cronSchedule: "*/5 * * * *", updatedAt: "2026-01-05T00:00:00.000Z" }),
      )) as ScheduleRecord;
      expect(recron).toMatchObject({ cronSchedule: "*/5 * * * *", activeSince: "2026-01-05T00:00:00.000Z" });
      const rezoned = (await t.store.updateSchedule(
        "t1",
        s.id,
        change(recron, { timezone: "Europe/Paris", updatedAt: "2026-01-06T00:00:00.000Z" }),
      )) as ScheduleRecord;
      expect(rezoned).toMatchObject({ timezone: "Europe/Paris", activeSince: "2026-01-06T00:00:00.000Z" });
    });

    it("refuses a rename onto another schedule's name, and another team's schedule", async () => {
      const a = await created({ name: "a" });
      await created({ name: "b" });
      expect(await t.store.updateSchedule("t1", a.id, change(a, { name: "b" }))).toBe("name_taken");
      expect(await t.store.updateSchedule("t2", a.id, change(a))).toBeUndefined();
      expect(await t.store.getSchedule("t1", a.id)).toEqual(a);
    });

    it("deletes a schedule of the team only", async () => {
      const s = await created();
      expect(await t.store.deleteSchedule("t2", s.id)).toBe(false);
      expect(await t.store.deleteSchedule("t1", s.id)).toBe(true);
      expect(await t.store.deleteSchedule("t1", s.id)).toBe(false);
      expect(await t.store.getSchedule("t1", s.id)).toBeUndefined();
    });

    it("lists the enabled schedules of every team for the scheduler", async () => {
      const on1 = await created({ name: "on" });
      await created({ name: "off", enabled: false });
      const on2 = await created({ name: "on", teamId: "t2" });
      expect((await t.store.listEnabledSchedules()).map((s) => s.id).sort()).toEqual([on1.id, on2.id].sort());
    });

    it("lists the schedules reporting to a channel", async () => {
      const target = {
        platform: "slack" as const,
        workspace: "T1",
        channel: "C1",
        thread: null,
        requester: "U1",
      };
      const here = await created({ name: "here", reportTo: target });
      await created({ name: "elsewhere", reportTo: { ...target, channel: "C2" } });
      await created({ name: "api" });
      const listed = await t.store.listSchedules("t1", {
        reportTo: { platform: "slack", workspace: "T1", channel: "C1" },
      });
      expect(listed).toEqual([here]);
      expect(listed[0]!.reportTo).toEqual(target);
    });

    it("fires a slot into a run with its schedule, once, and records last_ran", async () => {
      const s = await created();
      await t.store.recordScheduleError(s.id, "environment gone");
      const slot = "2026-01-02T03:00:00.000Z";
      const run = runFor(s, slot);
      const fired = await t.store.fireSchedule(fireOf(s, slot), run);
      expect(fired.kind).toBe("fired");
      const stored = await t.store.getRun("t1", run.id);
      expect(stored).toMatchObject({ state: "QUEUED", source: "SCHEDULED_AGENT", schedule: run.schedule });
      expect(fired).toEqual({ kind: "fired", run: stored });
      expect(await t.store.getSchedule("t1", s.id)).toMatchObject({
        lastFireTime: slot,
        lastRan: run.createdAt,
        lastSpawnError: null,
        revision: 1,
        updatedAt: T0,
      });
      // Again, or an earlier slot after a later one fired: nothing happens.
      expect(await t.store.fireSchedule(fireOf(s, slot), runFor(s, slot))).toEqual({ kind: "already_fired" });
      const earlier = runFor(s, "2026-01-01T03:00:00.000Z");
      expect(await t.store.fireSchedule(fireOf(s, earlier.schedule!.fireTime), earlier)).toEqual({
        kind: "already_fired",
      });
      expect((await scheduledRuns("t1", s.id)).map((r) => r.id)).toEqual([run.id]);
      expect(await scheduledRuns("t1", "another")).toEqual([]);
    });

    it("skips a firing while the latest firing's run is still QUEUED, and fires again once it has started", async () => {
      const s = await created();
      const first = runFor(s, "2026-01-02T03:00:00.000Z");
      expect((await t.store.fireSchedule(fireOf(s, "2026-01-02T03:00:00.000Z"), first)).kind).toBe("fired");
      const slot = "2026-01-03T03:00:00.000Z";
      expect(await t.store.fireSchedule(fireOf(s, slot), runFor(s, slot))).toEqual({
        kind: "skipped",
        queuedRunId: first.id,
      });
      const skipped = await t.store.getSchedule("t1", s.id);
      expect(skipped).toMatchObject({ lastFireTime: slot, lastRan: first.createdAt });
      expect(skipped!.lastSpawnError).toContain(`skipped the firing of ${slot}`);
      expect(skipped!.lastSpawnError).toContain(`${first.id} is still queued`);
      // The skipped slot is used up, like a fired one.
      expect(await t.store.fireSchedule(fireOf(s, slot), runFor(s, slot))).toEqual({ kind: "already_fired" });
      expect((await scheduledRuns("t1", s.id)).map((r) => r.id)).toEqual([first.id]);

      expect((await t.store.claimNextRun("w1", 60_000))?.id).toBe(first.id);
      const next = "2026-01-04T03:00:00.000Z";
      const second = runFor(s, next);
      expect((await t.store.fireSchedule(fireOf(s, next), second)).kind).toBe("fired");
      expect(await t.store.getSchedule("t1", s.id)).toMatchObject({
        lastFireTime: next,
        lastSpawnError: null,
      });
      expect((await scheduledRuns("t1", s.id)).map((r) => r.id)).toEqual([first.id, second.id]);
    });

    it("two firings of one slot racing make one run", async () => {
      const s = await created();
      const slot = "2026-01-02T03:00:00.000Z";
      const results = await Promise.all(
        [1, 2, 3].map(() => t.store.fireSchedule(fireOf(s, slot), runFor(s, slot))),
      );
      expect(results.map((r) => r.kind).sort()).toEqual(["already_fired", "already_fired", "fired"]);
      expect(await scheduledRuns("t1", s.id)).toHaveLength(1);
    });

    it("refuses a firing prepared from an older revision, of a paused or deleted schedule, or before it was active", async () => {
      const s = await created();
      const slot = "2026-01-02T03:00:00.000Z";
      const edited = (await t.store.updateSchedule(
        "t1",
        s.id,
        change(s, { prompt: "$ echo new" }),
      )) as ScheduleRecord;
      expect(await t.store.fireSchedule(fireOf(s, slot), runFor(s, slot))).toEqual({ kind: "stale" });
      expect(await t.store.fireSchedule(fireOf(edited, T0), runFor(s, T0))).toEqual({ kind: "stale" });
      const paused = (await t.store.updateSchedule(
        "t1",
        s.id,
        change(edited, { enabled: false }),
      )) as ScheduleRecord;
      expect(await t.store.fireSchedule(fireOf(paused, slot), runFor(s, slot))).toEqual({ kind: "stale" });
      const other = await created({ name: "other" });
      await t.store.deleteSchedule("t1", other.id);
      expect(await t.store.fireSchedule(fireOf(other, slot), runFor(other, slot))).toEqual({ kind: "stale" });
      expect(await scheduledRuns("t1", s.id)).toEqual([]);
      expect(await scheduledRuns("t1", other.id)).toEqual([]);
    });

    it("binds each run of a schedule that reports to a channel", async () => {
      const target = {
        platform: "slack" as const,
        workspace: "T1",
        channel: "C1",
        thread: null,
        requester: "U1",
      };
      const s = await created({ reportTo: target });
      const slot = "2026-01-02T03:00:00.000Z";
      const run = runFor(s, slot);
      await t.store.fireSchedule(fireOf(s, slot), run);
      expect(await t.store.getThreadBinding(run.id)).toEqual({
        runId: run.id,
        platform: "slack",
        workspace: "T1",
        channel: "C1",
        thread: null,
        triggerRef: null,
        requester: "U1",
        createdAt: run.createdAt,
        askedAt: null,
        adopted: false,
        ended: null,
      });
    });

    it("records a spawn error, and a deleted schedule's runs still list under its id", async () => {
      const s = await created();
      expect(await t.store.recordScheduleError(s.id, "config.environment_id: no environment")).toBe(true);
      expect((await t.store.getSchedule("t1", s.id))?.lastSpawnError).toBe(
        "config.environment_id: no environment",
      );
      const slot = "2026-01-02T03:00:00.000Z";
      const run = runFor(s, slot);
      await t.store.fireSchedule(fireOf(s, slot), run);
      await t.store.deleteSchedule("t1", s.id);
      expect(await t.store.recordScheduleError(s.id, "late")).toBe(false);
      expect((await scheduledRuns("t1", s.id)).map((r) => r.id)).toEqual([run.id]);
      expect(await scheduledRuns("t2", s.id)).toEqual([]);
    });
  });
}

import type { Logger } from "pino";
import { RunError } from "../model/errors.ts";
import type { Caller } from "../model/identity.ts";
import type { ScheduleRecord } from "../model/schedule.ts";
import type { RunService } from "../runs/run-service.ts";
import type { ScheduleFireResult, Store } from "../store/store.ts";
import { CronTimes } from "./cron.ts";

export interface SchedulerOptions {
  store: Pick<Store, "listEnabledSchedules" | "recordScheduleError" | "classifyError" | "signals">;
  runService: Pick<RunService, "createScheduled">;
  log: Logger;
  /** The scheduler's clock in epoch ms (tests run an accelerated one). */
  now?: () => number;
  /** Clock ms that pass per real ms: 1 for the wall clock, e.g. 60 for a minute per second. */
  speed?: number;
  /**
   * Longest real wait between looks at the store: changes made by another process (a replica, the CLI)
   * send no signal here, so they are seen within this.
   */
  maxSleepMs?: number;
  /** Clock ms before a firing that failed is tried again, while its fire time is still the latest. */
  retryMs?: number;
}

export const DEFAULT_SCHEDULER_MAX_SLEEP_MS = 30_000;
export const DEFAULT_SCHEDULER_RETRY_MS = 60_000;

/**
 * Fires schedules into runs. Each look at the store fires, for every enabled schedule, its latest fire
 * time not fired yet — so the slots missed while Dispatch was down fire once, as that latest one — then
 * sleeps until the next fire time (bounded, and cut short when a schedule changes in this process).
 * Exactly-once comes from the store: a firing claims (schedule, fire time) in the transaction that
 * inserts its run, so any number of schedulers on one database may race for it. A firing while the
 * schedule's previous run is still queued is skipped there too (and shown in last_spawn_error).
 */
export class Scheduler {
  private readonly opts: SchedulerOptions;
  private readonly now: () => number;
  private readonly speed: number;
  private readonly maxSleepMs: number;
  private readonly retryMs: number;
  /** The latest failed firing of each schedule, so that it is retried after `retryMs`, not at once. */
  private readonly failures = new Map<string, { fireTime: string; retryAt: number }>();
  private loop: Promise<void> | undefined;
  private stopped = true;
  /** A schedule changed since the last look: look again before sleeping. */
  private changed = false;
  private wake: (() => void) | undefined;
  private readonly onChange = () => {
    this.changed = true;
    this.wake?.();
  };

  constructor(opts: SchedulerOptions) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    this.speed = opts.speed ?? 1;
    this.maxSleepMs = opts.maxSleepMs ?? DEFAULT_SCHEDULER_MAX_SLEEP_MS;
    this.retryMs = opts.retryMs ?? DEFAULT_SCHEDULER_RETRY_MS;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.opts.store.signals.on("schedule_changed", this.onChange);
    this.loop = this.run();
  }

  /** Resolves once the firing under way (if any) has finished; nothing fires afterwards. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.opts.store.signals.off("schedule_changed", this.onChange);
    this.wake?.();
    await this.loop;
  }

  /**
   * One look: fires what is due now and returns when the next fire time (or retry) is due, in clock ms,
   * or undefined when no enabled schedule will ever fire.
   */
  async tick(): Promise<number | undefined> {
    const now = this.now();
    const schedules = await this.opts.store.listEnabledSchedules();
    const present = new Set(schedules.map((s) => s.id));
    for (const id of this.failures.keys()) if (!present.has(id)) this.failures.delete(id);
    let nextDue: number | undefined;
    const dueAt = (ms: number) => {
      nextDue = nextDue === undefined ? ms : Math.min(nextDue, ms);
    };
    for (const schedule of schedules) {
      if (this.stopped) break;
      const times = CronTimes.parse(schedule.cronSchedule, schedule.timezone);
      if ("problem" in times) {
        // Validated when written; only a time zone that this runtime no longer knows gets here.
        await this.recordFailure(schedule, undefined, times.problem, now);
        continue;
      }
      const due = dueFireTime(schedule, times, now);
      if (due !== undefined) {
        const failure = this.failures.get(schedule.id);
        if (failure?.fireTime === due && failure.retryAt > now) {
          dueAt(failure.retryAt);
        } else {
          const outcome = await this.fire(schedule, due, now);
          // A schedule changed since it was read: look again at once.
          if (outcome === "stale") dueAt(now);
          else if (outcome === "failed") dueAt(now + this.retryMs);
        }
      }
      const next = times.nextAfter(Math.max(now, Date.parse(schedule.activeSince)));
      if (next !== undefined) dueAt(Date.parse(next));
    }
    return nextDue;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.changed = false;
      let nextDue: number | undefined;
      try {
        nextDue = await this.tick();
      } catch (err) {
        this.opts.log.warn({ err }, "scheduler could not read the schedules; trying again");
        nextDue = this.now() + this.retryMs;
      }
      if (this.stopped || this.changed) continue;
      const clockMs = nextDue === undefined ? Number.POSITIVE_INFINITY : nextDue - this.now();
      await this.sleep(Math.min(this.maxSleepMs, Math.max(0, Math.ceil(clockMs / this.speed))));
    }
  }

  private sleep(realMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, realMs);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wake = undefined;
        resolve();
      }
      this.wake = done;
    });
  }

  private async fire(
    schedule: ScheduleRecord,
    fireTime: string,
    now: number,
  ): Promise<ScheduleFireResult["kind"] | "failed"> {
    try {
      const result = await this.opts.runService.createScheduled(
        { caller: scheduleCaller(schedule), creator: schedule.createdBy, source: "SCHEDULED_AGENT" },
        {
          prompt: schedule.prompt,
          title: schedule.name,
          config: schedule.agentConfig as Record<string, unknown>,
          metadata: schedule.metadata,
        },
        {
          scheduleId: schedule.id,
          scheduleName: schedule.name,
          cronSchedule: schedule.cronSchedule,
          revision: schedule.revision,
          fireTime,
          at: new Date(now).toISOString(),
        },
      );
      this.failures.delete(schedule.id);
      if (result.kind === "fired") {
        this.opts.log.info(
          { schedule_id: schedule.id, fire_time: fireTime, run_id: result.run.id },
          "schedule fired",
        );
      } else if (result.kind === "skipped") {
        this.opts.log.info(
          { schedule_id: schedule.id, fire_time: fireTime, queued_run_id: result.queuedRunId },
          "schedule firing skipped: its previous run is still queued",
        );
      }
      return result.kind;
    } catch (err) {
      // Another process held the database past the busy timeout: not the schedule's fault, try again.
      if (this.opts.store.classifyError(err) === "conflict") return "stale";
      const reason =
        err instanceof RunError
          ? (err.detail ?? err.code)
          : `could not create the run: ${err instanceof Error ? err.message : String(err)}`;
      await this.recordFailure(schedule, fireTime, reason, now);
      return "failed";
    }
  }

  private async recordFailure(
    schedule: ScheduleRecord,
    fireTime: string | undefined,
    reason: string,
    now: number,
  ): Promise<void> {
    if (fireTime !== undefined) this.failures.set(schedule.id, { fireTime, retryAt: now + this.retryMs });
    if (schedule.lastSpawnError === reason) return;
    this.opts.log.warn({ schedule_id: schedule.id, fire_time: fireTime, reason }, "schedule could not fire");
    await this.opts.store
      .recordScheduleError(schedule.id, reason)
      .catch((err) => this.opts.log.warn({ err, schedule_id: schedule.id }, "could not record the failure"));
  }
}

/**
 * The latest fire time at or before `now` that may still fire: after the schedule became active and
 * after the last fire time that made a run. Older missed ones are never fired.
 */
export function dueFireTime(schedule: ScheduleRecord, times: CronTimes, now: number): string | undefined {
  const latest = times.latestAtOrBefore(now);
  if (latest === undefined || latest <= schedule.activeSince) return undefined;
  if (schedule.lastFireTime !== null && latest <= schedule.lastFireTime) return undefined;
  return latest;
}

/** The schedule's creator acting in its team, as the run service expects a caller. */
function scheduleCaller(schedule: ScheduleRecord): Caller {
  const who = schedule.createdBy;
  return {
    team: { id: schedule.teamId, name: schedule.teamId },
    principal: {
      id: who.uid,
      teamId: schedule.teamId,
      type: who.type,
      displayName: who.display_name,
      email: who.email ?? null,
    },
    key: {
      id: `schedule:${schedule.id}`,
      principalId: who.uid,
      name: `schedule ${schedule.name}`,
      role: "member",
      prefix: "",
      createdAt: schedule.createdAt,
      revokedAt: null,
    },
  };
}

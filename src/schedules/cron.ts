import { Cron } from "croner";

/**
 * A schedule's cron expression read in its time zone: validation, and the fire times around an instant.
 * Fire times are whole minutes; they are compared as RFC 3339 UTC strings in the store, so every one
 * leaves here through `toISOString()`.
 */
export class CronTimes {
  private readonly cron: Cron;

  private constructor(cron: Cron) {
    this.cron = cron;
  }

  /** The expression's fire times, or why it cannot be used (naming the field). */
  static parse(expression: string, timezone: string): CronTimes | { problem: string } {
    const zone = timezoneProblem(timezone);
    if (zone) return { problem: zone };
    const fields = expression.trim().split(/\s+/);
    if (fields.length !== 5) {
      return {
        problem: `cron_schedule: "${expression}" has ${fields.length} field${fields.length === 1 ? "" : "s"}; give the 5 fields minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5"`,
      };
    }
    try {
      const cron = new Cron(fields.join(" "), { mode: "5-part", timezone, paused: true });
      if (cron.nextRun(new Date()) === null) {
        return { problem: `cron_schedule: "${expression}" never fires` };
      }
      return new CronTimes(cron);
    } catch (err) {
      const reason = (err instanceof Error ? err.message : String(err)).replace(/^CronPattern: /, "");
      return { problem: `cron_schedule: "${expression}" is not a valid cron expression (${reason})` };
    }
  }

  /** The latest fire time at or before `ms`. */
  latestAtOrBefore(ms: number): string | undefined {
    // previousRuns excludes a fire time equal to its reference: look from just after `ms`.
    return this.cron.previousRuns(1, new Date(ms + 1))[0]?.toISOString();
  }

  /** The first fire time after `ms`. */
  nextAfter(ms: number): string | undefined {
    return this.cron.nextRun(new Date(ms))?.toISOString();
  }
}

/** Why `timezone` is not an IANA time zone name, or undefined when it is one. */
export function timezoneProblem(timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return undefined;
  } catch {
    return `timezone: "${timezone}" is not an IANA time zone name such as "UTC" or "Europe/Paris"`;
  }
}

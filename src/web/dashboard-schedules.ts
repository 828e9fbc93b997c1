import type { ScheduleRecord } from "../model/schedule.ts";
import { CronTimes } from "../schedules/cron.ts";
import { escapeHtml, timeTag } from "./html.ts";

/** Schedules listed on the dashboard (by name); a team with more is told how many are not shown. */
const SCHEDULES_SHOWN = 50;

/**
 * The team's schedules: name (linking to the runs it fired), cron and time zone, when it fires next (none
 * while paused), when it last ran, and why its last firing failed if it did.
 */
export function renderSchedules(schedules: readonly ScheduleRecord[], now: number): string {
  const heading = `<h2 id="schedules-h">Schedules</h2>`;
  if (schedules.length === 0) {
    return `<section aria-labelledby="schedules-h">${heading}<p>No schedules. Create one with the API (POST /api/v1/agent/schedules) or in Slack.</p></section>`;
  }
  const rows = schedules
    .slice(0, SCHEDULES_SHOWN)
    .map((s) => {
      const times = CronTimes.parse(s.cronSchedule, s.timezone);
      const next = s.enabled && times instanceof CronTimes ? times.nextAfter(now) : undefined;
      const status = s.enabled
        ? `<span class="state state-INPROGRESS">Enabled</span>`
        : `<span class="state">Paused</span>`;
      const error = s.lastSpawnError
        ? `<br><span class="error">Last firing failed: ${escapeHtml(s.lastSpawnError)}</span>`
        : "";
      return `<tr><td><a href="/?schedule_id=${encodeURIComponent(s.id)}">${escapeHtml(s.name)}</a>${error}</td><td><code>${escapeHtml(s.cronSchedule)}</code> ${escapeHtml(s.timezone)}</td><td>${status}</td><td>${next ? timeTag(next, now) : "—"}</td><td>${s.lastRan ? timeTag(s.lastRan, now) : "never"}</td></tr>`;
    })
    .join("");
  const more =
    schedules.length > SCHEDULES_SHOWN
      ? `<p class="muted">${schedules.length - SCHEDULES_SHOWN} more not shown; GET /api/v1/agent/schedules lists them all.</p>`
      : "";
  return `<section aria-labelledby="schedules-h">${heading}<table><thead><tr><th scope="col">Name</th><th scope="col">Cron</th><th scope="col">Status</th><th scope="col">Next run</th><th scope="col">Last ran</th></tr></thead><tbody>${rows}</tbody></table>${more}</section>`;
}

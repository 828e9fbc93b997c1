import type { ScheduleRecord } from "../../model/schedule.ts";
import { escapeMrkdwn } from "./status-card.ts";

/** What Slack users read about schedules: confirmations and the channel's list. */

/** Said to whoever uses a schedule verb while the bot fronts a remote Dispatch. */
export function remoteSchedulesText(command: string): string {
  return `Schedules cannot be made from Slack here: this bot fronts another Dispatch, whose scheduler could not report to this channel. Create the schedule on that Dispatch (\`dispatch schedules create\` or its API) instead of \`${command} schedule\`.`;
}

/**
 * A fire time people read in their own time zone: Slack's date token renders it for each viewer, the
 * fallback (clients that cannot) is UTC.
 */
export function humanTime(iso: string): string {
  const seconds = Math.floor(Date.parse(iso) / 1000);
  const fallback = `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  return `<!date^${seconds}^{date_short_pretty} at {time}|${fallback}>`;
}

function cronText(schedule: ScheduleRecord): string {
  return `\`${schedule.cronSchedule}\`${schedule.timezone === "UTC" ? " UTC" : ` ${escapeMrkdwn(schedule.timezone)}`}`;
}

function nextText(schedule: ScheduleRecord, nextRun: string | null): string {
  if (!schedule.enabled) return "paused";
  return nextRun ? `next ${humanTime(nextRun)}` : "never fires again";
}

export function scheduledText(command: string, schedule: ScheduleRecord, nextRun: string | null): string {
  return [
    `Scheduled *${escapeMrkdwn(schedule.name)}*: ${cronText(schedule)}, ${nextText(schedule, nextRun)}.`,
    "Each run posts its status card in this channel.",
    `\`${command} schedules\` lists this channel's schedules; \`${command} unschedule ${schedule.name}\` removes this one.`,
  ].join("\n");
}

/** One line per schedule: name, cron, next run (or paused), the start of its prompt. */
export function schedulesText(
  command: string,
  schedules: Array<{ schedule: ScheduleRecord; nextRun: string | null }>,
): string {
  if (schedules.length === 0) {
    return `This channel has no schedules. \`${command} schedule "<cron>" <prompt>\` makes one.`;
  }
  const lines = schedules.map(({ schedule, nextRun }) => {
    const prompt = schedule.prompt.replace(/\s+/g, " ").trim();
    const excerpt = prompt.length > 80 ? `${prompt.slice(0, 79)}…` : prompt;
    const error = schedule.lastSpawnError ? ` · :warning: ${escapeMrkdwn(schedule.lastSpawnError)}` : "";
    return `• *${escapeMrkdwn(schedule.name)}* — ${cronText(schedule)} · ${nextText(schedule, nextRun)}${error}${excerpt ? ` · _${escapeMrkdwn(excerpt)}_` : ""}`;
  });
  return ["Schedules reporting to this channel:", ...lines].join("\n");
}

/** The one answer for a name that is unknown or reports to another channel: it reveals neither. */
export function noScheduleHereText(command: string, name: string): string {
  return `There is no schedule named *${escapeMrkdwn(name)}* in this channel; \`${command} schedules\` lists them.`;
}

/**
 * Instants as people read them, wherever a person reads them (docs/surfaces.md): "3 min ago",
 * "in 2 h", with the exact time kept for a tooltip. The web pages' script words times the same way when it
 * refreshes them (dashboard-script.ts mirrors relativeTime).
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** "just now", "40 s ago", "3 min ago", "5 h ago", "yesterday", "3 days ago", "in 10 min", or the date. */
export function relativeTime(at: number | string, now: number): string {
  const then = typeof at === "number" ? at : Date.parse(at);
  if (Number.isNaN(then)) return "";
  const diff = now - then;
  const abs = Math.abs(diff);
  if (abs < 10_000) return "just now";
  const past = diff > 0;
  let span: string;
  if (abs < MINUTE) span = `${Math.floor(abs / 1000)} s`;
  else if (abs < HOUR) span = `${Math.floor(abs / MINUTE)} min`;
  else if (abs < DAY) span = `${Math.floor(abs / HOUR)} h`;
  else if (abs < 2 * DAY) return past ? "yesterday" : "tomorrow";
  else if (abs < 30 * DAY) span = `${Math.floor(abs / DAY)} days`;
  else return `on ${exactDate(then)}`;
  return past ? `${span} ago` : `in ${span}`;
}

/** "2026-03-01 10:04 UTC": the exact time a relative one stands for. */
export function exactTime(at: number | string): string {
  const ms = typeof at === "number" ? at : Date.parse(at);
  if (Number.isNaN(ms)) return "";
  return `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

function exactDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

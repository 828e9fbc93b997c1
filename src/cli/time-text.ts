import { formatDuration, parseIsoDuration } from "../model/run-wording.ts";
import { exactTime, relativeTime } from "../model/time-wording.ts";

/**
 * Times in the CLI's human output, in the words of time-wording.ts: a person reads "3 min ago", not
 * `2026-03-01T10:04:05.123Z`, and "1m 12s", not `PT72S`. `--json` keeps the API's ISO values.
 */

/** A table cell: "3 min ago", "in 2 h", "on 2026-03-01"; "-" when there is no time. */
export function agoCell(iso: string | null | undefined, now = Date.now()): string {
  return (iso && relativeTime(iso, now)) || "-";
}

/**
 * A detail line: "3 min ago (2026-03-01 10:04 UTC)", or the exact time alone when it is far away;
 * undefined when there is no time (the line is left out).
 */
export function whenLine(iso: string | null | undefined, now = Date.now()): string | undefined {
  if (!iso) return undefined;
  const relative = relativeTime(iso, now);
  const exact = exactTime(iso);
  if (!relative || !exact) return iso;
  return relative.startsWith("on ") ? exact : `${relative} (${exact})`;
}

/** An ISO-8601 duration (`PT72S`) as "1m 12s"; undefined when there is none. */
export function durationText(iso: string | null | undefined): string | undefined {
  return iso ? formatDuration(parseIsoDuration(iso)) : undefined;
}

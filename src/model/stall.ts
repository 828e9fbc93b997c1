import type { RunRecord } from "./run.ts";
import { formatDuration } from "./run-wording.ts";

/**
 * Stalls are never silent (docs/architecture.md): a run in progress that has had no transcript event for
 * DISPATCH_STALL_AFTER_S says "no progress for 5 min" on its Slack card, GitHub comment, the dashboard and
 * its run page. Pure functions of the run and the clock, so every surface words it alike.
 *
 * Only INPROGRESS runs stall. A QUEUED run waits for an executor slot, not for its agent: its surfaces say
 * "waiting 12m" already, and a Retry would only queue behind it again. A terminal run has nothing left to do.
 */

/** DISPATCH_STALL_AFTER_S's default, in milliseconds. */
export const DEFAULT_STALL_AFTER_MS = 300_000;

/** What stall detection reads of a run: its state and when it last made progress. */
export type ProgressFacts = Pick<RunRecord, "state" | "updatedAt" | "lastEventAt">;

/**
 * When the run last made progress: its latest transcript event or its latest change, whichever is later
 * (a run stored before events were timed has only the latter).
 */
function lastProgressAt(run: ProgressFacts): number {
  const changed = Date.parse(run.updatedAt);
  const event = run.lastEventAt ? Date.parse(run.lastEventAt) : Number.NaN;
  return Number.isNaN(event) ? changed : Math.max(changed, event);
}

/**
 * How long (ms) the run has been in progress without progress, once that is at least `stallAfterMs`;
 * undefined for a run that is not stalled (or not in progress).
 */
export function stalledFor(run: ProgressFacts, now: number, stallAfterMs: number): number | undefined {
  if (run.state !== "INPROGRESS") return undefined;
  const quiet = now - lastProgressAt(run);
  return quiet >= stallAfterMs ? quiet : undefined;
}

/** 300_000 → "5 min"; under a minute as formatDuration ("45s"), from an hour on too ("1h 5m"). */
function quietWords(ms: number): string {
  if (ms >= 60_000 && ms < 3_600_000) return `${Math.floor(ms / 60_000)} min`;
  return formatDuration(ms);
}

/** "no progress for 5 min". */
export function stallWords(ms: number): string {
  return `no progress for ${quietWords(ms)}`;
}

/**
 * The note a surface shows for the run now ("no progress for 5 min"), or undefined when it is not stalled:
 * what the dashboard and the run page call with the run record.
 */
export function stallNote(run: ProgressFacts, now: number, stallAfterMs: number): string | undefined {
  const ms = stalledFor(run, now, stallAfterMs);
  return ms === undefined ? undefined : stallWords(ms);
}

/** "no progress for 5 min" → "No progress for 5 min" (a note that starts a line). */
export function capitalized(words: string): string {
  return words.charAt(0).toUpperCase() + words.slice(1);
}

import type { AgentConfig, Creator } from "./run.ts";

/** Where a schedule's runs report: a Slack channel (or GitHub issue), as a run's thread binding would. */
export interface ReportTarget {
  platform: "slack" | "github";
  /** Slack team id, or GitHub "owner/repo". */
  workspace: string;
  /** Slack channel id, or GitHub issue/PR number. */
  channel: string;
  /** A thread to report in; null posts each run's status card as a new message of the channel. */
  thread: string | null;
  /** Slack user id or GitHub login mentioned in the runs' final replies. */
  requester: string;
}

/** A team's cron-driven agent (docs/api.md). Timestamps are RFC 3339 UTC strings. */
export interface ScheduleRecord {
  id: string;
  teamId: string;
  /** Unique within the team. */
  name: string;
  /** 5-field cron expression. */
  cronSchedule: string;
  /** IANA time zone the cron is read in (Dispatch extension; "UTC" by default). */
  timezone: string;
  enabled: boolean;
  prompt: string;
  /** The agent_config each run is created with, as given. */
  agentConfig: AgentConfig;
  /** Copied onto each run. */
  metadata: Record<string, string>;
  /**
   * Whom the runs are for: the creator, until someone else replaces the schedule or resumes it, who then
   * owns it (so nobody's runs carry a prompt they did not write).
   */
  createdBy: Creator;
  updatedBy: Creator;
  createdAt: string;
  updatedAt: string;
  /** Bumped by every change of the fields above; a firing prepared from an older revision is refused. */
  revision: number;
  /** Fire times at or before this never fire (creation, resume, a new cron or time zone). */
  activeSince: string;
  /** The latest fire time that made a run. */
  lastFireTime: string | null;
  /** When the latest run was created. */
  lastRan: string | null;
  /**
   * Why the latest firing made no run (it failed, or was skipped while the previous run was still
   * queued); cleared by the next one that makes a run.
   */
  lastSpawnError: string | null;
  reportTo: ReportTarget | null;
}

/**
 * How many schedules a team, and one person in it, may own (DISPATCH_SCHEDULES_PER_TEAM and
 * DISPATCH_SCHEDULES_PER_CREATOR): each enabled schedule makes runs on its own, so an unbounded number
 * would let one key flood the queue.
 */
export interface ScheduleLimits {
  perTeam: number;
  perCreator: number;
}

/**
 * The last_spawn_error of a firing skipped because the schedule's previous run has not started: another
 * run would only queue behind it.
 */
export function skippedWhileQueuedText(fireTime: string, queuedRunId: string): string {
  return `skipped the firing of ${fireTime}: the previous run ${queuedRunId} is still queued (not started yet), so another run would only pile up behind it; the next fire time after it starts makes a run again`;
}

/** What a user sets on a schedule (create, and PUT, which replaces these). */
export type ScheduleFields = Pick<
  ScheduleRecord,
  "name" | "cronSchedule" | "timezone" | "enabled" | "prompt" | "agentConfig" | "metadata"
>;

/** The schedule a run was fired by, as it was at that firing. */
export interface RunSchedule {
  scheduleId: string;
  scheduleName: string;
  cronSchedule: string;
  /** The cron slot this run is for (RFC 3339 UTC). */
  fireTime: string;
}

/**
 * Whom a schedule's runs mention in `reportTo`'s thread once `principalId` owns the schedule: that person
 * on the same surface (a principal id is `<platform>:<workspace>:<user>` or `<platform>:<user>`), else
 * nobody — never the previous owner, who no longer asked for the runs.
 */
export function reportRequesterFor(
  reportTo: Pick<ReportTarget, "platform" | "workspace">,
  principalId: string,
): string {
  const parts = principalId.split(":");
  if (parts[0] !== reportTo.platform) return "";
  if (parts.length === 3) return parts[1] === reportTo.workspace ? parts[2]! : "";
  return parts.length === 2 ? parts[1]! : "";
}

/** The stored requester of a schedule's report target once `ownerUid` owns it (null: it reports nowhere). */
export function reportRequesterAfter(
  old: Pick<ScheduleRecord, "reportTo" | "createdBy">,
  ownerUid: string,
): string | null {
  if (!old.reportTo) return null;
  return ownerUid === old.createdBy.uid ? old.reportTo.requester : reportRequesterFor(old.reportTo, ownerUid);
}

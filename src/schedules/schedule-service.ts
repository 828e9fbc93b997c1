import { v7 as uuidv7 } from "uuid";
import { shownSecretProblem, withStoredSecrets } from "../model/config-secrets.ts";
import { RunError } from "../model/errors.ts";
import type { AgentConfig, Creator } from "../model/run.ts";
import type { ReportTarget, ScheduleFields, ScheduleLimits, ScheduleRecord } from "../model/schedule.ts";
import { idempotencyClaim } from "../runs/idempotency-claim.ts";
import type { ChannelKey, IdempotencyClaim, Store } from "../store/store.ts";
import { CronTimes } from "./cron.ts";

/** Who acts on a team's schedules (the API caller, or a Slack user through the integration). */
export interface ScheduleActor {
  teamId: string;
  /**
   * Recorded as created_by / updated_by; a new schedule's runs are created for this person, and so are
   * those of a schedule they replace or resume.
   */
  who: Creator;
}

/** A schedule as a user writes it: create takes it, PUT replaces the schedule with it. */
export interface ScheduleSpec {
  name: string;
  cronSchedule: string;
  /** IANA time zone; UTC when absent. */
  timezone?: string | null;
  /** True when absent. */
  enabled?: boolean | null;
  /** Required unless `agentConfig.skill_spec` is given. */
  prompt?: string | null;
  agentConfig?: AgentConfig | null;
  metadata?: Record<string, string> | null;
}

export const SCHEDULE_NAME_MAX = 200;
/** As for runs (docs/api.md): a key is remembered 24 hours. */

/**
 * Schedules for every surface (HTTP API, Slack, CLI through the API): validation, create, read, replace,
 * pause and resume, delete, and the history the API shows. Firing is the scheduler's (scheduler.ts);
 * every write here wakes it through the store's `schedule_changed` signal.
 */
export class ScheduleService {
  private readonly store: Store;
  private readonly limits: ScheduleLimits;
  private readonly now: () => number;

  constructor(store: Store, opts: { limits: ScheduleLimits; now?: () => number }) {
    this.store = store;
    this.limits = opts.limits;
    this.now = opts.now ?? Date.now;
  }

  /**
   * `reportTo`: where the runs report (a Slack channel the schedule was created in). `idempotency`: a
   * retry with the same key and an equal request gets the schedule the first request created (as it is
   * now) instead of a 409; another request under the same key is refused.
   */
  async create(
    actor: ScheduleActor,
    spec: ScheduleSpec,
    opts: { reportTo?: ReportTarget; idempotency?: ScheduleIdempotency } = {},
  ): Promise<ScheduleRecord> {
    const fields = validate(spec);
    const at = new Date(this.now()).toISOString();
    const result = await this.store.createSchedule(
      {
        id: uuidv7(),
        teamId: actor.teamId,
        ...fields,
        createdBy: actor.who,
        updatedBy: actor.who,
        createdAt: at,
        updatedAt: at,
        revision: 1,
        activeSince: at,
        lastFireTime: null,
        lastRan: null,
        lastSpawnError: null,
        reportTo: opts.reportTo ?? null,
      },
      this.limits,
      opts.idempotency && claimOf(opts.idempotency),
    );
    if (result === "name_taken") throw nameTaken(fields.name);
    if (result === "team_limit") throw teamLimit(this.limits.perTeam);
    if (result === "creator_limit") throw creatorLimit(this.limits.perCreator);
    if (result.kind === "key_reused") {
      throw new RunError(
        "idempotency_key_reused",
        "this Idempotency-Key was already used with a different request; use a new key for a new request",
      );
    }
    if (result.kind === "replayed") {
      return this.get(actor.teamId, (result.response as { schedule_id: string }).schedule_id);
    }
    this.changed();
    return result.value;
  }

  async get(teamId: string, id: string): Promise<ScheduleRecord> {
    const schedule = await this.store.getSchedule(teamId, id);
    if (!schedule) throw notFound(id);
    return schedule;
  }

  /** Sorted by name; with `reportTo`, only the schedules reporting to that channel. */
  list(teamId: string, opts: { reportTo?: ChannelKey } = {}): Promise<ScheduleRecord[]> {
    return this.store.listSchedules(teamId, opts);
  }

  /** The team's schedule of that exact name (Slack's `/agent unschedule <name>`). */
  async findByName(teamId: string, name: string): Promise<ScheduleRecord | undefined> {
    return (await this.store.listSchedules(teamId)).find((s) => s.name === name);
  }

  /**
   * PUT: every user field is replaced; what is absent takes its default (no time zone is UTC). The runs
   * are for whoever replaced it from then on: someone else's prompt never runs as the schedule's owner. A
   * secret sent back as shown (REDACTED) keeps the value the schedule has.
   */
  async replace(actor: ScheduleActor, id: string, spec: ScheduleSpec): Promise<ScheduleRecord> {
    const current = await this.get(actor.teamId, id);
    const agentConfig = spec.agentConfig && withStoredSecrets(spec.agentConfig, current.agentConfig);
    return this.write(actor, id, validate({ ...spec, agentConfig }), { takeOver: true });
  }

  /**
   * Pause (false) or resume (true); resuming does not catch up on the slots missed while paused. Whoever
   * resumes a paused schedule owns it from then on (its owner may have paused it on purpose); pausing
   * makes no runs, so it leaves the owner as it is.
   */
  async setEnabled(actor: ScheduleActor, id: string, enabled: boolean): Promise<ScheduleRecord> {
    const current = await this.get(actor.teamId, id);
    const { name, cronSchedule, timezone, prompt, agentConfig, metadata } = current;
    return this.write(
      actor,
      id,
      { name, cronSchedule, timezone, enabled, prompt, agentConfig, metadata },
      { takeOver: enabled && !current.enabled },
    );
  }

  async delete(teamId: string, id: string): Promise<void> {
    if (!(await this.store.deleteSchedule(teamId, id))) throw notFound(id);
    this.changed();
  }

  /** `history` of the API: when it last made a run, and its next fire time (null while paused). */
  history(schedule: ScheduleRecord): { last_ran: string | null; next_run: string | null } {
    const times = CronTimes.parse(schedule.cronSchedule, schedule.timezone);
    const from = Math.max(this.now(), Date.parse(schedule.activeSince));
    const next = schedule.enabled && !("problem" in times) ? times.nextAfter(from) : undefined;
    return { last_ran: schedule.lastRan, next_run: next ?? null };
  }

  /** `takeOver`: the actor becomes the owner, whom the runs are for, if someone else was. */
  private async write(
    actor: ScheduleActor,
    id: string,
    fields: ScheduleFields,
    opts: { takeOver: boolean },
  ): Promise<ScheduleRecord> {
    const updated = await this.store.updateSchedule(actor.teamId, id, {
      ...fields,
      updatedBy: actor.who,
      updatedAt: new Date(this.now()).toISOString(),
      ...(opts.takeOver ? { takeOver: { perCreator: this.limits.perCreator } } : {}),
    });
    if (updated === undefined) throw notFound(id);
    if (updated === "name_taken") throw nameTaken(fields.name);
    if (updated === "creator_limit") throw takeOverLimit(this.limits.perCreator);
    this.changed();
    return updated;
  }

  private changed(): void {
    this.store.signals.emit("schedule_changed");
  }
}

/** An Idempotency-Key sent with a create, and the request it came with. */
export interface ScheduleIdempotency {
  principalId: string;
  key: string;
  /** The request as parsed JSON; equal bodies under one key are one request. */
  rawBody: unknown;
}

function claimOf(idem: ScheduleIdempotency): IdempotencyClaim {
  return idempotencyClaim({
    principalId: idem.principalId,
    key: idem.key,
    endpoint: "schedules.create",
    body: idem.rawBody,
    respond: (created) => ({ schedule_id: (created as ScheduleRecord).id }),
  });
}

/** The stored fields of a spec, or a RunError naming the field that is wrong. */
export function validate(spec: ScheduleSpec): ScheduleFields {
  const name = spec.name.trim();
  if (name === "" || [...name].length > SCHEDULE_NAME_MAX) {
    throw new RunError("invalid_request", `name: give 1 to ${SCHEDULE_NAME_MAX} characters`);
  }
  const timezone = spec.timezone ?? "UTC";
  const times = CronTimes.parse(spec.cronSchedule, timezone);
  if ("problem" in times) throw new RunError("invalid_request", times.problem);
  const agentConfig = Object.fromEntries(
    Object.entries(spec.agentConfig ?? {}).filter(([, v]) => v !== null && v !== undefined),
  ) as AgentConfig;
  const shown = shownSecretProblem(agentConfig, "agent_config");
  if (shown) throw new RunError("invalid_request", shown);
  const prompt = spec.prompt ?? "";
  if (prompt.trim() === "" && !agentConfig.skill_spec) {
    throw new RunError("invalid_request", "prompt: required unless agent_config.skill_spec names a skill");
  }
  return {
    name,
    cronSchedule: spec.cronSchedule.trim().split(/\s+/).join(" "),
    timezone,
    enabled: spec.enabled ?? true,
    prompt,
    agentConfig,
    metadata: spec.metadata ?? {},
  };
}

function notFound(id: string): RunError {
  return new RunError("resource_not_found", `no schedule ${id} in this team`);
}

function schedules(count: number): string {
  return count === 1 ? "1 schedule" : `${count} schedules`;
}

function teamLimit(limit: number): RunError {
  return new RunError(
    "not_authorized",
    `this team has ${schedules(limit)}, the most it may have (DISPATCH_SCHEDULES_PER_TEAM); delete one it no longer needs, or ask whoever runs Dispatch to raise DISPATCH_SCHEDULES_PER_TEAM`,
  );
}

function creatorLimit(limit: number): RunError {
  return new RunError(
    "not_authorized",
    `you have ${schedules(limit)} in this team, the most one person may have (DISPATCH_SCHEDULES_PER_CREATOR); delete one of yours you no longer need, or ask whoever runs Dispatch to raise DISPATCH_SCHEDULES_PER_CREATOR`,
  );
}

function takeOverLimit(limit: number): RunError {
  return new RunError(
    "not_authorized",
    `this change would make the schedule's runs yours, and you have ${schedules(limit)} in this team, the most one person may have (DISPATCH_SCHEDULES_PER_CREATOR); delete one of yours first, or ask the schedule's owner to make the change`,
  );
}

function nameTaken(name: string): RunError {
  return new RunError(
    "conflict",
    `name: this team has a schedule named "${name}" already; choose another name or update that schedule`,
  );
}

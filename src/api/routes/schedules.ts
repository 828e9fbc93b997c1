import type { FastifyInstance, FastifyRequest } from "fastify";
import type { z } from "zod";
import type { RunAccess } from "../../access/run-access.ts";
import { admits } from "../../model/audience.ts";
import { withoutSecrets } from "../../model/config-secrets.ts";
import { RunError } from "../../model/errors.ts";
import type { ScheduleRecord } from "../../model/schedule.ts";
import { creatorOf } from "../../runs/run-audit.ts";
import type { ScheduleActor, ScheduleService, ScheduleSpec } from "../../schedules/schedule-service.ts";
import { json, operation, route } from "../operation.ts";
import { NoQuerySchema } from "../schemas/common.ts";
import {
  CreateScheduleRequestSchema,
  DeleteScheduleResponseSchema,
  ListSchedulesResponseSchema,
  ScheduledAgentItemSchema,
  UpdateScheduleRequestSchema,
} from "../schemas/schedules.ts";
import { idempotencyKey } from "./runs.ts";

export interface ScheduleRoutesOptions {
  schedules: Pick<
    ScheduleService,
    "create" | "get" | "list" | "replace" | "setEnabled" | "delete" | "history"
  >;
  /**
   * The access rule: a schedule reporting to a thread (a Slack channel) has that thread's audience, as its
   * runs do; one outside the caller's audience is an unknown schedule.
   */
  access: Pick<RunAccess, "filter">;
}

export const scheduleOperations = {
  createSchedule: operation({
    id: "createSchedule",
    method: "POST",
    path: "/agent/schedules",
    tag: "schedules",
    summary: "Create a scheduled agent: a run on every cron fire time (exactly once each)",
    description:
      "Its runs are for the caller, its owner (`created_by`). 403 `not_authorized` when the team has DISPATCH_SCHEDULES_PER_TEAM schedules, or the caller owns DISPATCH_SCHEDULES_PER_CREATOR. A fire time while the previous run is still QUEUED is skipped, shown in `last_spawn_error`.",
    access: "key",
    idempotent: true,
    body: { schema: CreateScheduleRequestSchema, required: true },
    responses: { 201: { description: "The new schedule.", content: json(ScheduledAgentItemSchema) } },
    errors: ["invalid_request", "conflict", "idempotency_key_reused", "unsupported_media_type"],
  }),
  listSchedules: operation({
    id: "listSchedules",
    method: "GET",
    path: "/agent/schedules",
    tag: "schedules",
    summary: "The team's schedules, sorted by name",
    access: "key",
    query: NoQuerySchema,
    responses: { 200: { description: "The schedules.", content: json(ListSchedulesResponseSchema) } },
    errors: ["invalid_request"],
  }),
  getSchedule: operation({
    id: "getSchedule",
    method: "GET",
    path: "/agent/schedules/{scheduleId}",
    tag: "schedules",
    summary: "A schedule with its history (last run, next fire time)",
    access: "key",
    responses: { 200: { description: "The schedule.", content: json(ScheduledAgentItemSchema) } },
    errors: ["resource_not_found"],
  }),
  updateSchedule: operation({
    id: "updateSchedule",
    method: "PUT",
    path: "/agent/schedules/{scheduleId}",
    tag: "schedules",
    summary: "Replace a schedule",
    description:
      "The caller becomes the schedule's owner (`created_by`): its runs are theirs from now on. 403 `not_authorized` when that would make them own more than DISPATCH_SCHEDULES_PER_CREATOR schedules.",
    access: "key",
    body: { schema: UpdateScheduleRequestSchema, required: true },
    responses: { 200: { description: "The schedule as replaced.", content: json(ScheduledAgentItemSchema) } },
    errors: ["invalid_request", "resource_not_found", "conflict", "unsupported_media_type"],
  }),
  deleteSchedule: operation({
    id: "deleteSchedule",
    method: "DELETE",
    path: "/agent/schedules/{scheduleId}",
    tag: "schedules",
    summary: "Delete a schedule (its runs stay)",
    access: "key",
    responses: { 200: { description: "Deleted.", content: json(DeleteScheduleResponseSchema) } },
    errors: ["resource_not_found"],
  }),
  pauseSchedule: operation({
    id: "pauseSchedule",
    method: "POST",
    path: "/agent/schedules/{scheduleId}/pause",
    tag: "schedules",
    summary: "Pause a schedule: nothing fires until it is resumed",
    access: "key",
    responses: { 200: { description: "The paused schedule.", content: json(ScheduledAgentItemSchema) } },
    errors: ["resource_not_found"],
  }),
  resumeSchedule: operation({
    id: "resumeSchedule",
    method: "POST",
    path: "/agent/schedules/{scheduleId}/resume",
    tag: "schedules",
    summary: "Resume a schedule from its next fire time (what was missed while paused does not fire)",
    description:
      "Resuming a paused schedule makes the caller its owner (`created_by`), as a replace does; resuming one that is not paused changes nothing.",
    access: "key",
    responses: { 200: { description: "The resumed schedule.", content: json(ScheduledAgentItemSchema) } },
    errors: ["resource_not_found"],
  }),
};

/** /agent/schedules: the team's scheduled agents (docs/api.md). */
export async function scheduleRoutes(app: FastifyInstance, opts: ScheduleRoutesOptions): Promise<void> {
  const { schedules } = opts;
  type ById = { Params: { scheduleId: string } };
  const actor = (req: FastifyRequest): ScheduleActor => ({
    teamId: req.caller!.team.id,
    who: creatorOf(req.caller!),
  });
  const wire = (schedule: ScheduleRecord) => toWire(schedule, schedules.history(schedule));
  /** Refuses, as an unknown id, a schedule whose thread the caller is not in the audience of. */
  const mustSee = async (req: FastifyRequest<ById>): Promise<ScheduleRecord> => {
    const schedule = await schedules.get(req.caller!.team.id, req.params.scheduleId);
    if (!admits(await opts.access.filter(req.caller!), schedule.reportTo)) {
      throw new RunError("resource_not_found", `no schedule ${req.params.scheduleId} in this team`);
    }
    return schedule;
  };

  const ops = scheduleOperations;

  route(app, ops.createSchedule, async (req, reply, { body }) => {
    const key = idempotencyKey(req);
    const created = await schedules.create(actor(req), specOf(body), {
      ...(key ? { idempotency: { principalId: req.caller!.principal.id, key, rawBody: req.body } } : {}),
    });
    return reply.code(201).send(wire(created));
  });

  route(app, ops.listSchedules, async (req) => {
    const audience = await opts.access.filter(req.caller!);
    const visible = (await schedules.list(req.caller!.team.id)).filter((s) => admits(audience, s.reportTo));
    return { schedules: visible.map(wire) };
  });

  route(app, ops.getSchedule, async (req) => wire(await mustSee(req)));

  route(app, ops.updateSchedule, async (req, _reply, { body }) => {
    await mustSee(req);
    return wire(await schedules.replace(actor(req), req.params.scheduleId, specOf(body)));
  });

  route(app, ops.deleteSchedule, async (req) => {
    await mustSee(req);
    await schedules.delete(req.caller!.team.id, req.params.scheduleId);
    return { success: true };
  });

  // The SDKs send an empty JSON object (or nothing): there is nothing to read in it.
  route(app, ops.pauseSchedule, async (req) => {
    await mustSee(req);
    return wire(await schedules.setEnabled(actor(req), req.params.scheduleId, false));
  });

  route(app, ops.resumeSchedule, async (req) => {
    await mustSee(req);
    return wire(await schedules.setEnabled(actor(req), req.params.scheduleId, true));
  });
}

function specOf(
  body: z.output<typeof CreateScheduleRequestSchema> | z.output<typeof UpdateScheduleRequestSchema>,
): ScheduleSpec {
  return {
    name: body.name,
    cronSchedule: body.cron_schedule,
    timezone: body.timezone ?? null,
    enabled: body.enabled ?? null,
    prompt: body.prompt ?? null,
    agentConfig: (body.agent_config ?? null) as ScheduleSpec["agentConfig"],
    metadata: body.metadata ?? null,
  };
}

/** ScheduledAgentItem of the Oz API (plus `timezone`). */
function toWire(schedule: ScheduleRecord, history: { last_ran: string | null; next_run: string | null }) {
  return {
    id: schedule.id,
    name: schedule.name,
    cron_schedule: schedule.cronSchedule,
    timezone: schedule.timezone,
    enabled: schedule.enabled,
    prompt: schedule.prompt,
    created_at: schedule.createdAt,
    updated_at: schedule.updatedAt,
    last_spawn_error: schedule.lastSpawnError,
    agent_config: withoutSecrets(schedule.agentConfig),
    metadata: schedule.metadata,
    created_by: schedule.createdBy,
    updated_by: schedule.updatedBy,
    history,
    scope: { type: "Team" as const, uid: schedule.teamId },
  };
}

import type { FastifyInstance, FastifyRequest } from "fastify";
import { withoutSecrets } from "../../model/config-secrets.ts";
import type { ScheduleRecord } from "../../model/schedule.ts";
import { creatorOf } from "../../runs/run-service.ts";
import type { ScheduleActor, ScheduleService, ScheduleSpec } from "../../schedules/schedule-service.ts";
import { parseBody, parseQuery } from "../parse.ts";
import { CreateScheduleRequestSchema, NoQuerySchema, UpdateScheduleRequestSchema } from "../schemas.ts";
import { idempotencyKey } from "./runs.ts";

export interface ScheduleRoutesOptions {
  schedules: Pick<
    ScheduleService,
    "create" | "get" | "list" | "replace" | "setEnabled" | "delete" | "history"
  >;
}

/** /agent/schedules: the team's scheduled agents (OZ-SURFACE.md "Schedules"). */
export async function scheduleRoutes(app: FastifyInstance, opts: ScheduleRoutesOptions): Promise<void> {
  const { schedules } = opts;
  const auth = { config: { auth: true } };
  type ById = { Params: { scheduleId: string } };
  const actor = (req: FastifyRequest): ScheduleActor => ({
    teamId: req.caller!.team.id,
    who: creatorOf(req.caller!),
  });
  const wire = (schedule: ScheduleRecord) => toWire(schedule, schedules.history(schedule));

  app.post("/api/v1/agent/schedules", auth, async (req, reply) => {
    const body = parseBody(CreateScheduleRequestSchema, req.body);
    const key = idempotencyKey(req);
    const created = await schedules.create(actor(req), specOf(body), {
      ...(key ? { idempotency: { principalId: req.caller!.principal.id, key, rawBody: req.body } } : {}),
    });
    return reply.code(201).send(wire(created));
  });

  app.get("/api/v1/agent/schedules", auth, async (req) => {
    parseQuery(NoQuerySchema, req.query);
    return { schedules: (await schedules.list(req.caller!.team.id)).map(wire) };
  });

  app.get<ById>("/api/v1/agent/schedules/:scheduleId", auth, async (req) => {
    return wire(await schedules.get(req.caller!.team.id, req.params.scheduleId));
  });

  app.put<ById>("/api/v1/agent/schedules/:scheduleId", auth, async (req) => {
    const body = parseBody(UpdateScheduleRequestSchema, req.body);
    return wire(await schedules.replace(actor(req), req.params.scheduleId, specOf(body)));
  });

  app.delete<ById>("/api/v1/agent/schedules/:scheduleId", auth, async (req) => {
    await schedules.delete(req.caller!.team.id, req.params.scheduleId);
    return { success: true };
  });

  // The SDKs send an empty JSON object (or nothing): there is nothing to read in it.
  app.post<ById>("/api/v1/agent/schedules/:scheduleId/pause", auth, async (req) => {
    return wire(await schedules.setEnabled(actor(req), req.params.scheduleId, false));
  });

  app.post<ById>("/api/v1/agent/schedules/:scheduleId/resume", auth, async (req) => {
    return wire(await schedules.setEnabled(actor(req), req.params.scheduleId, true));
  });
}

function specOf(body: {
  name: string;
  cron_schedule: string;
  timezone?: string | null | undefined;
  enabled?: boolean | null | undefined;
  prompt?: string | null | undefined;
  agent_config?: Record<string, unknown> | null | undefined;
  metadata?: Record<string, string> | null | undefined;
}): ScheduleSpec {
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

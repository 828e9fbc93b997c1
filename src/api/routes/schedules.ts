import type { FastifyInstance, FastifyRequest } from "fastify";
import type { RunAccess } from "../../access/run-access.ts";
import { admits } from "../../model/audience.ts";
import { withoutSecrets } from "../../model/config-secrets.ts";
import { RunError } from "../../model/errors.ts";
import type { ScheduleRecord } from "../../model/schedule.ts";
import { creatorOf } from "../../runs/run-service.ts";
import type { ScheduleActor, ScheduleService, ScheduleSpec } from "../../schedules/schedule-service.ts";
import { parseBody, parseQuery } from "../parse.ts";
import { NoQuerySchema } from "../schemas/common.ts";
import { CreateScheduleRequestSchema, UpdateScheduleRequestSchema } from "../schemas/schedules.ts";
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
  /** Refuses, as an unknown id, a schedule whose thread the caller is not in the audience of. */
  const mustSee = async (req: FastifyRequest<ById>): Promise<ScheduleRecord> => {
    const schedule = await schedules.get(req.caller!.team.id, req.params.scheduleId);
    if (!admits(await opts.access.filter(req.caller!), schedule.reportTo)) {
      throw new RunError("resource_not_found", `no schedule ${req.params.scheduleId} in this team`);
    }
    return schedule;
  };

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
    const audience = await opts.access.filter(req.caller!);
    const visible = (await schedules.list(req.caller!.team.id)).filter((s) => admits(audience, s.reportTo));
    return { schedules: visible.map(wire) };
  });

  app.get<ById>("/api/v1/agent/schedules/:scheduleId", auth, async (req) => {
    return wire(await mustSee(req));
  });

  app.put<ById>("/api/v1/agent/schedules/:scheduleId", auth, async (req) => {
    const body = parseBody(UpdateScheduleRequestSchema, req.body);
    await mustSee(req);
    return wire(await schedules.replace(actor(req), req.params.scheduleId, specOf(body)));
  });

  app.delete<ById>("/api/v1/agent/schedules/:scheduleId", auth, async (req) => {
    await mustSee(req);
    await schedules.delete(req.caller!.team.id, req.params.scheduleId);
    return { success: true };
  });

  // The SDKs send an empty JSON object (or nothing): there is nothing to read in it.
  app.post<ById>("/api/v1/agent/schedules/:scheduleId/pause", auth, async (req) => {
    await mustSee(req);
    return wire(await schedules.setEnabled(actor(req), req.params.scheduleId, false));
  });

  app.post<ById>("/api/v1/agent/schedules/:scheduleId/resume", auth, async (req) => {
    await mustSee(req);
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

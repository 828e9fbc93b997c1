import { z } from "zod";
import { AgentConfigSchema } from "./agent-config.ts";
import { boundedText, LIMITS, MetadataSchema, Timestamp } from "./common.ts";

/** Scheduled agents: a run on every cron fire time. */

const scheduleFields = {
  name: z.string().trim().min(1, "name must not be empty").max(200),
  cron_schedule: z
    .string()
    .min(1)
    .max(200)
    .meta({ description: '5-field cron (minute hour day-of-month month day-of-week), e.g. "0 9 * * 1-5".' }),
  timezone: z.string().min(1).max(100).nullish().meta({
    description:
      'Dispatch extension: the IANA time zone the cron is read in, e.g. "Europe/Paris"; UTC when absent.',
  }),
  prompt: boundedText(LIMITS.promptChars, "prompt").nullish(),
  agent_config: AgentConfigSchema.nullish(),
  metadata: MetadataSchema.nullish().meta({ description: "Copied onto every run the schedule fires." }),
  mode: z.enum(["normal"]).nullish(),
  agent_uid: z.null({ error: "Dispatch runs a schedule as its creator; omit agent_uid" }).optional(),
};

const promptOrSkill = (b: { prompt?: string | null; agent_config?: { skill_spec?: string | null } | null }) =>
  (b.prompt != null && b.prompt.trim() !== "") || b.agent_config?.skill_spec != null;

export const CreateScheduleRequestSchema = z
  .object({
    ...scheduleFields,
    enabled: z.boolean().nullish(),
    team: z
      .literal(true, { error: "Dispatch schedules belong to the team; omit team or send true" })
      .nullish(),
  })
  .refine(promptOrSkill, {
    message: "prompt is required unless agent_config.skill_spec is given",
    path: ["prompt"],
  })
  .meta({ id: "CreateScheduleRequest" });

export const UpdateScheduleRequestSchema = z
  .object({ ...scheduleFields, enabled: z.boolean() })
  .refine(promptOrSkill, {
    message: "prompt is required unless agent_config.skill_spec is given",
    path: ["prompt"],
  })
  .meta({
    id: "UpdateScheduleRequest",
    description: "Replaces the schedule: a field left out takes its default (timezone UTC, no agent_config).",
  });

const UserProfileSchema = z.object({
  type: z.enum(["user", "service_account"]),
  uid: z.string(),
  display_name: z.string(),
  email: z.string().optional(),
});

export const ScheduledAgentItemSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    cron_schedule: z.string(),
    timezone: z.string().meta({ description: "Dispatch extension: the IANA time zone of cron_schedule." }),
    enabled: z.boolean(),
    prompt: z.string(),
    created_at: Timestamp,
    updated_at: Timestamp,
    last_spawn_error: z.string().nullable(),
    agent_config: AgentConfigSchema,
    metadata: z.record(z.string(), z.string()),
    created_by: UserProfileSchema,
    updated_by: UserProfileSchema,
    history: z.object({ last_ran: Timestamp.nullable(), next_run: Timestamp.nullable() }),
    scope: z.object({ type: z.literal("Team"), uid: z.string() }),
  })
  .meta({ id: "ScheduledAgentItem" });

export const ListSchedulesResponseSchema = z
  .object({ schedules: z.array(ScheduledAgentItemSchema) })
  .meta({ id: "ListSchedulesResponse" });

export const DeleteScheduleResponseSchema = z
  .object({ success: z.boolean() })
  .meta({ id: "DeleteScheduleResponse" });

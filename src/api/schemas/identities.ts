import { z } from "zod";
import { boundedText, LIMITS, SkillSpecSchema, Timestamp } from "./common.ts";

/** The team's service accounts (agent identities). */

const identityText = (max: number, what: string) => boundedText(max, what).nullish();

/** Oz accepts named managed secrets; Dispatch has none, so only an empty list is accepted. */
const SecretsSchema = z
  .array(z.object({ name: z.string().min(1).max(200) }))
  .max(0, "secrets: Dispatch has no managed secrets; omit secrets or send []");

export const CreateAgentIdentityRequestSchema = z
  .object({
    name: z.string().trim().min(1, "name must not be empty").max(200),
    description: identityText(2000, "description"),
    prompt: identityText(LIMITS.promptChars, "prompt"),
    base_model: z.string().max(200).nullish(),
    skills: z.array(SkillSpecSchema).max(50).nullish(),
    secrets: SecretsSchema.nullish(),
  })
  .meta({ id: "CreateAgentIdentityRequest" });

export const UpdateAgentIdentityRequestSchema = z
  .object({
    name: z.string().trim().min(1, "name must not be empty").max(200).optional(),
    description: identityText(2000, "description"),
    prompt: identityText(LIMITS.promptChars, "prompt"),
    base_model: z.string().max(200).nullish(),
    skills: z.array(SkillSpecSchema).max(50).nullish(),
    secrets: SecretsSchema.nullish(),
  })
  .meta({
    id: "UpdateAgentIdentityRequest",
    description: "Absent or null leaves a field unchanged; an empty string or list clears it.",
  });

export const AgentIdentitySchema = z
  .object({
    uid: z.string(),
    name: z.string(),
    available: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
    default_runner_uid: z.string().meta({ description: "Always empty: Dispatch has no runners." }),
    memory: z
      .object({
        attached_stores: z.array(z.object({ uid: z.string() })),
        auto_memory: z.object({ enabled: z.boolean() }),
      })
      .meta({ description: "Always empty and disabled: Dispatch has no memory stores." }),
    description: z.string().optional(),
    prompt: z.string().optional(),
    base_model: z.string().optional(),
    skills: z.array(z.string()),
    secrets: z.array(z.object({ name: z.string() })),
  })
  .meta({ id: "AgentIdentity" });

export const ListAgentIdentitiesResponseSchema = z
  .object({ agents: z.array(AgentIdentitySchema) })
  .meta({ id: "ListAgentIdentitiesResponse" });

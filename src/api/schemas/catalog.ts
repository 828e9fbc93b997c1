import { z } from "zod";
import { WIRE_HARNESS_TYPES } from "../../model/harness-wire.ts";
import { booleanParam, Timestamp } from "./common.ts";
import { RunStateSchema } from "./runs.ts";

/** What runs can use: models, environments and agents (skills). */

export const ModelSchema = z
  .object({
    id: z.string(),
    display_name: z.string(),
    provider: z.enum(["OPENAI", "ANTHROPIC", "GOOGLE", "UNKNOWN"]),
    vision_supported: z.boolean(),
    description: z.string().optional(),
    harnesses: z.array(z.enum(WIRE_HARNESS_TYPES)).optional().meta({
      description:
        'Dispatch extension (always sent by Dispatch; absent from other Oz servers): the harnesses (config.harness.type) that can run this model id: "oz" (Dispatch\'s builtin), "claude", "codex", "gemini".',
    }),
  })
  .meta({ id: "Model" });

export const ListModelsResponseSchema = z
  .object({ default_model_id: z.string(), models: z.array(ModelSchema) })
  .meta({ id: "ListModelsResponse" });

export const ListEnvironmentsQuerySchema = z.strictObject({
  sort_by: z.enum(["name", "last_updated"]).optional(),
});

export const CloudEnvironmentSchema = z
  .object({
    uid: z.string(),
    config: z.object({
      name: z.string(),
      description: z.string().nullable(),
      github_repos: z.array(z.object({ owner: z.string(), repo: z.string() })),
      setup_commands: z.array(z.string()),
    }),
    last_updated: Timestamp,
    setup_failed: z.boolean(),
    last_task_run_timestamp: Timestamp.nullable(),
    last_task_created: z
      .object({
        id: z.string(),
        title: z.string(),
        state: RunStateSchema,
        created_at: Timestamp,
        updated_at: Timestamp,
        started_at: Timestamp.nullable(),
      })
      .nullable(),
  })
  .meta({ id: "CloudEnvironment" });

export const ListEnvironmentsResponseSchema = z
  .object({ environments: z.array(CloudEnvironmentSchema) })
  .meta({ id: "ListEnvironmentsResponse" });

export const ListAgentsQuerySchema = z.strictObject({
  repo: z
    .string()
    .regex(/^[^/\s:]+\/[^/\s:]+$/, "repo must be owner/repo")
    .optional(),
  sort_by: z.enum(["name", "last_run"]).optional(),
  refresh: booleanParam("refresh").optional(),
  include_malformed_skills: booleanParam("include_malformed_skills").optional(),
});

export const AgentSkillSchema = z
  .object({
    name: z.string(),
    variants: z.array(
      z.object({
        id: z.string(),
        description: z.string(),
        base_prompt: z.string(),
        source: z.object({ owner: z.string(), name: z.string(), skill_path: z.string() }),
        environments: z.array(z.object({ uid: z.string(), name: z.string() })),
        last_run_timestamp: Timestamp.nullable(),
        error: z.string().optional(),
      }),
    ),
  })
  .meta({ id: "AgentSkill" });

export const ListAgentsResponseSchema = z
  .object({ agents: z.array(AgentSkillSchema) })
  .meta({ id: "ListAgentsResponse" });

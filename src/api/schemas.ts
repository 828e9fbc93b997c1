import { z } from "zod";
import { MAX_ATTACHMENTS } from "../model/attachment.ts";
import { OZ_HARNESS_NAMES, WIRE_HARNESS_TYPES } from "../model/harness-wire.ts";
import { DELIVERY_MODES } from "../model/repository.ts";
import { WIRE_RUN_MODES } from "../model/run-mode.ts";
import { FOREIGN_RUN_STATES, RUN_STATES } from "../model/run-state.ts";
import { SKILL_SPEC_PATTERN, VALID_SKILL_SPECS } from "../model/skill-spec.ts";
import { OZ_ERROR_CODES } from "../model/status-reason.ts";

/**
 * The wire schemas of API v1. The server validates requests with these and the OpenAPI document is
 * generated from them, so the two cannot disagree.
 */

export const LIMITS = {
  bodyBytes: 1024 * 1024,
  promptChars: 100_000,
  titleChars: 300,
  metadataKeys: 20,
  metadataValueBytes: 256,
  idempotencyKeyChars: 255,
  listDefault: 20,
  listMax: 500,
  eventsDefault: 100,
  eventsMax: 1000,
} as const;

const codePoints = (s: string) => [...s].length;

/** A skill spec, with the pattern parseSkillSpec enforces, so that the document names what is refused. */
const SkillSpecSchema = z
  .string()
  .min(1)
  .max(500)
  // Enforced by parseSkillSpec (with a finer message than a pattern mismatch), so only documented here.
  .meta({ pattern: SKILL_SPEC_PATTERN, description: `${VALID_SKILL_SPECS}` });

const boundedText = (max: number, what: string) =>
  z.string().refine((s) => codePoints(s) <= max, { message: `${what} must be at most ${max} characters` });

export const McpServerConfigSchema = z
  .object({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    url: z.url().optional(),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .refine((s) => (s.command === undefined) !== (s.url === undefined), {
    message: "give exactly one of command (stdio) or url (HTTP)",
  })
  .meta({ id: "MCPServerConfig" });

export const AgentConfigSchema = z
  .object({
    name: z.string().min(1).max(200).nullish(),
    model_id: z.string().min(1).max(200).nullish(),
    base_prompt: boundedText(LIMITS.promptChars, "base_prompt").nullish(),
    environment_id: z.string().min(1).max(200).nullish(),
    skill_spec: SkillSpecSchema.nullish(),
    mcp_servers: z.record(z.string().min(1).max(100), McpServerConfigSchema).nullish(),
    harness: z
      .object({
        type: z.string().min(1).max(100).meta({
          description:
            'oz (Dispatch\'s own harnesses), claude, codex or gemini; "builtin" and "scripted" are accepted as legacy spellings of {type: "oz", name}.',
        }),
        name: z
          .string()
          .min(1)
          .max(100)
          .nullish()
          .meta({
            description: `Dispatch extension: which of Dispatch's own harnesses (${OZ_HARNESS_NAMES.join(", ")}) with type oz; the server's default (builtin when a model is configured) when absent.`,
          }),
      })
      .nullish(),
    idle_timeout_minutes: z.number().int().min(1).max(10_080).nullish(),
    max_run_minutes: z.number().int().min(1).max(10_080).nullish(),
    max_cost_usd: z.number().positive("must be more than 0 US dollars").max(100_000).nullish().meta({
      description:
        "Dispatch extension: the most the run's model calls may cost, in US dollars, over all its executions (follow-ups included); the run is stopped and FAILED with error_code budget_exceeded (reason cost_limit) once its cost passes it. The server's default (DISPATCH_MAX_COST_USD) when absent.",
    }),
    repository: z.string().min(1).max(500).nullish().meta({
      description:
        'Dispatch extension: the repository the run works in and delivers to: "owner/repo", "owner/repo@base-branch" or a git URL.',
    }),
    base_branch: z.string().min(1).max(200).nullish().meta({
      description:
        "Dispatch extension: the branch the work starts from; the repository's default branch otherwise.",
    }),
    branch: z.string().min(1).max(200).nullish().meta({
      description:
        "Dispatch extension: the branch Dispatch pushes to; dispatch/<run>-<title> unless the run works on an open pull request's branch.",
    }),
    delivery: z.enum(DELIVERY_MODES).nullish().meta({
      description:
        "Dispatch extension: pull_request (default with a GitHub repository), branch (push only) or none.",
    }),
  })
  .meta({ id: "AgentConfig" });

/** `agent_config` as runs show it: the harness in Oz's form, `{type: "oz", name}` for Dispatch's own. */
const RunAgentConfigSchema = AgentConfigSchema.extend({
  harness: z
    .object({
      type: z.enum(WIRE_HARNESS_TYPES),
      name: z
        .string()
        .optional()
        .meta({ description: "Dispatch extension: builtin or scripted, with type oz." }),
    })
    .optional(),
}).meta({ id: "RunAgentConfig" });

export const MetadataSchema = z
  .record(
    z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "metadata keys must match [A-Za-z0-9._-]{1,64}"),
    z.string().refine((v) => Buffer.byteLength(v) <= LIMITS.metadataValueBytes, {
      message: `metadata values must be at most ${LIMITS.metadataValueBytes} bytes`,
    }),
  )
  .refine((m) => Object.keys(m).length <= LIMITS.metadataKeys, {
    message: `metadata may have at most ${LIMITS.metadataKeys} keys`,
  });

/** An image sent with a create or follow-up; its type, size and bytes are checked by decodeAttachments. */
export const AttachmentSchema = z
  .object({
    file_name: z.string().min(1).max(255),
    mime_type: z.string().min(1).max(100).meta({
      description: "image/jpeg, image/png, image/gif or image/webp (any case).",
      // What decodeAttachments accepts (trimmed, case-insensitive), so the document refuses the same.
      pattern: "^\\s*[iI][mM][aA][gG][eE]/([jJ][pP][eE][gG]|[pP][nN][gG]|[gG][iI][fF]|[wW][eE][bB][pP])\\s*$",
    }),
    data: z.string().meta({ description: "The file's bytes, base64 (at most 5 MB decoded)." }),
  })
  .meta({ id: "Attachment" });

const AttachmentsSchema = z
  .array(AttachmentSchema)
  .max(MAX_ATTACHMENTS, `at most ${MAX_ATTACHMENTS} attachments are allowed`)
  .nullish();

/** A person or service account a run is for (runs' `creator`; `on_behalf_of.creator` from integrations). */
const CreatorSchema = z.object({
  type: z.enum(["user", "service_account"]),
  uid: z.string().min(1).max(300),
  display_name: z.string().min(1).max(300),
  email: z.string().max(300).optional(),
});

/** Oz's create fields beyond the prompt and config (docs/api.md; behaviour in RunService.create). */
const OzCreateFields = {
  team: z
    .boolean()
    .nullish()
    .meta({
      description:
        "Every Dispatch run is owned by the key's team: true or absent; false is operation_not_supported.",
      // The server reads false as operation_not_supported: the document admits only what it accepts.
      enum: [true, null],
    }),
  interactive: z.boolean().nullish().meta({
    description: "Accepted for Oz compatibility: every Dispatch run takes follow-ups while it runs.",
  }),
  conversation_id: z.string().min(1).max(200).nullish().meta({
    description:
      "Continue that run's conversation (a run's conversation_id is its run_id): the prompt goes to that run as a follow-up and the response names that run.",
  }),
  parent_run_id: z.string().min(1).max(200).nullish().meta({
    description:
      "The run that spawned this one; must be a run of the same team. ancestor_run_id lists by it.",
  }),
  mode: z.enum(WIRE_RUN_MODES).nullish().meta({
    description:
      "normal (default) does the work; plan answers with a plan and changes no file; orchestrate is operation_not_supported.",
  }),
};

export const CreateRunRequestSchema = z
  .object({
    prompt: boundedText(LIMITS.promptChars, "prompt").nullish(),
    title: boundedText(LIMITS.titleChars, "title").nullish(),
    config: AgentConfigSchema.nullish(),
    skill: SkillSpecSchema.nullish(),
    metadata: MetadataSchema.nullish(),
    ...OzCreateFields,
    attachments: AttachmentsSchema,
    /** Dispatch extension, honoured for admin keys only: an integration creating runs for its users. */
    on_behalf_of: z
      .object({
        creator: CreatorSchema.optional(),
        source: z.string().min(1).max(100).optional(),
        trigger_url: z.url().max(2000).optional(),
      })
      .nullish()
      .meta({
        description:
          "Dispatch extension for integrations (admin keys only; ignored for other keys): the user the run is for, where it was started and from which surface.",
      }),
  })
  .refine(
    (b) => (b.prompt != null && b.prompt.trim() !== "") || b.skill != null || b.config?.skill_spec != null,
    {
      message: "prompt is required unless a skill is given",
      path: ["prompt"],
    },
  )
  .meta({ id: "CreateRunRequest" });

/** The optional body of a cancel: who cancelled, when an integration cancels for a person. */
export const CancelRunRequestSchema = z
  .object({
    on_behalf_of: z.object({ creator: CreatorSchema }).nullish().meta({
      description: "Dispatch extension for integrations (admin keys only; ignored for other keys).",
    }),
  })
  .meta({ id: "CancelRunRequest" });

export const CreateRunResponseSchema = z
  .object({
    run_id: z.string(),
    task_id: z.string(),
    state: z.enum(RUN_STATES).meta({
      description:
        "QUEUED for a new run; with conversation_id, the state of the continued run after the follow-up.",
    }),
    at_capacity: z.boolean(),
  })
  .meta({ id: "CreateRunResponse" });

export const RunStateSchema = z.enum(RUN_STATES).meta({ id: "RunState" });

const Timestamp = z.string().meta({ format: "date-time" });

export const RunItemSchema = z
  .object({
    run_id: z.string(),
    task_id: z.string(),
    title: z.string(),
    prompt: z.string(),
    state: RunStateSchema,
    created_at: Timestamp,
    updated_at: Timestamp,
    started_at: Timestamp.nullable(),
    finished_at: Timestamp.nullable(),
    run_time: z.string(),
    session_id: z.string(),
    session_link: z.string(),
    trigger_url: z.string().optional(),
    source: z.string(),
    creator: z.object({
      type: z.enum(["user", "service_account"]),
      uid: z.string(),
      display_name: z.string(),
      email: z.string().optional(),
    }),
    agent_config: RunAgentConfigSchema,
    agent_skill: z
      .object({ name: z.string(), description: z.string().optional(), full_path: z.string() })
      .optional(),
    status_message: z
      .object({
        message: z.string(),
        error_code: z.enum(OZ_ERROR_CODES).optional().meta({ description: "Oz's ErrorCode, when one fits." }),
        reason: z.string().optional().meta({
          description:
            "Dispatch extension: the finer reason, e.g. time_limit, command_failed, delivery_failed, worker_lost, cancelled.",
        }),
        retryable: z.boolean().optional(),
      })
      .optional(),
    artifacts: z.array(
      z.object({ artifact_type: z.string(), created_at: Timestamp, data: z.record(z.string(), z.unknown()) }),
    ),
    request_usage: z.object({
      input_tokens: z.number(),
      output_tokens: z.number(),
      total_tokens: z.number(),
      inference_cost: z.number().optional().meta({
        description:
          "What the run's model calls cost so far, in US dollars, at the server's model prices; absent when a model it used has no price.",
      }),
    }),
    is_sandbox_running: z.boolean(),
    schedule: z
      .object({
        schedule_id: z.string(),
        schedule_name: z.string().meta({ description: "The schedule's name when it fired this run." }),
        cron_schedule: z.string(),
        fire_time: Timestamp.meta({ description: "Dispatch extension: the cron slot this run is for." }),
      })
      .optional()
      .meta({ description: "The schedule that fired this run (scheduled runs only)." }),
    scope: z.object({ type: z.literal("Team"), uid: z.string() }),
    metadata: z.record(z.string(), z.string()),
    conversation_id: z.string().meta({
      description: "The run's conversation: the run id (create with conversation_id continues the run).",
    }),
    parent_run_id: z.string().optional(),
    execution_location: z.literal("REMOTE"),
  })
  .meta({ id: "RunItem" });

export const ListRunsResponseSchema = z
  .object({
    runs: z.array(RunItemSchema),
    page_info: z.object({ has_next_page: z.boolean(), next_cursor: z.string().optional() }),
  })
  .meta({ id: "ListRunsResponse" });

/** RFC 3339 with fields in range: the document says exactly which strings the server reads as a time. */
const RFC3339 =
  /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

const timestampParam = (name: string) =>
  z
    .string()
    .regex(RFC3339, `${name} must be an RFC 3339 timestamp such as 2026-11-21T05:20:11.123Z`)
    .transform((s) => new Date(s).toISOString());

/** Oz caps a list request at this many `metadata[key]=value` filters. */
export const METADATA_FILTERS_MAX = 5;

const oneOrMany = <T extends z.ZodType>(item: T) => z.union([item, z.array(item)]);

export const ListRunsQuerySchema = z
  .strictObject({
    limit: z
      .string()
      .regex(/^([1-9]\d?|[1-4]\d\d|500)$/, "limit must be a whole number from 1 to 500")
      .transform(Number)
      .pipe(
        z.number().int().min(1, "limit must be at least 1").max(LIMITS.listMax, "limit must be at most 500"),
      )
      .meta({ type: "integer", minimum: 1, maximum: LIMITS.listMax })
      .optional(),
    cursor: z.string().min(1).max(1000).optional(),
    sort_by: z.enum(["updated_at", "created_at", "title", "agent"]).optional(),
    sort_order: z.enum(["asc", "desc"]).optional(),
    state: z
      .union([
        z.enum([...RUN_STATES, ...FOREIGN_RUN_STATES]),
        z.array(z.enum([...RUN_STATES, ...FOREIGN_RUN_STATES])),
      ])
      .optional(),
    name: z.string().min(1).max(200).optional(),
    config_name: z.string().min(1).max(200).optional(),
    model_id: z.string().min(1).max(200).optional(),
    creator: z.string().min(1).max(300).optional(),
    source: oneOrMany(z.string().min(1).max(100)).optional(),
    environment_id: z.string().min(1).max(200).optional(),
    skill_spec: z.string().min(1).max(500).optional(),
    skill: z.string().min(1).max(500).optional(),
    // Sent as `metadata[key]=value` (the SDKs' bracket notation); the route gathers them into one object.
    metadata: z
      .record(z.string().min(1).max(200), z.string().max(2000))
      .refine((m) => Object.keys(m).length <= METADATA_FILTERS_MAX, {
        message: `at most ${METADATA_FILTERS_MAX} metadata[key]=value filters per request`,
      })
      .optional(),
    artifact_type: z.enum(["PLAN", "PULL_REQUEST", "SCREENSHOT", "FILE", "EXTERNAL_REFERENCE"]).optional(),
    schedule_id: z.string().min(1).max(200).optional(),
    ancestor_run_id: z.string().min(1).max(200).optional(),
    executor: z.string().min(1).max(300).optional(),
    execution_location: z.enum(["LOCAL", "REMOTE"]).optional(),
    created_after: timestampParam("created_after").optional(),
    created_before: timestampParam("created_before").optional(),
    updated_after: timestampParam("updated_after").optional(),
    q: z.string().min(1).max(1000).optional(),
  })
  .refine((q) => q.name === undefined || q.config_name === undefined || q.name === q.config_name, {
    message: "name and config_name were both given with different values; give one",
    path: ["config_name"],
  })
  .refine((q) => q.skill === undefined || q.skill_spec === undefined || q.skill === q.skill_spec, {
    message: "skill and skill_spec were both given with different values; give one",
    path: ["skill"],
  });

export const FollowupRequestSchema = z
  .object({
    // Not only white space (the pattern is unanchored: some character that is not white space).
    message: boundedText(LIMITS.promptChars, "message")
      .regex(/\S/, "message must not be empty")
      .meta({ minLength: 1 }),
    mode: z.enum(WIRE_RUN_MODES).nullish().meta({
      description:
        "normal (default); plan: the execution this follow-up starts answers with a plan and changes no file; orchestrate is operation_not_supported.",
    }),
    attachments: AttachmentsSchema,
  })
  .meta({ id: "FollowupRequest" });

export const FollowupResponseSchema = z
  .object({
    followup_id: z.string(),
    outcome: z.enum(["queued_prompt", "live_session", "handoff_execution"]),
  })
  .meta({ id: "FollowupResponse" });

export const EventsQuerySchema = z.object({
  // A sequence number: a decimal integer that is exact in a double (never a float or 1e21).
  after: z
    .string()
    .regex(/^\d+$/, "after must be a whole number (the seq of an event)")
    .transform(Number)
    .refine(Number.isSafeInteger, { message: `after must be at most ${Number.MAX_SAFE_INTEGER}` })
    .optional(),
  limit: z
    .string()
    .regex(/^([1-9]\d{0,2}|1000)$/, "limit must be a whole number from 1 to 1000")
    .transform(Number)
    .pipe(z.number().int().min(1).max(LIMITS.eventsMax, "limit must be at most 1000"))
    .meta({ type: "integer", minimum: 1, maximum: LIMITS.eventsMax })
    .optional(),
});

export const RunEventSchema = z
  .object({
    seq: z.number().int(),
    at: Timestamp,
    type: z.string(),
    data: z.record(z.string(), z.unknown()),
  })
  .meta({ id: "RunEvent" });

export const EventsResponseSchema = z
  .object({ events: z.array(RunEventSchema), next_after: z.number().int() })
  .meta({ id: "RunEventsResponse" });

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    error: z.string(),
    error_code: z.string(),
    retryable: z.boolean(),
    instance: z.string(),
    trace_id: z.string().optional(),
  })
  .meta({ id: "Problem" });

/** A query string that takes no parameters: any parameter is refused by name instead of ignored. */
export const NoQuerySchema = z.strictObject({});

const booleanParam = (name: string) =>
  z.enum(["true", "false"], { error: `${name} must be true or false` }).transform((v) => v === "true");

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

export const FileArtifactResponseSchema = z
  .object({
    artifact_uid: z.string(),
    artifact_type: z.literal("FILE"),
    created_at: Timestamp,
    data: z.object({
      download_url: z.string().meta({ description: "Signed link to the bytes; works without an API key." }),
      expires_at: Timestamp.meta({ description: "When download_url stops working (15 minutes)." }),
      content_type: z.string(),
      filepath: z.string(),
      filename: z.string(),
      size_bytes: z.number().int(),
      description: z.string().optional().meta({ description: 'The diff stat, e.g. "+2 −1 in 2 files".' }),
    }),
  })
  .meta({ id: "FileArtifactResponse" });

export const ListAttachmentsResponseSchema = z
  .object({
    attachments: z.array(
      z.object({
        attachment_id: z.string(),
        download_url: z.string().meta({ description: "Signed link to the bytes; works without an API key." }),
        filename: z.string(),
        mime_type: z.string().nullable().optional(),
        expires_at: Timestamp.meta({ description: "Dispatch extension: when download_url stops working." }),
        size_bytes: z.number().int().meta({ description: "Dispatch extension." }),
        followup_id: z.string().nullable().meta({
          description: "Dispatch extension: the follow-up the image came with; null for the run's create.",
        }),
        created_at: Timestamp.meta({ description: "Dispatch extension." }),
      }),
    ),
  })
  .meta({ id: "ListAttachmentsResponse" });

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

/** "config.model_id: Invalid input: expected string" — names the field (docs/api.md). */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      const path = i.path.join(".");
      return path ? `${path}: ${i.message}` : i.message;
    })
    .join("; ");
}

export const SessionRedirectResponseSchema = z
  .object({
    conversation_id: z.string().optional().meta({
      description:
        "The run's id, once its execution has ended (the transcript is complete); absent while it runs.",
    }),
  })
  .meta({ id: "SessionRedirectResponse" });

export const ConversationRedirectResponseSchema = z
  .object({
    session_id: z.string().optional().meta({
      description: "The run's session id while it is running (its live session page); absent otherwise.",
    }),
  })
  .meta({ id: "ConversationRedirectResponse" });

import { z } from "zod";
import { MAX_ATTACHMENTS } from "../../model/attachment.ts";
import { WIRE_RUN_MODES } from "../../model/run-mode.ts";
import { FOREIGN_RUN_STATES, RUN_STATES } from "../../model/run-state.ts";
import { AgentConfigSchema } from "./agent-config.ts";
import { boundedText, LIMITS, MetadataSchema, SkillSpecSchema, Timestamp } from "./common.ts";
import { CreatorSchema } from "./creator.ts";

/** Runs on the wire: create, list, get, follow up, cancel, the transcript, attachments and redirects. */

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
    on_behalf_of: z
      .union([
        z.string().min(1).max(300).meta({
          description:
            "The Warp Platform API's form: a user id or email of the team; the run is created for that user. Admin keys and agent identities' keys only (403 otherwise).",
        }),
        z
          .object({
            creator: CreatorSchema.optional(),
            source: z.string().min(1).max(100).optional(),
            trigger_url: z.url().max(2000).optional(),
          })
          .meta({
            description:
              "Dispatch extension for integrations (admin keys only; ignored for other keys): the user the run is for, where it was started and from which surface.",
          }),
      ])
      .nullish(),
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

export { ListRunsResponseSchema, RunItemSchema, RunStateSchema } from "./run-item.ts";

/** RFC 3339 with fields in range: the document says exactly which strings the server reads as a time. */
const RFC3339 =
  /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

const timestampParam = (name: string) =>
  z
    .string()
    .regex(RFC3339, `${name} must be an RFC 3339 timestamp such as 2026-11-21T05:20:11.123Z`)
    .transform((s) => new Date(s).toISOString());

/** The Warp Platform API's coarse statuses of a run and what it spawned (list-runs-query.ts maps them). */
export const TASK_STATUSES = ["running", "failed", "blocked", "cancelled", "complete"] as const;

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
    q: z.string().min(1).max(1000).optional().meta({
      description:
        "A case-insensitive substring of the title or prompt, or a run's id or URL (its run page, session link or API path).",
    }),
    task_status: oneOrMany(z.enum(TASK_STATUSES)).optional().meta({
      description:
        "running: the run or a run below it is QUEUED or INPROGRESS; failed (FAILED or ERROR), cancelled, complete (SUCCEEDED): the run's own state; blocked (BLOCKED: waiting for a person). Repeatable (OR).",
    }),
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

export const FOLLOWUP_OUTCOMES = [
  "queued_prompt",
  "live_session",
  "queue_pending",
  "handoff_execution",
] as const;

export const FollowupResponseSchema = z
  .object({
    followup_id: z
      .string()
      .meta({ description: "The durable follow-up record (Dispatch keeps one for every outcome)." }),
    outcome: z.enum(FOLLOWUP_OUTCOMES).meta({
      description:
        "queued_prompt: added to a queued run's prompt; queue_pending: held until the agent of a run that is getting ready starts; live_session: given to the running agent; handoff_execution: a new execution of the finished run.",
    }),
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

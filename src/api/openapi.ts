import { z } from "zod";
import pkg from "../../package.json" with { type: "json" };
import { ATTACHMENT_MIME_TYPES } from "../model/attachment.ts";
import { ERROR_CODES } from "./problem.ts";
import { FileArtifactResponseSchema } from "./schemas/artifacts.ts";
import {
  ListAgentsQuerySchema,
  ListAgentsResponseSchema,
  ListEnvironmentsQuerySchema,
  ListEnvironmentsResponseSchema,
  ListModelsResponseSchema,
} from "./schemas/catalog.ts";
import { ProblemSchema } from "./schemas/common.ts";
import {
  AgentIdentitySchema,
  CreateAgentIdentityRequestSchema,
  ListAgentIdentitiesResponseSchema,
  UpdateAgentIdentityRequestSchema,
} from "./schemas/identities.ts";
import {
  CancelRunRequestSchema,
  ConversationRedirectResponseSchema,
  CreateRunRequestSchema,
  CreateRunResponseSchema,
  EventsQuerySchema,
  EventsResponseSchema,
  FollowupRequestSchema,
  FollowupResponseSchema,
  ListAttachmentsResponseSchema,
  ListRunsQuerySchema,
  ListRunsResponseSchema,
  RunItemSchema,
  SessionRedirectResponseSchema,
} from "./schemas/runs.ts";
import {
  CreateScheduleRequestSchema,
  DeleteScheduleResponseSchema,
  ListSchedulesResponseSchema,
  ScheduledAgentItemSchema,
  UpdateScheduleRequestSchema,
} from "./schemas/schedules.ts";

type Json = Record<string, unknown>;

const ref = (schema: z.ZodType) => {
  const id = z.globalRegistry.get(schema)?.id;
  if (!id) throw new Error("schema has no id");
  return { $ref: `#/components/schemas/${id}` };
};

const json = (schema: z.ZodType) => ({ "application/json": { schema: ref(schema) } });

function problems(...codes: Array<keyof typeof ERROR_CODES>): Json {
  const out: Json = {};
  for (const code of codes) {
    const { status, title } = ERROR_CODES[code];
    const existing = out[String(status)] as { description: string } | undefined;
    out[String(status)] = {
      description: existing ? `${existing.description}; ${title}` : `${title} (${code})`,
      content: { "application/problem+json": { schema: ref(ProblemSchema) } },
    };
  }
  return out;
}

/** Query parameters, generated from the schema the server parses the query string with. */
function queryParameters(schema: z.ZodObject): Json[] {
  return Object.entries(schema.shape).map(([name, field]) => {
    const fieldSchema = z.toJSONSchema(field as z.ZodType, { io: "input", unrepresentable: "any" }) as Json;
    delete fieldSchema.$schema;
    // An object travels as `name[key]=value`, the bracket notation the SDKs send.
    const style = fieldSchema.type === "object" ? { style: "deepObject", explode: true } : {};
    return { name, in: "query", required: false, ...style, schema: fieldSchema };
  });
}

const uidParam = { name: "uid", in: "path", required: true, schema: { type: "string" } };
const scheduleIdParam = { name: "scheduleId", in: "path", required: true, schema: { type: "string" } };
const runIdParam = { name: "runId", in: "path", required: true, schema: { type: "string" } };
const artifactUidParam = { name: "artifactUid", in: "path", required: true, schema: { type: "string" } };
const idempotencyHeader = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  schema: { type: "string", maxLength: 255 },
  description: "Same key and equal body within 24 h returns the original response and creates nothing.",
};
const common = problems(
  "authentication_required",
  "not_authorized",
  "request_timeout",
  "headers_too_large",
  "rate_limited",
  "internal_error",
  "resource_unavailable",
);

/** The OpenAPI 3.1 document of API v1, built from the zod schemas the server validates with. */
export function buildOpenApiDocument(): Json {
  const { schemas } = z.toJSONSchema(z.globalRegistry, {
    io: "input",
    target: "draft-2020-12",
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: "any",
  }) as { schemas: Record<string, Json> };
  for (const schema of Object.values(schemas)) delete schema.$schema;

  const createRun = {
    tags: ["runs"],
    summary: "Create a run",
    parameters: [idempotencyHeader],
    requestBody: { required: true, content: json(CreateRunRequestSchema) },
    responses: {
      "200": { description: "The run is queued (and durable).", content: json(CreateRunResponseSchema) },
      ...problems(
        "invalid_request",
        "operation_not_supported",
        "conflict",
        "payload_too_large",
        "unsupported_media_type",
        "idempotency_key_reused",
      ),
      ...common,
    },
  };

  return {
    openapi: "3.1.0",
    info: {
      title: "Dispatch API",
      version: pkg.version,
      description:
        "Agent runs: create, list, get, follow up, cancel and stream transcripts. Compatible with the Oz Agent API v1.",
    },
    servers: [{ url: "/api/v1" }],
    security: [{ bearerAuth: [] }],
    paths: {
      "/agent/runs": {
        post: { ...createRun, operationId: "createRun" },
        get: {
          operationId: "listRuns",
          tags: ["runs"],
          summary: "List runs (keyset pagination)",
          parameters: queryParameters(ListRunsQuerySchema),
          responses: {
            "200": { description: "A page of runs.", content: json(ListRunsResponseSchema) },
            ...problems("invalid_request"),
            ...common,
          },
        },
      },
      "/agent/run": {
        post: { ...createRun, operationId: "createRunAlias", summary: "Create a run (alias)" },
      },
      "/agent/runs/{runId}": {
        get: {
          operationId: "getRun",
          tags: ["runs"],
          summary: "Get a run",
          parameters: [runIdParam],
          responses: {
            "200": { description: "The run.", content: json(RunItemSchema) },
            ...problems("resource_not_found"),
            ...common,
          },
        },
      },
      "/agent/runs/{runId}/followups": {
        post: {
          operationId: "followupRun",
          tags: ["runs"],
          summary: "Send a follow-up to a run",
          parameters: [runIdParam, idempotencyHeader],
          requestBody: { required: true, content: json(FollowupRequestSchema) },
          responses: {
            "200": { description: "Where the follow-up went.", content: json(FollowupResponseSchema) },
            ...problems(
              "invalid_request",
              "operation_not_supported",
              "resource_not_found",
              "conflict",
              "idempotency_key_reused",
              "payload_too_large",
            ),
            ...common,
          },
        },
      },
      "/agent/runs/{runId}/cancel": {
        post: {
          operationId: "cancelRun",
          tags: ["runs"],
          summary: "Cancel a queued or running run",
          parameters: [runIdParam, idempotencyHeader],
          requestBody: { required: false, content: json(CancelRunRequestSchema) },
          responses: {
            "200": {
              description: "The run id, as a JSON string.",
              content: { "application/json": { schema: { type: "string" } } },
            },
            ...problems(
              "invalid_request",
              "resource_not_found",
              "conflict",
              "idempotency_key_reused",
              "payload_too_large",
              "unsupported_media_type",
            ),
            ...common,
          },
        },
      },
      "/agent/runs/{runId}/events": {
        get: {
          operationId: "listRunEvents",
          tags: ["runs"],
          summary: "The run's transcript (JSON page, or an SSE stream with Accept: text/event-stream)",
          parameters: [
            runIdParam,
            ...queryParameters(EventsQuerySchema),
            { name: "Last-Event-ID", in: "header", required: false, schema: { type: "string" } },
          ],
          responses: {
            "200": {
              description:
                "Events after `after`; as SSE, each message has `id: <seq>` and the event as JSON data.",
              content: { ...json(EventsResponseSchema), "text/event-stream": { schema: { type: "string" } } },
            },
            ...problems("invalid_request", "resource_not_found"),
            ...common,
          },
        },
      },
      "/agent/sessions/{sessionUuid}/redirect": {
        get: {
          operationId: "checkSessionRedirect",
          tags: ["runs"],
          summary: "The conversation (run) of a session once its run has ended; no key needed",
          security: [],
          parameters: [{ name: "sessionUuid", in: "path", required: true, schema: { type: "string" } }],
          responses: {
            "200": {
              description: "`{conversation_id}` once the run has ended, `{}` while it runs.",
              content: json(SessionRedirectResponseSchema),
            },
            ...problems("invalid_request", "resource_not_found"),
          },
        },
      },
      "/agent/conversations/{conversationId}/redirect": {
        get: {
          operationId: "checkConversationRedirect",
          tags: ["runs"],
          summary: "The live session of a conversation (a run's id) while its run has not ended",
          description:
            "Unlike Oz's public endpoint this needs a key of the run's team: the session id it answers is the capability to view the run.",
          parameters: [{ name: "conversationId", in: "path", required: true, schema: { type: "string" } }],
          responses: {
            "200": {
              description: "`{session_id}` while the run is queued or running, `{}` once it has ended.",
              content: json(ConversationRedirectResponseSchema),
            },
            ...problems("invalid_request", "resource_not_found"),
            ...common,
          },
        },
      },
      "/agent/models": {
        get: {
          operationId: "listModels",
          tags: ["models"],
          summary: "The models runs can name, and the default",
          responses: {
            "200": { description: "The configured models.", content: json(ListModelsResponseSchema) },
            ...problems("invalid_request"),
            ...common,
          },
        },
      },
      "/agent/environments": {
        get: {
          operationId: "listEnvironments",
          tags: ["environments"],
          summary: "The configured environments, with the team's latest run in each",
          parameters: queryParameters(ListEnvironmentsQuerySchema),
          responses: {
            "200": { description: "The environments.", content: json(ListEnvironmentsResponseSchema) },
            ...problems("invalid_request"),
            ...common,
          },
        },
      },
      "/agent": {
        get: {
          operationId: "listAgents",
          tags: ["agents"],
          summary: "The skills runs can use without a fetch, grouped by name",
          parameters: queryParameters(ListAgentsQuerySchema),
          responses: {
            "200": { description: "The agents (skills).", content: json(ListAgentsResponseSchema) },
            ...problems("invalid_request"),
            ...common,
          },
        },
      },
      "/agent/schedules": {
        post: {
          operationId: "createSchedule",
          tags: ["schedules"],
          summary: "Create a scheduled agent: a run on every cron fire time (exactly once each)",
          description:
            "Its runs are for the caller, its owner (`created_by`). 403 `not_authorized` when the team has DISPATCH_SCHEDULES_PER_TEAM schedules, or the caller owns DISPATCH_SCHEDULES_PER_CREATOR. A fire time while the previous run is still QUEUED is skipped, shown in `last_spawn_error`.",
          parameters: [idempotencyHeader],
          requestBody: { required: true, content: json(CreateScheduleRequestSchema) },
          responses: {
            "201": { description: "The new schedule.", content: json(ScheduledAgentItemSchema) },
            ...problems("invalid_request", "conflict", "idempotency_key_reused", "unsupported_media_type"),
            ...common,
          },
        },
        get: {
          operationId: "listSchedules",
          tags: ["schedules"],
          summary: "The team's schedules, sorted by name",
          responses: {
            "200": { description: "The schedules.", content: json(ListSchedulesResponseSchema) },
            ...problems("invalid_request"),
            ...common,
          },
        },
      },
      "/agent/schedules/{scheduleId}": {
        get: {
          operationId: "getSchedule",
          tags: ["schedules"],
          summary: "A schedule with its history (last run, next fire time)",
          parameters: [scheduleIdParam],
          responses: {
            "200": { description: "The schedule.", content: json(ScheduledAgentItemSchema) },
            ...problems("resource_not_found"),
            ...common,
          },
        },
        put: {
          operationId: "updateSchedule",
          tags: ["schedules"],
          summary: "Replace a schedule",
          description:
            "The caller becomes the schedule's owner (`created_by`): its runs are theirs from now on. 403 `not_authorized` when that would make them own more than DISPATCH_SCHEDULES_PER_CREATOR schedules.",
          parameters: [scheduleIdParam],
          requestBody: { required: true, content: json(UpdateScheduleRequestSchema) },
          responses: {
            "200": { description: "The schedule as replaced.", content: json(ScheduledAgentItemSchema) },
            ...problems("invalid_request", "resource_not_found", "conflict", "unsupported_media_type"),
            ...common,
          },
        },
        delete: {
          operationId: "deleteSchedule",
          tags: ["schedules"],
          summary: "Delete a schedule (its runs stay)",
          parameters: [scheduleIdParam],
          responses: {
            "200": { description: "Deleted.", content: json(DeleteScheduleResponseSchema) },
            ...problems("resource_not_found"),
            ...common,
          },
        },
      },
      "/agent/schedules/{scheduleId}/pause": {
        post: {
          operationId: "pauseSchedule",
          tags: ["schedules"],
          summary: "Pause a schedule: nothing fires until it is resumed",
          parameters: [scheduleIdParam],
          responses: {
            "200": { description: "The paused schedule.", content: json(ScheduledAgentItemSchema) },
            ...problems("resource_not_found"),
            ...common,
          },
        },
      },
      "/agent/schedules/{scheduleId}/resume": {
        post: {
          operationId: "resumeSchedule",
          tags: ["schedules"],
          summary: "Resume a schedule from its next fire time (what was missed while paused does not fire)",
          description:
            "Resuming a paused schedule makes the caller its owner (`created_by`), as a replace does; resuming one that is not paused changes nothing.",
          parameters: [scheduleIdParam],
          responses: {
            "200": { description: "The resumed schedule.", content: json(ScheduledAgentItemSchema) },
            ...problems("resource_not_found"),
            ...common,
          },
        },
      },
      "/agent/identities": {
        post: {
          operationId: "createAgentIdentity",
          tags: ["identities"],
          summary: "Create a service account of the team (admin keys only)",
          requestBody: { required: true, content: json(CreateAgentIdentityRequestSchema) },
          responses: {
            "201": { description: "The new identity.", content: json(AgentIdentitySchema) },
            ...problems("invalid_request", "unsupported_media_type"),
            ...common,
          },
        },
        get: {
          operationId: "listAgentIdentities",
          tags: ["identities"],
          summary: "The team's service accounts, oldest first (admin keys only)",
          responses: {
            "200": { description: "The identities.", content: json(ListAgentIdentitiesResponseSchema) },
            ...problems("invalid_request"),
            ...common,
          },
        },
      },
      "/agent/identities/{uid}": {
        get: {
          operationId: "getAgentIdentity",
          tags: ["identities"],
          summary: "One service account (admin keys only)",
          parameters: [uidParam],
          responses: {
            "200": { description: "The identity.", content: json(AgentIdentitySchema) },
            ...problems("resource_not_found"),
            ...common,
          },
        },
        put: {
          operationId: "updateAgentIdentity",
          tags: ["identities"],
          summary: "Change a service account (admin keys only)",
          parameters: [uidParam],
          requestBody: { required: false, content: json(UpdateAgentIdentityRequestSchema) },
          responses: {
            "200": { description: "The identity as changed.", content: json(AgentIdentitySchema) },
            ...problems("invalid_request", "resource_not_found", "unsupported_media_type"),
            ...common,
          },
        },
        delete: {
          operationId: "deleteAgentIdentity",
          tags: ["identities"],
          summary: "Delete a service account and revoke its API keys (admin keys only)",
          parameters: [uidParam],
          responses: {
            "204": { description: "Deleted; its keys no longer authenticate." },
            ...problems("invalid_request", "resource_not_found"),
            ...common,
          },
        },
      },
      "/agent/artifacts/{artifactUid}": {
        get: {
          operationId: "getArtifact",
          tags: ["artifacts"],
          summary: "A FILE artifact of a run (the delivered patch), with a signed download link",
          parameters: [artifactUidParam],
          responses: {
            "200": {
              description: "The artifact; data.download_url works without an API key until data.expires_at.",
              content: json(FileArtifactResponseSchema),
            },
            ...problems("invalid_request", "resource_not_found"),
            ...common,
          },
        },
      },
      "/agent/artifacts/{artifactUid}/download": {
        get: {
          operationId: "downloadArtifact",
          tags: ["artifacts"],
          summary: "Redirects to a signed link to the artifact's bytes (valid 15 minutes)",
          parameters: [artifactUidParam],
          responses: {
            "302": {
              description: "Location is the signed link (GET .../content?team=…&expires=…&signature=…).",
              headers: { Location: { schema: { type: "string" } } },
            },
            ...problems("invalid_request", "resource_not_found"),
            ...common,
          },
        },
      },
      "/agent/artifacts/{artifactUid}/content": {
        get: {
          operationId: "getArtifactContent",
          tags: ["artifacts"],
          summary: "The artifact's bytes, through a signed link (no API key)",
          security: [],
          parameters: [
            artifactUidParam,
            ...["team", "expires", "signature"].map((name) => ({
              name,
              in: "query",
              required: true,
              schema: { type: "string" },
            })),
          ],
          responses: {
            "200": {
              description:
                "The bytes, as an attachment (Content-Disposition) of the artifact's content type.",
              content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
            },
            ...problems("not_authorized", "resource_not_found"),
          },
        },
      },
      "/agent/runs/{runId}/handoff/attachments": {
        get: {
          operationId: "listHandoffAttachments",
          tags: ["runs"],
          summary: "The run's image attachments (create and follow-ups), with signed download links",
          parameters: [runIdParam],
          responses: {
            "200": {
              description: "Oldest first; each download_url works without an API key until expires_at.",
              content: json(ListAttachmentsResponseSchema),
            },
            ...problems("invalid_request", "resource_not_found"),
            ...common,
          },
        },
      },
      "/agent/attachments/{attachmentId}/content": {
        get: {
          operationId: "getAttachmentContent",
          tags: ["runs"],
          summary: "An attachment's bytes, through a signed link (no API key)",
          security: [],
          parameters: [
            { name: "attachmentId", in: "path", required: true, schema: { type: "string" } },
            ...["team", "expires", "signature"].map((name) => ({
              name,
              in: "query",
              required: true,
              schema: { type: "string" },
            })),
          ],
          responses: {
            "200": {
              description: "The image, inline (Content-Disposition names the file).",
              content: Object.fromEntries(
                ATTACHMENT_MIME_TYPES.map((type) => [type, { schema: { type: "string", format: "binary" } }]),
              ),
            },
            ...problems("not_authorized", "resource_not_found"),
          },
        },
      },
    },
    components: {
      securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", description: "dsp_ API key" } },
      schemas,
    },
  };
}

import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { attachmentBodyLimit } from "../../model/attachment.ts";
import { RunError } from "../../model/errors.ts";
import { toRunItem } from "../../runs/run-item.ts";
import type { RunService } from "../../runs/run-service.ts";
import { resumeAfter, streamRunEvents, wantsEventStream } from "../event-stream.ts";
import { listInputOf } from "../list-runs-query.ts";
import { json, operation, route } from "../operation.ts";
import { ApiError } from "../problem.ts";
import { LIMITS } from "../schemas/common.ts";
import {
  CancelRunRequestSchema,
  CreateRunRequestSchema,
  CreateRunResponseSchema,
  EventsQuerySchema,
  EventsResponseSchema,
  FollowupRequestSchema,
  FollowupResponseSchema,
  ListRunsQuerySchema,
  ListRunsResponseSchema,
  RunItemSchema,
} from "../schemas/runs.ts";

const LIST_PROMPT_LIMIT = 2000;

const createRun = operation({
  id: "createRun",
  method: "POST",
  path: "/agent/runs",
  tag: "runs",
  summary: "Create a run",
  access: "key",
  idempotent: true,
  body: { schema: CreateRunRequestSchema, required: true },
  responses: {
    200: { description: "The run is queued (and durable).", content: json(CreateRunResponseSchema) },
  },
  errors: [
    "invalid_request",
    "operation_not_supported",
    "conflict",
    "payload_too_large",
    "unsupported_media_type",
    "idempotency_key_reused",
  ],
});

/** The runs operations, in the document's order. */
export const runOperations = {
  createRun,
  listRuns: operation({
    id: "listRuns",
    method: "GET",
    path: "/agent/runs",
    tag: "runs",
    summary: "List runs (keyset pagination)",
    access: "key",
    query: ListRunsQuerySchema,
    responses: { 200: { description: "A page of runs.", content: json(ListRunsResponseSchema) } },
    errors: ["invalid_request"],
  }),
  createRunAlias: { ...createRun, id: "createRunAlias", path: "/agent/run", summary: "Create a run (alias)" },
  getRun: operation({
    id: "getRun",
    method: "GET",
    path: "/agent/runs/{runId}",
    tag: "runs",
    summary: "Get a run",
    access: "key",
    responses: { 200: { description: "The run.", content: json(RunItemSchema) } },
    errors: ["resource_not_found"],
  }),
  followupRun: operation({
    id: "followupRun",
    method: "POST",
    path: "/agent/runs/{runId}/followups",
    tag: "runs",
    summary: "Send a follow-up to a run",
    access: "key",
    idempotent: true,
    body: { schema: FollowupRequestSchema, required: true },
    responses: { 200: { description: "Where the follow-up went.", content: json(FollowupResponseSchema) } },
    errors: [
      "invalid_request",
      "operation_not_supported",
      "resource_not_found",
      "conflict",
      "idempotency_key_reused",
      "payload_too_large",
    ],
  }),
  cancelRun: operation({
    id: "cancelRun",
    method: "POST",
    path: "/agent/runs/{runId}/cancel",
    tag: "runs",
    summary: "Cancel a queued or running run",
    access: "key",
    idempotent: true,
    // Optional: API v1 sends none; an admin key may say whom it cancels for.
    body: { schema: CancelRunRequestSchema, required: false },
    responses: { 200: { description: "The run id, as a JSON string.", content: json(z.string()) } },
    errors: [
      "invalid_request",
      "resource_not_found",
      "conflict",
      "idempotency_key_reused",
      "payload_too_large",
      "unsupported_media_type",
    ],
  }),
  listRunEvents: operation({
    id: "listRunEvents",
    method: "GET",
    path: "/agent/runs/{runId}/events",
    tag: "runs",
    summary: "The run's transcript (JSON page, or an SSE stream with Accept: text/event-stream)",
    access: "key",
    query: EventsQuerySchema,
    headers: { "Last-Event-ID": z.string() },
    responses: {
      200: {
        description: "Events after `after`; as SSE, each message has `id: <seq>` and the event as JSON data.",
        content: { ...json(EventsResponseSchema), "text/event-stream": z.string() },
      },
    },
    errors: ["invalid_request", "resource_not_found"],
  }),
};

/** The Idempotency-Key header, checked (1 to 255 characters); undefined when not sent. */
export function idempotencyKey(req: FastifyRequest): string | undefined {
  const raw = req.headers["idempotency-key"];
  if (raw === undefined) return undefined;
  if (typeof raw !== "string" || raw.length === 0 || raw.length > LIMITS.idempotencyKeyChars) {
    throw new ApiError(
      "invalid_request",
      `Idempotency-Key: must be 1 to ${LIMITS.idempotencyKeyChars} characters`,
    );
  }
  return raw;
}

export interface RunRoutesOptions {
  runService: Pick<
    RunService,
    | "create"
    | "list"
    | "get"
    | "queuedPrompts"
    | "onBehalfOf"
    | "followup"
    | "cancel"
    | "events"
    | "transcript"
    | "onEventAppended"
  >;
  /** Base for session links; known only once the server listens when not configured. */
  publicUrl: () => string;
  /** How often an open event stream checks that its key still sees the run (config.http.streamAccessCheckMs). */
  streamAccessCheckMs: number;
}

/** API v1 runs: create, list, get, follow up, cancel and the transcript (JSON pages or SSE). */
export async function runRoutes(app: FastifyInstance, opts: RunRoutesOptions): Promise<void> {
  const { runService, publicUrl } = opts;
  // Only the routes that take attachments admit bodies this large; every other route keeps LIMITS.bodyBytes.
  const withAttachments = { bodyLimit: attachmentBodyLimit(LIMITS.bodyBytes) };
  // The create's statement writes only while the request's key is live (liveKeyId below): on PostgreSQL
  // that saves looking the key up again before it (src/api/auth.ts).
  const createOptions = { ...withAttachments, keyCheckedByWrite: true };

  const ops = runOperations;

  const create = async (req: FastifyRequest, body: z.output<typeof CreateRunRequestSchema>) => {
    const { on_behalf_of: behalf, ...fields } = body;
    // A continued conversation is a follow-up, whose write does not check the key: look it up as for any write.
    if (body.conversation_id != null) req.caller = await req.server.authenticateWrite(req);
    // The Warp Platform API's form: a user id or email, for admin and agent identities' keys.
    const named = typeof behalf === "string" ? await runService.onBehalfOf(req.caller!, behalf) : undefined;
    // Dispatch's: only an admin key (an integration fronting this service) may say whom a run is for.
    const extension =
      behalf && typeof behalf === "object" && req.caller!.key.role === "admin" ? behalf : undefined;
    const creator = named ?? extension?.creator;
    const created = runService.create(
      {
        caller: req.caller!,
        liveKeyId: req.caller!.key.id,
        idempotencyKey: idempotencyKey(req),
        rawBody: req.body,
        ...(creator ? { creator } : {}),
        ...(extension?.source ? { source: extension.source } : {}),
        ...(extension?.trigger_url ? { triggerUrl: extension.trigger_url } : {}),
      },
      fields as Parameters<typeof runService.create>[1],
    );
    // Refused by the store's check of the key (liveKeyId): answered as authentication would have.
    return created.catch((err: unknown) => {
      throw err instanceof RunError && err.code === "authentication_required"
        ? req.server.refuseRevokedKey(req)
        : err;
    });
  };
  route(app, ops.createRun, (req, _reply, { body }) => create(req, body), createOptions);
  route(app, ops.createRunAlias, (req, _reply, { body }) => create(req, body), createOptions);

  route(app, ops.listRuns, async (req, _reply, { query }) => {
    const page = await runService.list(req.caller!, listInputOf(query, LIMITS.listDefault));
    const base = publicUrl();
    const queued = await runService.queuedPrompts(page.runs);
    return {
      runs: page.runs.map((r) =>
        toRunItem(r, base, { promptLimit: LIST_PROMPT_LIMIT, queuedPrompts: queued.get(r.id) ?? [] }),
      ),
      page_info: {
        has_next_page: page.nextCursor !== undefined,
        ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}),
      },
    };
  });

  route(app, ops.getRun, async (req) => {
    const run = await runService.get(req.caller!, req.params.runId);
    const queued = await runService.queuedPrompts([run]);
    return toRunItem(run, publicUrl(), { queuedPrompts: queued.get(run.id) ?? [] });
  });

  route(
    app,
    ops.followupRun,
    async (req, _reply, { body }) =>
      runService.followup(
        { caller: req.caller!, idempotencyKey: idempotencyKey(req), rawBody: req.body },
        req.params.runId,
        body,
      ),
    withAttachments,
  );

  route(app, ops.cancelRun, async (req, reply, { body }) => {
    const behalf = body?.on_behalf_of;
    const by = behalf && req.caller!.key.role === "admin" ? behalf.creator : undefined;
    const runId = await runService.cancel(
      {
        caller: req.caller!,
        idempotencyKey: idempotencyKey(req),
        rawBody: req.body,
        ...(by ? { creator: by } : {}),
      },
      req.params.runId,
    );
    return reply.type("application/json").send(JSON.stringify(runId));
  });

  route(app, ops.listRunEvents, async (req, reply, { query }) => {
    if (wantsEventStream(req)) {
      const run = await runService.get(req.caller!, req.params.runId);
      return streamRunEvents(req, reply, runService, run.id, resumeAfter(req) ?? query.after ?? 0, {
        everyMs: opts.streamAccessCheckMs,
        // As a request sent now: the key not revoked, the run still in its audience.
        stillSees: async () => {
          try {
            await runService.get(await req.server.reauthenticate(req), run.id);
            return true;
          } catch (err) {
            if (
              err instanceof RunError &&
              ["authentication_required", "resource_not_found"].includes(err.code)
            ) {
              return false;
            }
            throw err;
          }
        },
      });
    }
    const after = query.after ?? 0;
    const events = await runService.events(
      req.caller!,
      req.params.runId,
      after,
      query.limit ?? LIMITS.eventsDefault,
    );
    return { events, next_after: events.at(-1)?.seq ?? after };
  });
}

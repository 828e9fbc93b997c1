import type { FastifyInstance, FastifyRequest } from "fastify";
import type { z } from "zod";
import { attachmentBodyLimit } from "../../model/attachment.ts";
import { toRunItem } from "../../runs/run-item.ts";
import type { RunService } from "../../runs/run-service.ts";
import { resumeAfter, streamRunEvents, wantsEventStream } from "../event-stream.ts";
import { gatherMetadata, listInputOf } from "../list-runs-query.ts";
import { parseQuery } from "../parse.ts";
import { ApiError } from "../problem.ts";
import { describeIssues, LIMITS } from "../schemas/common.ts";
import {
  CancelRunRequestSchema,
  CreateRunRequestSchema,
  EventsQuerySchema,
  FollowupRequestSchema,
  ListRunsQuerySchema,
} from "../schemas/runs.ts";

const LIST_PROMPT_LIMIT = 2000;

function parse<S extends z.ZodType>(schema: S, value: unknown, where: "body" | "query"): z.output<S> {
  if (
    where === "body" &&
    (value === undefined || value === null || typeof value !== "object" || Array.isArray(value))
  ) {
    throw new ApiError("invalid_request", "body: expected a JSON object");
  }
  const result = schema.safeParse(value ?? {});
  if (!result.success) throw new ApiError("invalid_request", describeIssues(result.error));
  return result.data;
}

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
    "create" | "list" | "get" | "followup" | "cancel" | "events" | "transcript" | "onEventAppended"
  >;
  /** Base for session links; known only once the server listens when not configured. */
  publicUrl: () => string;
}

/** API v1 runs: create, list, get, follow up, cancel and the transcript (JSON pages or SSE). */
export async function runRoutes(app: FastifyInstance, opts: RunRoutesOptions): Promise<void> {
  const { runService, publicUrl } = opts;
  const auth = { config: { auth: true } };
  // Only the routes that take attachments admit bodies this large; every other route keeps LIMITS.bodyBytes.
  const withAttachments = { ...auth, bodyLimit: attachmentBodyLimit(LIMITS.bodyBytes) };

  const create = async (req: FastifyRequest) => {
    const { on_behalf_of: behalf, ...body } = parse(CreateRunRequestSchema, req.body, "body");
    // Only an admin key (an integration fronting this service) may say whom a run is for.
    const extension = behalf && req.caller!.key.role === "admin" ? behalf : undefined;
    return runService.create(
      {
        caller: req.caller!,
        idempotencyKey: idempotencyKey(req),
        rawBody: req.body,
        ...(extension?.creator ? { creator: extension.creator } : {}),
        ...(extension?.source ? { source: extension.source } : {}),
        ...(extension?.trigger_url ? { triggerUrl: extension.trigger_url } : {}),
      },
      body as Parameters<typeof runService.create>[1],
    );
  };
  app.post("/api/v1/agent/runs", withAttachments, create);
  app.post("/api/v1/agent/run", withAttachments, create);

  app.get("/api/v1/agent/runs", auth, async (req) => {
    const q = parseQuery(ListRunsQuerySchema, gatherMetadata(req.query));
    const page = await runService.list(req.caller!, listInputOf(q, LIMITS.listDefault));
    const base = publicUrl();
    return {
      runs: page.runs.map((r) => toRunItem(r, base, { promptLimit: LIST_PROMPT_LIMIT })),
      page_info: {
        has_next_page: page.nextCursor !== undefined,
        ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}),
      },
    };
  });

  app.get<{ Params: { runId: string } }>("/api/v1/agent/runs/:runId", auth, async (req) => {
    return toRunItem(await runService.get(req.caller!, req.params.runId), publicUrl());
  });

  app.post<{ Params: { runId: string } }>(
    "/api/v1/agent/runs/:runId/followups",
    withAttachments,
    async (req) => {
      const body = parse(FollowupRequestSchema, req.body, "body");
      return runService.followup(
        { caller: req.caller!, idempotencyKey: idempotencyKey(req), rawBody: req.body },
        req.params.runId,
        body,
      );
    },
  );

  app.post<{ Params: { runId: string } }>("/api/v1/agent/runs/:runId/cancel", auth, async (req, reply) => {
    // The body is optional (API v1 sends none); an admin key may say whom it cancels for.
    const { on_behalf_of: behalf } =
      req.body === undefined || req.body === null ? {} : parse(CancelRunRequestSchema, req.body, "body");
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

  app.get<{ Params: { runId: string } }>("/api/v1/agent/runs/:runId/events", auth, async (req, reply) => {
    const q = parse(EventsQuerySchema, req.query, "query");
    if (wantsEventStream(req)) {
      const run = await runService.get(req.caller!, req.params.runId);
      return streamRunEvents(req, reply, runService, run.id, resumeAfter(req) ?? q.after ?? 0);
    }
    const after = q.after ?? 0;
    const events = await runService.events(
      req.caller!,
      req.params.runId,
      after,
      q.limit ?? LIMITS.eventsDefault,
    );
    return { events, next_after: events.at(-1)?.seq ?? after };
  });
}

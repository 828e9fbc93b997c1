import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { attachmentBodyLimit } from "../../model/attachment.ts";
import { runConversation } from "../../runs/run-conversation.ts";
import type { RunService } from "../../runs/run-service.ts";
import type { ArtifactLinks } from "../artifact-links.ts";
import { json, operation, route } from "../operation.ts";
import { ApiError } from "../problem.ts";
import { LIMITS, NoQuerySchema } from "../schemas/common.ts";
import {
  ConversationResponseSchema,
  ExternalReferenceQuerySchema,
  InterruptResponseSchema,
  RunReferenceResponseSchema,
} from "../schemas/run-insights.ts";
import { FollowupRequestSchema, FollowupResponseSchema } from "../schemas/runs.ts";
import { redirectToTranscript } from "./run-insights.ts";
import { idempotencyKey } from "./runs.ts";

export interface ConversationRoutesOptions {
  runService: Pick<RunService, "get" | "history" | "followup" | "interrupt" | "findByExternalReference">;
  /** Signs the transcript's download links (kind "transcript"). */
  links: ArtifactLinks;
  publicUrl: () => string;
}

const ConversationFollowupResponseSchema = FollowupResponseSchema.extend({
  run_id: z.string().meta({ description: "The run the conversation is: its id is the conversation's." }),
}).meta({ id: "ConversationFollowupResponse" });

const conversationOp = <const P extends string>(path: P) =>
  `/agent/conversations/{conversationId}${path}` as const;

export const conversationOperations = {
  getConversation: operation({
    id: "getConversation",
    method: "GET",
    path: conversationOp(""),
    tag: "runs",
    summary: "A conversation: in Dispatch a run and its follow-ups (the run's conversation)",
    access: "key",
    query: NoQuerySchema,
    responses: {
      200: {
        description: "As GET /agent/runs/{runId}/conversation.",
        content: json(ConversationResponseSchema),
      },
    },
    errors: ["invalid_request", "resource_not_found"],
  }),
  followupConversation: operation({
    id: "followupConversation",
    method: "POST",
    path: conversationOp("/followups"),
    tag: "runs",
    summary: "Send a follow-up to a conversation (its run), routed as a run's follow-up",
    access: "key",
    idempotent: true,
    body: { schema: FollowupRequestSchema, required: true },
    responses: {
      200: {
        description: "Where the follow-up went, and the run.",
        content: json(ConversationFollowupResponseSchema),
      },
    },
    errors: [
      "invalid_request",
      "operation_not_supported",
      "resource_not_found",
      "conflict",
      "idempotency_key_reused",
      "payload_too_large",
    ],
  }),
  interruptConversation: operation({
    id: "interruptConversation",
    method: "POST",
    path: conversationOp("/interrupt"),
    tag: "runs",
    summary: "Stop the agent's current turn in a conversation's run (as POST /agent/runs/{runId}/interrupt)",
    access: "key",
    responses: { 202: { description: "The interrupt is recorded.", content: json(InterruptResponseSchema) } },
    errors: ["invalid_request", "not_authorized", "resource_not_found"],
  }),
  getConversationTranscript: operation({
    id: "getConversationTranscript",
    method: "GET",
    path: conversationOp("/transcript"),
    tag: "runs",
    summary: "Redirects to a signed link to the conversation's transcript (its run's)",
    access: "key",
    query: NoQuerySchema,
    responses: {
      302: { description: "Location is the run's transcript link.", headers: { Location: z.string() } },
    },
    errors: ["invalid_request", "resource_not_found"],
  }),
  downloadConversationScreenshot: operation({
    id: "downloadConversationScreenshot",
    method: "GET",
    path: conversationOp("/screenshots/{screenshotUid}/download"),
    tag: "runs",
    summary: "A computer-use screenshot: Dispatch's agents take none, so every one is unknown (404)",
    access: "key",
    query: NoQuerySchema,
    responses: { 302: { description: "Never: no screenshot exists.", headers: { Location: z.string() } } },
    errors: ["invalid_request", "resource_not_found"],
  }),
  getRunByExternalReference: operation({
    id: "getRunByExternalReference",
    method: "GET",
    path: "/agent/run-by-external-reference",
    tag: "runs",
    summary: "The run behind a pull request, a GitHub issue or comment, a Slack message or a Linear issue",
    description:
      "For a pull request: the run that opened it, else the latest started from it. For a comment or a Slack message: the run it started, else its issue's or thread's. Among the runs the key sees.",
    access: "key",
    query: ExternalReferenceQuerySchema,
    responses: { 200: { description: "The run's id.", content: json(RunReferenceResponseSchema) } },
    errors: ["invalid_request", "resource_not_found"],
  }),
};

/**
 * Oz's conversation-keyed routes. A Dispatch run is its own conversation (conversation_id = run_id, its
 * follow-ups continue it), so each is the run-keyed route of that run. And the lookup of a run by a URL
 * outside Dispatch.
 */
export async function conversationRoutes(
  app: FastifyInstance,
  opts: ConversationRoutesOptions,
): Promise<void> {
  const { runService, links, publicUrl } = opts;
  const ops = conversationOperations;

  route(app, ops.getConversation, async (req) => {
    const { run, events } = await runService.history(req.caller!, req.params.conversationId);
    return runConversation(run.id, events);
  });
  route(
    app,
    ops.followupConversation,
    async (req, _reply, { body }) => {
      const runId = req.params.conversationId;
      const sent = await runService.followup(
        { caller: req.caller!, idempotencyKey: idempotencyKey(req), rawBody: req.body },
        runId,
        body,
      );
      return { ...sent, run_id: runId };
    },
    { bodyLimit: attachmentBodyLimit(LIMITS.bodyBytes) },
  );
  route(app, ops.interruptConversation, async (req, reply) => {
    const run = await runService.interrupt({ caller: req.caller! }, req.params.conversationId);
    return reply.code(202).send({ run_id: run.id });
  });
  route(app, ops.getConversationTranscript, async (req, reply) => {
    const run = await runService.get(req.caller!, req.params.conversationId);
    return redirectToTranscript(reply, links.sign(publicUrl(), req.caller!.team.id, run.id).url);
  });
  route(app, ops.downloadConversationScreenshot, async (req) => {
    await runService.get(req.caller!, req.params.conversationId);
    throw new ApiError(
      "resource_not_found",
      `no screenshot ${req.params.screenshotUid}: Dispatch's agents take no screenshots`,
    );
  });
  route(app, ops.getRunByExternalReference, async (req, _reply, { query }) => {
    const run = await runService.findByExternalReference(req.caller!, query.url);
    return { run_id: run.id };
  });
}

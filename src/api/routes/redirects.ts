import type { FastifyInstance } from "fastify";
import { isTerminal } from "../../model/run-state.ts";
import type { RunService } from "../../runs/run-service.ts";
import { json, operation, route } from "../operation.ts";
import { ApiError } from "../problem.ts";
import { NoQuerySchema } from "../schemas/common.ts";
import { ConversationRedirectResponseSchema, SessionRedirectResponseSchema } from "../schemas/runs.ts";

export interface RedirectRoutesOptions {
  runService: Pick<RunService, "get" | "findBySession">;
}

export const redirectOperations = {
  checkSessionRedirect: operation({
    id: "checkSessionRedirect",
    method: "GET",
    path: "/agent/sessions/{sessionUuid}/redirect",
    tag: "runs",
    summary: "The conversation (run) of a session once its run has ended; no key needed",
    access: "public",
    query: NoQuerySchema,
    responses: {
      200: {
        description: "`{conversation_id}` once the run has ended, `{}` while it runs.",
        content: json(SessionRedirectResponseSchema),
      },
    },
    errors: ["invalid_request", "resource_not_found"],
  }),
  checkConversationRedirect: operation({
    id: "checkConversationRedirect",
    method: "GET",
    path: "/agent/conversations/{conversationId}/redirect",
    tag: "runs",
    summary: "The live session of a conversation (a run's id) while its run has not ended",
    description:
      "Unlike Oz's public endpoint this needs a key of the run's team: the session id it answers is the capability to view the run.",
    access: "key",
    query: NoQuerySchema,
    responses: {
      200: {
        description: "`{session_id}` while the run is queued or running, `{}` once it has ended.",
        content: json(ConversationRedirectResponseSchema),
      },
    },
    errors: ["invalid_request", "resource_not_found"],
  }),
};

/**
 * Oz's link resolvers between a shared session and its conversation. In Dispatch a run is its own
 * conversation (conversation_id = run_id) and its session is the session page.
 *
 * - `/agent/sessions/{session}/redirect` needs no key, as in Oz: the session id is already the capability
 *   to view the run, and it answers the run's id once the run has ended (else `{}`).
 * - `/agent/conversations/{id}/redirect` needs a key of the run's team, unlike Oz's public one: it answers a
 *   session id (while the run has not ended), which is the capability to view, and a run id alone must
 *   not grant that. (The Oz SDK sends
 *   no key for this call; pass it with extra headers.)
 */
export async function redirectRoutes(app: FastifyInstance, opts: RedirectRoutesOptions): Promise<void> {
  const { runService } = opts;

  route(app, redirectOperations.checkSessionRedirect, async (req) => {
    const run = await runService.findBySession(req.params.sessionUuid);
    if (!run) throw new ApiError("resource_not_found", `no session ${req.params.sessionUuid}`);
    return isTerminal(run.state) ? { conversation_id: run.id } : {};
  });

  route(app, redirectOperations.checkConversationRedirect, async (req) => {
    const run = await runService.get(req.caller!, req.params.conversationId);
    return isTerminal(run.state) ? {} : { session_id: run.sessionId };
  });
}

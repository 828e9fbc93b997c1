import type { FastifyInstance } from "fastify";
import { isTerminal } from "../../model/run-state.ts";
import type { RunService } from "../../runs/run-service.ts";
import { parseQuery } from "../parse.ts";
import { ApiError } from "../problem.ts";
import { NoQuerySchema } from "../schemas/common.ts";

export interface RedirectRoutesOptions {
  runService: Pick<RunService, "get" | "findBySession">;
}

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

  app.get<{ Params: { sessionUuid: string } }>(
    "/api/v1/agent/sessions/:sessionUuid/redirect",
    async (req) => {
      parseQuery(NoQuerySchema, req.query);
      const run = await runService.findBySession(req.params.sessionUuid);
      if (!run) throw new ApiError("resource_not_found", `no session ${req.params.sessionUuid}`);
      return isTerminal(run.state) ? { conversation_id: run.id } : {};
    },
  );

  app.get<{ Params: { conversationId: string } }>(
    "/api/v1/agent/conversations/:conversationId/redirect",
    { config: { auth: true } },
    async (req) => {
      parseQuery(NoQuerySchema, req.query);
      const run = await runService.get(req.caller!, req.params.conversationId);
      return isTerminal(run.state) ? {} : { session_id: run.sessionId };
    },
  );
}

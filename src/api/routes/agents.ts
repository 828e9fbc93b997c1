import type { FastifyInstance } from "fastify";
import type { AgentCatalog } from "../../catalog/agents.ts";
import { json, operation, route } from "../operation.ts";
import { ListAgentsQuerySchema, ListAgentsResponseSchema } from "../schemas/catalog.ts";

export interface AgentRoutesOptions {
  agents: Pick<AgentCatalog, "list">;
}

export const agentOperations = {
  listAgents: operation({
    id: "listAgents",
    method: "GET",
    path: "/agent",
    tag: "agents",
    summary: "The skills runs can use without a fetch, grouped by name",
    access: "key",
    query: ListAgentsQuerySchema,
    responses: { 200: { description: "The agents (skills).", content: json(ListAgentsResponseSchema) } },
    errors: ["invalid_request"],
  }),
};

/** GET /agent: the skills runs can use, grouped by name (Oz "agents"). */
export async function agentRoutes(app: FastifyInstance, opts: AgentRoutesOptions): Promise<void> {
  route(app, agentOperations.listAgents, async (req, _reply, { query: q }) => {
    // `refresh` is accepted for Oz clients: local skills are read afresh on every request anyway.
    const agents = await opts.agents.list(req.caller!, {
      ...(q.repo ? { repo: q.repo } : {}),
      ...(q.sort_by ? { sortBy: q.sort_by } : {}),
      ...(q.include_malformed_skills ? { includeMalformed: true } : {}),
    });
    return { agents };
  });
}

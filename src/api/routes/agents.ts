import type { FastifyInstance } from "fastify";
import type { AgentCatalog } from "../../catalog/agents.ts";
import { parseQuery } from "../parse.ts";
import { ListAgentsQuerySchema } from "../schemas/catalog.ts";

export interface AgentRoutesOptions {
  agents: Pick<AgentCatalog, "list">;
}

/** GET /agent: the skills runs can use, grouped by name (Oz "agents"). */
export async function agentRoutes(app: FastifyInstance, opts: AgentRoutesOptions): Promise<void> {
  app.get("/api/v1/agent", { config: { auth: true } }, async (req) => {
    // `refresh` is accepted for Oz clients: local skills are read afresh on every request anyway.
    const q = parseQuery(ListAgentsQuerySchema, req.query);
    const agents = await opts.agents.list(req.caller!, {
      ...(q.repo ? { repo: q.repo } : {}),
      ...(q.sort_by ? { sortBy: q.sort_by } : {}),
      ...(q.include_malformed_skills ? { includeMalformed: true } : {}),
    });
    return { agents };
  });
}

import type { FastifyInstance } from "fastify";
import type { EnvironmentCatalog } from "../../catalog/environments.ts";
import { parseQuery } from "../parse.ts";
import { ListEnvironmentsQuerySchema } from "../schemas/catalog.ts";

export interface EnvironmentRoutesOptions {
  environments: Pick<EnvironmentCatalog, "list">;
}

/** GET /agent/environments: the configured environments with the team's latest run in each. */
export async function environmentRoutes(app: FastifyInstance, opts: EnvironmentRoutesOptions): Promise<void> {
  app.get("/api/v1/agent/environments", { config: { auth: true } }, async (req) => {
    // sort_by is accepted for Oz clients; both orders are by id (see EnvironmentCatalog.list).
    parseQuery(ListEnvironmentsQuerySchema, req.query);
    return { environments: await opts.environments.list(req.caller!) };
  });
}

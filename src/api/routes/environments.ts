import type { FastifyInstance } from "fastify";
import type { EnvironmentCatalog } from "../../catalog/environments.ts";
import { json, operation, route } from "../operation.ts";
import { ListEnvironmentsQuerySchema, ListEnvironmentsResponseSchema } from "../schemas/catalog.ts";

export interface EnvironmentRoutesOptions {
  environments: Pick<EnvironmentCatalog, "list">;
}

export const environmentOperations = {
  listEnvironments: operation({
    id: "listEnvironments",
    method: "GET",
    path: "/agent/environments",
    tag: "environments",
    summary: "The configured environments, with the team's latest run in each",
    access: "key",
    query: ListEnvironmentsQuerySchema,
    responses: { 200: { description: "The environments.", content: json(ListEnvironmentsResponseSchema) } },
    errors: ["invalid_request"],
  }),
};

/** GET /agent/environments: the configured environments with the team's latest run in each. */
export async function environmentRoutes(app: FastifyInstance, opts: EnvironmentRoutesOptions): Promise<void> {
  // sort_by is accepted for Oz clients; both orders are by id (see EnvironmentCatalog.list).
  route(app, environmentOperations.listEnvironments, async (req) => ({
    environments: await opts.environments.list(req.caller!),
  }));
}

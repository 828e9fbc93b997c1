import type { FastifyInstance } from "fastify";
import type { ModelList } from "../../catalog/models.ts";
import { json, operation, route } from "../operation.ts";
import { ListModelsResponseSchema } from "../schemas/catalog.ts";
import { NoQuerySchema } from "../schemas/common.ts";

export interface ModelRoutesOptions {
  /** The configured models; fixed for the life of the process. */
  models: () => ModelList;
}

export const modelOperations = {
  listModels: operation({
    id: "listModels",
    method: "GET",
    path: "/agent/models",
    tag: "models",
    summary: "The models runs can name, and the default",
    access: "key",
    query: NoQuerySchema,
    responses: { 200: { description: "The configured models.", content: json(ListModelsResponseSchema) } },
    errors: ["invalid_request"],
  }),
};

/** GET /agent/models: the models runs can name, and the default. */
export async function modelRoutes(app: FastifyInstance, opts: ModelRoutesOptions): Promise<void> {
  route(app, modelOperations.listModels, () => opts.models());
}

import type { FastifyInstance } from "fastify";
import type { ModelList } from "../../catalog/models.ts";
import { parseQuery } from "../parse.ts";
import { NoQuerySchema } from "../schemas/common.ts";

export interface ModelRoutesOptions {
  /** The configured models; fixed for the life of the process. */
  models: () => ModelList;
}

/** GET /agent/models: the models runs can name, and the default. */
export async function modelRoutes(app: FastifyInstance, opts: ModelRoutesOptions): Promise<void> {
  app.get("/api/v1/agent/models", { config: { auth: true } }, async (req) => {
    parseQuery(NoQuerySchema, req.query);
    return opts.models();
  });
}

import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { json, operation, route } from "../operation.ts";
import { ApiError } from "../problem.ts";
import { NoQuerySchema } from "../schemas/common.ts";

export interface NetworkingRoutesOptions {
  /** DISPATCH_EGRESS_CIDRS: the ranges the operator says runs' traffic leaves from; undefined when not said. */
  egressCidrs: readonly string[] | undefined;
}

export const networkingOperations = {
  getEgressRanges: operation({
    id: "getEgressRanges",
    method: "GET",
    path: "/networking/egress-ranges",
    tag: "networking",
    summary: "The network ranges runs' traffic leaves this deployment from (for allowlists)",
    description:
      "As the operator configured them (DISPATCH_EGRESS_CIDRS); 404 when this deployment publishes none.",
    access: "key",
    query: NoQuerySchema,
    responses: {
      200: {
        description: "IPv4 and IPv6 ranges, deduplicated.",
        content: json(z.object({ cidrs: z.array(z.string()) }).meta({ id: "EgressRangesResponse" })),
      },
    },
    errors: ["invalid_request", "resource_not_found"],
  }),
};

/** GET /networking/egress-ranges: what a firewall elsewhere must admit for this deployment's runs. */
export async function networkingRoutes(app: FastifyInstance, opts: NetworkingRoutesOptions): Promise<void> {
  route(app, networkingOperations.getEgressRanges, () => {
    if (!opts.egressCidrs) {
      throw new ApiError(
        "resource_not_found",
        "this deployment publishes no egress ranges; its operator can set DISPATCH_EGRESS_CIDRS",
      );
    }
    return { cidrs: [...opts.egressCidrs] };
  });
}

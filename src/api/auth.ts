import type { FastifyRequest } from "fastify";
import { API_KEY_PATTERN, hashApiKey } from "../auth/api-keys.ts";
import type { Caller } from "../runs/types.ts";
import type { Store } from "../store/store.ts";
import { ApiError } from "./problem.ts";

/** Resolves `Authorization: Bearer <key>` to its principal and team; runs before the body is read. */
export async function authenticate(req: FastifyRequest, store: Store): Promise<Caller> {
  const header = req.headers.authorization;
  if (!header) {
    throw new ApiError("authentication_required", "send Authorization: Bearer <api key>", {
      "www-authenticate": "Bearer",
    });
  }
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match || !API_KEY_PATTERN.test(match[1]!)) {
    throw new ApiError(
      "authentication_required",
      "the Authorization header is not Bearer dsp_<40 characters>",
      {
        "www-authenticate": "Bearer",
      },
    );
  }
  const caller = await store.findCallerByKeyHash(hashApiKey(match[1]!));
  if (!caller) {
    throw new ApiError("authentication_required", "unknown or revoked API key", {
      "www-authenticate": 'Bearer error="invalid_token"',
    });
  }
  return caller;
}

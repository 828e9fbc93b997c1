import type { FastifyRequest } from "fastify";
import { API_KEY_PATTERN, hashApiKey } from "../auth/api-keys.ts";
import type { Caller } from "../model/identity.ts";
import type { WebSession } from "../model/web-session.ts";
import type { Store } from "../store/store.ts";
import { ApiError } from "./problem.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the auth hook on routes that need an API key. */
    caller?: Caller;
    /** Set by the web app (sessionOf) once the request's session cookie is found live. */
    webSession?: WebSession;
  }
  interface FastifyContextConfig {
    /** Route needs an API key (everything under /api/v1 but the OpenAPI document). */
    auth?: boolean;
    /** Route needs an admin key (team administration such as agent identities). */
    admin?: boolean;
  }
}

/** What authentication reads: callers by key hash, and revocations to forget cached ones. */
export type ApiKeyLookup = Pick<Store, "findCallerByKeyHash" | "signals">;

const CACHE_TTL_MS = 5_000;
const CACHE_MAX = 10_000;

/**
 * Resolves `Authorization: Bearer <key>` to its principal and team; runs before the body is read.
 * Callers are cached for a few seconds (a store lookup per request was a tenth of a GET's cost); a key
 * revoked in this process is forgotten at once, one revoked by another process within CACHE_TTL_MS.
 *
 * The cache is keyed by the Authorization header as sent, so a hit costs one map lookup: neither the
 * header's pattern nor the key's SHA-256 is computed again (together a few percent of a GET). It holds
 * the keys themselves, as the request does, for at most CACHE_TTL_MS.
 */
export class Authenticator {
  private readonly cache = new Map<string, { caller: Caller; until: number }>();
  private readonly store: ApiKeyLookup;

  constructor(store: ApiKeyLookup) {
    this.store = store;
    store.signals.on("api_key_revoked", () => this.cache.clear());
  }

  /** The caller of a header seen within CACHE_TTL_MS, without waiting; undefined when a lookup is needed. */
  cached(req: FastifyRequest, now = Date.now()): Caller | undefined {
    const header = req.headers.authorization;
    if (!header) return undefined;
    const cached = this.cache.get(header);
    return cached && cached.until > now ? cached.caller : undefined;
  }

  async authenticate(req: FastifyRequest): Promise<Caller> {
    const header = req.headers.authorization;
    if (!header) {
      throw new ApiError("authentication_required", "send Authorization: Bearer <api key>", {
        "www-authenticate": "Bearer",
      });
    }
    const now = Date.now();
    const hit = this.cached(req, now);
    if (hit) return hit;
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
    const caller = await this.store.findCallerByKeyHash(hashApiKey(match[1]!));
    if (!caller) {
      this.cache.delete(header);
      throw new ApiError("authentication_required", "unknown or revoked API key", {
        "www-authenticate": 'Bearer error="invalid_token"',
      });
    }
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(header, { caller, until: now + CACHE_TTL_MS });
    return caller;
  }
}

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
  interface FastifyInstance {
    /**
     * Authenticates a request's API key again, as a request sent now would be (a revoked key throws): an
     * open event stream asks this while it lasts.
     */
    reauthenticate(req: FastifyRequest): Promise<Caller>;
    /**
     * Authenticates a request's key as one whose write does not check the key itself: on PostgreSQL it is
     * looked up in the store. A route with keyCheckedByWrite asks this before a write that is not its own
     * (a create that continues a conversation is a follow-up).
     */
    authenticateWrite(req: FastifyRequest): Promise<Caller>;
    /**
     * The answer to a write the store refused because the request's key is no longer live
     * (keyCheckedByWrite): the key's cached caller is forgotten, as a refused lookup forgets it, so the
     * next request with it is refused too instead of waiting for the revocation's notification.
     */
    refuseRevokedKey(req: FastifyRequest): ApiError;
  }
  interface FastifyContextConfig {
    /** Route needs an API key (everything under /api/v1 but the OpenAPI document). */
    auth?: boolean;
    /** Route needs an admin key (team administration such as agent identities). */
    admin?: boolean;
    /**
     * The route's write checks its API key itself, in the statement that writes (a create hands
     * `liveKeyId` to the store's createRun): a cached caller is enough to reach it on PostgreSQL too.
     */
    keyCheckedByWrite?: boolean;
  }
}

/** What authentication reads: callers by key hash, and what tells a cached caller may have been revoked. */
export type ApiKeyLookup = Pick<
  Store,
  "findCallerByKeyHash" | "signals" | "keyRevocationMark" | "keyRevocationMarkExact"
>;

const CACHE_TTL_MS = 5_000;

/** The answer to a key that is unknown or revoked, whether authentication or the write found it so. */
function keyRefused(): ApiError {
  return new ApiError("authentication_required", "unknown or revoked API key", {
    "www-authenticate": 'Bearer error="invalid_token"',
  });
}
const CACHE_MAX = 10_000;

/**
 * Resolves `Authorization: Bearer <key>` to its principal and team; runs before the body is read.
 * Callers are cached for a few seconds (a store lookup per request was a tenth of a GET's cost), and a
 * revoked key is refused from its next request on, in every process:
 * - revoked in this process: the store's `api_key_revoked` signal empties the cache before the revocation
 *   is answered;
 * - revoked by another process: a cached caller is used only while the store's keyRevocationMark is what
 *   it was when the caller was looked up. On SQLite the mark is the database's change counter, so a
 *   `dispatch keys revoke` (or a replica on the same file) is seen by the next request. On PostgreSQL the
 *   revocation arrives as a notification just after its commit; there a request that changes something
 *   is always checked against the store, so a revoked key changes nothing once its revocation has
 *   committed, and reads follow within the notification's delay — and are not cached while notifications
 *   cannot arrive. A route whose write checks the key itself (keyCheckedByWrite: the create, whose
 *   statement inserts only while the key is live) is let through with a cached caller, which saves the
 *   create a round trip and keeps the rule: the store refuses the write of a revoked key.
 *
 * The cache is keyed by the Authorization header as sent, so a hit costs one map lookup and reading the
 * mark (about a microsecond): neither the header's pattern nor the key's SHA-256 is computed again. It
 * holds the keys themselves, as the request does, for at most CACHE_TTL_MS.
 */
export class Authenticator {
  private readonly cache = new Map<string, { caller: Caller; until: number; mark: number }>();
  private readonly store: ApiKeyLookup;
  /** Revocation signals received: a lookup that one overtook is not cached. */
  private revocations = 0;

  constructor(store: ApiKeyLookup) {
    this.store = store;
    store.signals.on("api_key_revoked", () => {
      this.revocations++;
      this.cache.clear();
    });
  }

  /** The caller of a header seen within CACHE_TTL_MS, without waiting; undefined when a lookup is needed. */
  cached(
    req: FastifyRequest,
    now = Date.now(),
    keyCheckedByWrite = req.routeOptions.config.keyCheckedByWrite === true,
  ): Caller | undefined {
    const header = req.headers.authorization;
    if (!header) return undefined;
    const cached = this.cache.get(header);
    if (!cached || cached.until <= now || cached.mark !== this.store.keyRevocationMark()) return undefined;
    if (
      !this.store.keyRevocationMarkExact &&
      !keyCheckedByWrite &&
      req.method !== "GET" &&
      req.method !== "HEAD"
    ) {
      return undefined;
    }
    return cached.caller;
  }

  /** A write found the request's key revoked: forget its caller and answer as authentication would. */
  refused(req: FastifyRequest): ApiError {
    if (req.headers.authorization) this.cache.delete(req.headers.authorization);
    return keyRefused();
  }

  /** `keyCheckedByWrite` false: as a write that does not check the key itself, whatever the route says. */
  async authenticate(
    req: FastifyRequest,
    keyCheckedByWrite = req.routeOptions.config.keyCheckedByWrite === true,
  ): Promise<Caller> {
    const header = req.headers.authorization;
    if (!header) {
      throw new ApiError("authentication_required", "send Authorization: Bearer <api key>", {
        "www-authenticate": "Bearer",
      });
    }
    const now = Date.now();
    const hit = this.cached(req, now, keyCheckedByWrite);
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
    // Read before the lookup: a revocation that lands while it runs changes the mark or is signalled, so
    // its answer is not kept and the next request looks again.
    const mark = this.store.keyRevocationMark();
    const revocations = this.revocations;
    const caller = await this.store.findCallerByKeyHash(hashApiKey(match[1]!));
    if (!caller) {
      this.cache.delete(header);
      throw keyRefused();
    }
    if (mark === undefined || revocations !== this.revocations) return caller;
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(header, { caller, until: now + CACHE_TTL_MS, mark });
    return caller;
  }
}

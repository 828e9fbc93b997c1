import type { FastifyReply, FastifyRequest } from "fastify";
import { clientAddress } from "../../api/client-address.ts";
import { RateLimiter } from "../../api/rate-limit.ts";
import { sendPage } from "../html.ts";

/**
 * Sign-in attempts a client (an address: clientAddress) may make: opening or confirming a login link,
 * posting the admin key form, starting or completing a GitHub sign-in. A person signs in with two or
 * three of these; someone trying keys or flooding starts is slowed down alone, without locking anyone
 * else out.
 */
export const SIGN_IN_ATTEMPTS_PER_MINUTE = 20;
const SIGN_IN_ATTEMPTS_BURST = 10;
/**
 * GitHub sign-ins started per minute by everyone together: each stores a row for whoever asks,
 * unauthenticated, so a crowd of addresses is bounded too. Far above what people need, so that one client
 * (held to its own limit) cannot reach it.
 */
export const GITHUB_STARTS_PER_MINUTE = 600;
const GITHUB_STARTS_BURST = 200;
/** Clients remembered at once; past it, new ones share a bucket (RateLimiter). */
const CLIENTS_MAX = 10_000;

export class SignInLimits {
  private readonly attempts = new RateLimiter(
    SIGN_IN_ATTEMPTS_PER_MINUTE,
    SIGN_IN_ATTEMPTS_BURST,
    CLIENTS_MAX,
  );
  private readonly githubStarts = new RateLimiter(GITHUB_STARTS_PER_MINUTE, GITHUB_STARTS_BURST);
  private readonly now: () => Date;

  constructor(now: () => Date) {
    this.now = now;
  }

  /**
   * Takes one attempt for the request's client. When it has none left: the 429 answer (with Retry-After),
   * which the route returns without doing anything more.
   */
  refuseAttempt(req: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
    const wait = this.attempts.take(clientAddress(req), this.now().getTime());
    return wait > 0 ? tooMany(reply, wait, "Too many sign-in attempts came from your address") : undefined;
  }

  /** As refuseAttempt, and within the ceiling of GitHub sign-ins started by everyone. */
  refuseGitHubStart(req: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
    const refused = this.refuseAttempt(req, reply);
    if (refused) return refused;
    const wait = this.githubStarts.take("all", this.now().getTime());
    return wait > 0 ? tooMany(reply, wait, "Too many GitHub sign-ins were started") : undefined;
  }
}

function tooMany(reply: FastifyReply, waitSeconds: number, what: string): FastifyReply {
  reply.header("retry-after", String(waitSeconds));
  return sendPage(
    reply,
    429,
    "Try again shortly",
    `<h1>Try again shortly</h1><p role="alert">${what} in the last minute. Try again in ${waitSeconds} second${waitSeconds === 1 ? "" : "s"}.</p>`,
  );
}

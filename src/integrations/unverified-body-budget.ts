import { Transform } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { RunError } from "../model/errors.ts";

/**
 * The bytes of Slack and GitHub request bodies held in memory before their signature is checked, across
 * all requests of a route. Anyone can send such a body, so each request's cap alone does not bound memory
 * (many concurrent bodies just under the cap would); once the budget is spent, further bodies are refused
 * with 503 and Retry-After until the requests holding it are answered. Real deliveries are far smaller than
 * the budget, so they pass whenever an attack is not filling it.
 */
export class UnverifiedBodyBudget {
  readonly limitBytes: number;
  private held = 0;

  constructor(limitBytes: number) {
    this.limitBytes = limitBytes;
  }

  /** Bytes held now (request bodies not yet answered). */
  get heldBytes(): number {
    return this.held;
  }

  /**
   * Counts a body whose length is declared (Content-Length, at most `limit`) in full before it arrives:
   * node's parser never hands a request more bytes than it declared, so nothing needs to count them one
   * chunk at a time, and a stream per request is spared (`meter`'s Transform was ≈ 15 % of the CPU of a
   * Slack acknowledgement: bench/README.md, "Fourth round"). Returns the error to answer with once the
   * budget is spent; otherwise the bytes are given back when the response ends.
   */
  holdDeclared(req: FastifyRequest, reply: FastifyReply, bytes: number): RunError | undefined {
    if (this.held + bytes > this.limitBytes) return spent(req, reply);
    this.held += bytes;
    reply.raw.once("close", () => {
      this.held -= bytes;
    });
    return undefined;
  }

  /**
   * Counts the body of `req` as it arrives, failing with `tooLarge()` past `limit` bytes and with 503 once
   * the budget is spent; what it counted is given back when the response ends.
   */
  meter(
    req: FastifyRequest,
    reply: FastifyReply,
    payload: NodeJS.ReadableStream,
    limit: number,
    tooLarge: () => Error,
  ): Transform {
    let received = 0;
    reply.raw.once("close", () => {
      this.held -= received;
      received = 0;
    });
    const budget = this;
    const metered = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        if (received + chunk.length > limit) return done(tooLarge());
        if (budget.held + chunk.length > budget.limitBytes) return done(spent(req, reply));
        received += chunk.length;
        budget.held += chunk.length;
        done(null, chunk);
      },
    });
    payload.on("error", (err) => metered.destroy(err));
    return payload.pipe(metered);
  }
}

/**
 * The answer once the budget is spent: 503, and the connection closed so that the rest of the body is not
 * read.
 */
function spent(req: FastifyRequest, reply: FastifyReply): RunError {
  reply.header("connection", "close");
  return new RunError(
    "resource_unavailable",
    `${req.routeOptions.url ?? "webhook"}: too many request bodies are being received at once; retry shortly`,
    { retryAfterSeconds: 5 },
  );
}

/** What the Slack and GitHub routes may hold together in unverified bodies, by default. */
export const DEFAULT_UNVERIFIED_BODY_BUDGET_BYTES = 64 * 1024 * 1024;

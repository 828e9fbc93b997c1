import type { FastifyReply, FastifyRequest } from "fastify";
import { clientAddress } from "./client-address.ts";
import { ApiError } from "./problem.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** The event streams this server has open, and its caps on them (buildServer). */
    eventStreams: EventStreamSlots;
  }
}

/** DISPATCH_MAX_EVENT_STREAMS, _PER_CLIENT and _PER_RUN. */
export interface EventStreamCaps {
  /** Streams open at once in all: below DISPATCH_MAX_CONNECTIONS, so that other requests still connect. */
  max: number;
  perClient: number;
  perRun: number;
}

/** What a refused stream is told to wait: streams end as people close pages, not on a timer. */
const RETRY_AFTER_SECONDS = 10;

/**
 * Counts the open event streams (API transcripts, session and run pages, the dashboard) in all, per
 * client and per run, and refuses one over a cap: an event stream holds a connection for as long as its
 * client likes, so without caps one client could hold every connection the server accepts, and webhooks
 * and health checks would find none.
 */
export class EventStreamSlots {
  readonly #caps: EventStreamCaps;
  #open = 0;
  readonly #byClient = new Map<string, number>();
  readonly #byRun = new Map<string, number>();

  constructor(caps: EventStreamCaps) {
    this.#caps = caps;
  }

  /** Streams open now (for tests and metrics). */
  get open(): number {
    return this.#open;
  }

  /** Takes a slot for a stream of `client` (and of `runId`); the release, or why not. */
  take(client: string, runId: string | undefined): { release: () => void } | { refused: string } {
    const caps = this.#caps;
    if ((this.#byClient.get(client) ?? 0) >= caps.perClient) {
      return {
        refused: `this client has ${caps.perClient} event streams open, the most one client may (DISPATCH_MAX_EVENT_STREAMS_PER_CLIENT): close one first`,
      };
    }
    if (runId !== undefined && (this.#byRun.get(runId) ?? 0) >= caps.perRun) {
      return {
        refused: `this run has ${caps.perRun} event streams open, the most one run may (DISPATCH_MAX_EVENT_STREAMS_PER_RUN)`,
      };
    }
    if (this.#open >= caps.max) {
      return {
        refused: `the server has ${caps.max} event streams open, the most it serves (DISPATCH_MAX_EVENT_STREAMS)`,
      };
    }
    this.#open++;
    increment(this.#byClient, client, 1);
    if (runId !== undefined) increment(this.#byRun, runId, 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#open--;
        increment(this.#byClient, client, -1);
        if (runId !== undefined) increment(this.#byRun, runId, -1);
      },
    };
  }
}

function increment(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}

/**
 * Admits the event stream that `req` asks for (of `runId`, when it follows one run) before its answer
 * starts, and frees its slot when the response closes, however it ends. Over a cap it throws 429
 * rate_limited with Retry-After, naming the cap. Every route that streams calls it.
 *
 * The client is the API key (on the API), else the web session (signed-in pages: set by the web app once
 * it has found the session live), else the address (the public session page): each only once it is known
 * to be genuine, so that a client cannot take fresh slots by making up keys or cookies.
 */
export function admitEventStream(req: FastifyRequest, reply: FastifyReply, runId?: string): void {
  const client = req.caller
    ? `key:${req.caller.key.id}`
    : req.webSession
      ? `session:${req.webSession.idHash}`
      : `address:${clientAddress(req)}`;
  const slot = req.server.eventStreams.take(client, runId);
  if ("refused" in slot) {
    throw new ApiError("rate_limited", `${slot.refused}; retry in ${RETRY_AFTER_SECONDS} s`, {
      "retry-after": String(RETRY_AFTER_SECONDS),
    });
  }
  reply.raw.on("close", slot.release);
}

import { once } from "node:events";
import type { ServerResponse } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { RunService } from "../runs/run-service.ts";
import { EVENT_DATA_MAX_BYTES } from "../store/event-cap.ts";
import { ApiError } from "./problem.ts";

const KEEPALIVE_MS = 15_000;
const BACKSTOP_MS = 2_000;
/**
 * What one read of the transcript may hold: events are at most EVENT_DATA_MAX_BYTES each, so a batch of
 * this many is bounded in bytes whatever the run printed, and a client that stops reading pins no more.
 */
export const STREAM_BATCH_BYTES = 2 * 1024 * 1024;
const BATCH = Math.floor(STREAM_BATCH_BYTES / EVENT_DATA_MAX_BYTES);

/** What a stream reads: the transcript after a seq, and the signal that a transcript grew. */
export type RunTranscript = Pick<RunService, "transcript" | "onEventAppended">;

export function wantsEventStream(req: FastifyRequest): boolean {
  return (req.headers.accept ?? "").includes("text/event-stream");
}

/** `Last-Event-ID` from a reconnecting EventSource; a malformed one is a client error, not ignored. */
export function resumeAfter(req: FastifyRequest): number | undefined {
  const raw = req.headers["last-event-id"];
  if (raw === undefined || raw === "") return undefined;
  if (typeof raw !== "string" || !/^\d{1,15}$/.test(raw)) {
    throw new ApiError("invalid_request", "Last-Event-ID: must be the id of an event this stream sent");
  }
  return Number(raw);
}

/**
 * Streams a run's transcript as Server-Sent Events: every event once, in order, `id: <seq>` so that a
 * reconnect with Last-Event-ID resumes exactly after the last one received. New events are announced by
 * the store's signals; each announcement triggers a read of everything after the last seq sent, so a
 * missed or coalesced signal can delay an event but never drop or repeat it. The transcript is read one
 * bounded batch at a time, and not again until the socket has taken the previous one (`drain`).
 */
export async function streamRunEvents(
  req: FastifyRequest,
  reply: FastifyReply,
  runs: RunTranscript,
  runId: string,
  after: number,
): Promise<void> {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no",
    "x-request-id": req.id,
  });
  res.write(": stream open\n\n");

  const log = req.log.child({ component: "event-stream" });
  let lastSent = after;
  let closed = false;
  let draining = false;
  let again = false;

  const drain = async (): Promise<void> => {
    if (draining) {
      again = true;
      return;
    }
    draining = true;
    try {
      do {
        again = false;
        for (;;) {
          if (closed) return;
          const events = await runs.transcript(runId, lastSent, BATCH);
          for (const event of events) {
            if (closed) return;
            const ok = res.write(`id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`);
            lastSent = event.seq;
            if (!ok) await drained(res);
          }
          if (events.length < BATCH) break;
        }
      } while (again && !closed);
    } catch (err) {
      log.warn({ err, runId }, "event stream read failed; closing the stream");
      res.end();
    } finally {
      draining = false;
    }
  };

  const unsubscribe = runs.onEventAppended((id) => {
    if (id === runId) void drain();
  });
  const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
  // Backstop for signals that cannot reach this process (another replica wrote the event).
  const backstop = setInterval(() => void drain(), BACKSTOP_MS);
  const close = () => {
    closed = true;
    clearInterval(keepalive);
    clearInterval(backstop);
    unsubscribe();
  };
  res.on("close", close);
  await drain();
}

/** Resolves once `res` has flushed what it buffered, or has closed (then nothing more is written). */
async function drained(res: ServerResponse): Promise<void> {
  const ac = new AbortController();
  try {
    await Promise.race([
      once(res, "drain", { signal: ac.signal }),
      once(res, "close", { signal: ac.signal }),
    ]);
  } finally {
    ac.abort();
  }
}

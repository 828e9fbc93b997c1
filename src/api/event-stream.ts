import type { FastifyReply, FastifyRequest } from "fastify";
import type { Store } from "../store/store.ts";

const KEEPALIVE_MS = 15_000;
const BACKSTOP_MS = 2_000;
const BATCH = 500;

/**
 * Streams a run's transcript as Server-Sent Events: every event once, in order, `id: <seq>` so that a
 * reconnect with Last-Event-ID resumes exactly after the last one received. New events are announced by
 * the store's signals; each announcement triggers a read of everything after the last seq sent, so a
 * missed or coalesced signal can delay an event but never drop or repeat it.
 */
export async function streamRunEvents(
  req: FastifyRequest,
  reply: FastifyReply,
  store: Store,
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
          const events = await store.listEvents(runId, lastSent, BATCH);
          for (const event of events) {
            const ok = res.write(`id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`);
            lastSent = event.seq;
            if (!ok) await new Promise((resolve) => res.once("drain", resolve));
          }
          if (events.length < BATCH) break;
        }
      } while (again && !closed);
    } catch (err) {
      req.log.warn({ err, runId }, "event stream read failed; closing the stream");
      res.end();
    } finally {
      draining = false;
    }
  };

  const onEvent = (id: string) => {
    if (id === runId) void drain();
  };
  store.signals.on("event_appended", onEvent);
  const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
  // Backstop for signals that cannot reach this process (another replica wrote the event).
  const backstop = setInterval(() => void drain(), BACKSTOP_MS);
  const close = () => {
    closed = true;
    clearInterval(keepalive);
    clearInterval(backstop);
    store.signals.off("event_appended", onEvent);
  };
  res.on("close", close);
  await drain();
}

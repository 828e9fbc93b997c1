import type { FastifyReply, FastifyRequest } from "fastify";
import { admitEventStream } from "./event-stream-slots.ts";
import { ApiError } from "./problem.ts";
import { RunEventFanout, type RunTranscript } from "./run-event-fanout.ts";

export { type RunTranscript, STREAM_BATCH_BYTES } from "./run-event-fanout.ts";

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

/** One fan-out per transcript source (the app's RunService), shared by every route that streams events. */
const fanouts = new WeakMap<RunTranscript, RunEventFanout>();

/**
 * Streams a run's transcript as Server-Sent Events: every event once, in order, `id: <seq>` so that a
 * reconnect with Last-Event-ID resumes exactly after the last one received. The stream is served from
 * the run's shared reader (RunEventFanout): new events are read and serialised once for all its caught-up
 * watchers, whatever their number. The caller has already checked that the asker may see `runId`. A
 * stream over the caps (event-stream-slots.ts) is refused with 429 before anything is sent.
 */
export async function streamRunEvents(
  req: FastifyRequest,
  reply: FastifyReply,
  runs: RunTranscript,
  runId: string,
  after: number,
): Promise<void> {
  admitEventStream(req, reply, runId);
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
  let fanout = fanouts.get(runs);
  if (!fanout) {
    fanout = new RunEventFanout(runs);
    fanouts.set(runs, fanout);
  }
  fanout.watch(runId, res, after, req.log.child({ component: "event-stream" }));
}

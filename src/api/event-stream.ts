import type { ServerResponse } from "node:http";
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from "fastify";
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

/**
 * Whether whoever opened a stream may still see its run, asked again every `everyMs`: the access rule's
 * answer changes while a stream is open (someone leaves a private channel or loses a repository
 * permission, a session ends, a key is revoked), and it is the only check a stream passed.
 */
export interface StreamAccessCheck {
  stillSees: () => Promise<boolean>;
  everyMs: number;
}

/** One fan-out per transcript source (the app's RunService), shared by every route that streams events. */
const fanouts = new WeakMap<RunTranscript, RunEventFanout>();

/**
 * Streams a run's transcript as Server-Sent Events: every event once, in order, `id: <seq>` so that a
 * reconnect with Last-Event-ID resumes exactly after the last one received. The stream is served from
 * the run's shared reader (RunEventFanout): new events are read and serialised once for all its caught-up
 * watchers, whatever their number. The caller has already checked that the asker may see `runId`, and
 * `access` asks again while the stream is open (none for the session page: its link is the capability).
 * A stream over the caps (event-stream-slots.ts) is refused with 429 before anything is sent.
 */
export async function streamRunEvents(
  req: FastifyRequest,
  reply: FastifyReply,
  runs: RunTranscript,
  runId: string,
  after: number,
  access?: StreamAccessCheck,
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
  const log = req.log.child({ component: "event-stream" });
  fanout.watch(runId, res, after, log);
  if (access) endWhenAccessEnds(res, access, log);
}

/**
 * Ends `res` once `access` says its viewer no longer sees the run, or cannot say (fail closed: a client
 * that still may reconnects with Last-Event-ID and resumes where it was).
 */
function endWhenAccessEnds(res: ServerResponse, access: StreamAccessCheck, log: FastifyBaseLogger): void {
  let asking = false;
  const timer = setInterval(async () => {
    if (asking) return;
    asking = true;
    let sees = false;
    try {
      sees = await access.stillSees();
    } catch (err) {
      log.warn({ err }, "could not check whether the stream's viewer still sees the run; ending it");
    } finally {
      asking = false;
    }
    if (sees || res.destroyed) return;
    clearInterval(timer);
    res.end(": this stream's viewer no longer sees the run\n\n");
  }, access.everyMs);
  timer.unref();
  res.on("close", () => clearInterval(timer));
}

import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { type RunTranscript, resumeAfter, streamRunEvents } from "../../src/api/event-stream.ts";
import { EventStreamSlots } from "../../src/api/event-stream-slots.ts";
import type { RunEvent } from "../../src/model/run.ts";
import { EVENT_DATA_MAX_BYTES } from "../../src/store/event-cap.ts";
import { waitFor } from "../support/dispatch.ts";
import { SseStream } from "../support/sse.ts";

/**
 * Transcripts held in memory, announced like the store announces them, and every read counted: what the
 * event streams cost the store is what this counts.
 */
class CountedTranscripts implements RunTranscript {
  readonly #events = new Map<string, RunEvent[]>();
  readonly #signals = new EventEmitter<{ appended: [runId: string] }>();
  readonly reads = new Map<string, number>();

  append(runId: string, data: Record<string, unknown> = {}): number {
    const events = this.#events.get(runId) ?? [];
    this.#events.set(runId, events);
    const seq = events.length + 1;
    events.push({ seq, at: new Date().toISOString(), type: "log", data: { run: runId, ...data } });
    this.#signals.emit("appended", runId);
    return seq;
  }

  async transcript(runId: string, after: number, limit: number): Promise<RunEvent[]> {
    this.reads.set(runId, (this.reads.get(runId) ?? 0) + 1);
    // A store answers later than at once: other reads and appends interleave with this one.
    await new Promise((r) => setImmediate(r));
    return (this.#events.get(runId) ?? []).filter((e) => e.seq > after).slice(0, limit);
  }

  onEventAppended(listener: (runId: string) => void): () => void {
    this.#signals.on("appended", listener);
    return () => this.#signals.off("appended", listener);
  }
}

/** One client of an event stream: every event it received, as parsed from the wire. */
interface Watcher {
  name: string;
  after: number;
  stream: SseStream;
  seqs: number[];
  runs: Set<unknown>;
}

let app: FastifyInstance | undefined;
const open: Watcher[] = [];
afterEach(async () => {
  for (const w of open.splice(0)) w.stream.close();
  await app?.close();
  app = undefined;
});

/** Serves streamRunEvents as the API route does; `written` sees what each named stream was handed. */
async function serve(
  transcripts: RunTranscript,
  onStream?: (name: string, res: ServerResponse) => void,
): Promise<string> {
  app = Fastify({ forceCloseConnections: true });
  // As buildServer does, with caps no test here reaches.
  app.decorate("eventStreams", new EventStreamSlots({ max: 10_000, perClient: 10_000, perRun: 10_000 }));
  app.get<{ Params: { runId: string }; Querystring: { after?: string } }>(
    "/runs/:runId/events",
    async (req, reply) => {
      onStream?.(String(req.headers["x-watcher"]), reply.raw);
      const after = resumeAfter(req) ?? Number(req.query.after ?? 0);
      return streamRunEvents(req, reply, transcripts, req.params.runId, after);
    },
  );
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as { port: number };
  return `http://127.0.0.1:${port}`;
}

async function watch(url: string, runId: string, name: string, after = 0): Promise<Watcher> {
  const headers: Record<string, string> = { "x-watcher": name };
  if (after > 0) headers["last-event-id"] = String(after);
  const stream = await SseStream.open(`${url}/runs/${runId}/events`, { headers });
  if (stream.status !== 200) throw new Error(`${name}: answered ${stream.status}`);
  const w: Watcher = { name, after, stream, seqs: [], runs: new Set() };
  open.push(w);
  return w;
}

/** The seqs the watcher received so far, taking in its new events: each one's SSE id is its seq. */
function received(w: Watcher): number[] {
  for (const message of w.stream.events.slice(w.seqs.length)) {
    const event = JSON.parse(message.data) as RunEvent;
    expect(message.id).toBe(String(event.seq));
    w.seqs.push(event.seq);
    w.runs.add(event.data.run);
  }
  return w.seqs;
}

const upTo = (after: number, last: number) => Array.from({ length: last - after }, (_, i) => after + i + 1);

async function allReceived(watchers: Watcher[], last: number) {
  await waitFor(() => watchers.every((w) => received(w).at(-1) === last), {
    timeoutMs: 30_000,
    what: `every watcher to receive event ${last}`,
  });
}

describe("many watchers of one run's event stream", () => {
  it("each receives every event once, in order, and the store is read once per append whatever their number", async () => {
    const transcripts = new CountedTranscripts();
    const url = await serve(transcripts);
    for (let i = 0; i < 10; i++) transcripts.append("run-a");

    const early = await Promise.all(Array.from({ length: 25 }, (_, i) => watch(url, "run-a", `early-${i}`)));
    for (let i = 0; i < 10; i++) transcripts.append("run-a");
    await allReceived(early, 20);
    // Joining mid-run with a cursor (a reconnect's Last-Event-ID), while events keep coming.
    const resumed: Watcher[] = [];
    for (let i = 0; i < 25; i++) {
      resumed.push(await watch(url, "run-a", `resumed-${i}`, (i * 7) % 20));
      if (i % 5 === 0) transcripts.append("run-a");
    }
    const other = await Promise.all(Array.from({ length: 3 }, (_, i) => watch(url, "run-b", `other-${i}`)));
    const watchers = [...early, ...resumed];
    await allReceived(watchers, 25);

    // Every watcher caught up: from here on they share the run's reader.
    const readsBefore = transcripts.reads.get("run-a") ?? 0;
    const appends = 30;
    for (let i = 0; i < appends; i++) {
      const seq = transcripts.append("run-a");
      if (i % 10 === 0) transcripts.append("run-b");
      await allReceived(watchers, seq);
    }
    const reads = (transcripts.reads.get("run-a") ?? 0) - readsBefore;
    await allReceived(other, 3);

    for (const w of watchers) expect(received(w), w.name).toEqual(upTo(w.after, 55));
    for (const w of watchers) expect([...w.runs], w.name).toEqual(["run-a"]);
    for (const w of other) expect([...w.runs], w.name).toEqual(["run-b"]);
    for (const w of other) expect(received(w), w.name).toEqual(upTo(0, 3));
    // One read per append (a coalesced signal saves one; the 2 s backstop may add one): 50 watchers each
    // reading for themselves would make 1,500.
    expect(reads).toBeGreaterThan(0);
    expect(reads).toBeLessThan(appends * 2);
  });

  it("lets a watcher whose socket is full fall behind without holding its events, then catch up exactly", async () => {
    const transcripts = new CountedTranscripts();
    const slow: { res?: ServerResponse; fullAt?: number } = {};
    const url = await serve(transcripts, (name, res) => {
      if (name !== "slow") return;
      slow.res = res;
      const write = res.write.bind(res) as (chunk: string) => boolean;
      res.write = ((chunk: string) => {
        const ok = write(chunk);
        if (!ok) slow.fullAt ??= Number(/^id: (\d+)/.exec(chunk)?.[1] ?? Number.NaN);
        return ok;
      }) as ServerResponse["write"];
    });
    const output = "x".repeat(EVENT_DATA_MAX_BYTES - 200);
    transcripts.append("run-c", { output });
    const fast = await Promise.all(Array.from({ length: 4 }, (_, i) => watch(url, "run-c", `fast-${i}`)));
    const lagging = await watch(url, "run-c", "slow");
    await allReceived([...fast, lagging], 1);

    // The slow client stops reading; large events keep coming until its socket is full, and then some.
    lagging.stream.pause();
    let last = 1;
    let extra = 0;
    while (extra < 20) {
      for (let i = 0; i < 10; i++) last = transcripts.append("run-c", { output });
      await allReceived(fast, last);
      if (slow.fullAt !== undefined) extra += 10;
      expect(last, "the slow client's socket never filled").toBeLessThan(2000);
    }
    // What the server holds for it: the response's high-water mark and the one event that crossed it.
    expect(slow.res!.writableLength).toBeLessThanOrEqual(
      slow.res!.writableHighWaterMark + EVENT_DATA_MAX_BYTES + 1024,
    );

    lagging.stream.resume();
    last = transcripts.append("run-c", { output });
    await allReceived([...fast, lagging], last);
    for (const w of [...fast, lagging]) expect(received(w), w.name).toEqual(upTo(0, last));
  });
});

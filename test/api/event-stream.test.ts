import type { ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { type RunTranscript, STREAM_BATCH_BYTES, streamRunEvents } from "../../src/api/event-stream.ts";
import { EventStreamSlots } from "../../src/api/event-stream-slots.ts";
import type { RunEvent } from "../../src/model/run.ts";
import { EVENT_DATA_MAX_BYTES } from "../../src/store/event-cap.ts";
import { waitFor } from "../support/dispatch.ts";

/** About 75 MB of transcript: events of the largest size the store keeps. */
const EVENTS = 1200;
const OUTPUT = "x".repeat(EVENT_DATA_MAX_BYTES - 200);

let app: FastifyInstance | undefined;
let client: Socket | undefined;
afterEach(async () => {
  client?.destroy();
  await app?.close();
});

describe("event stream to a client that does not read", () => {
  it("reads the transcript only as fast as the socket takes it", async () => {
    let read = 0;
    let written = 0;
    let mostHeld = 0;
    let res: ServerResponse | undefined;
    const observe = () => {
      mostHeld = Math.max(mostHeld, read - written);
    };
    const transcript: RunTranscript = {
      async transcript(_runId, after, limit) {
        const events: RunEvent[] = [];
        for (let seq = after + 1; seq <= Math.min(EVENTS, after + limit); seq++) {
          events.push({ seq, at: "2026-01-01T00:00:00.000Z", type: "tool_result", data: { output: OUTPUT } });
        }
        read += events.length;
        observe();
        return events;
      },
      onEventAppended: () => () => {},
    };
    app = Fastify({ forceCloseConnections: true });
    app.decorate("eventStreams", new EventStreamSlots({ max: 10, perClient: 10, perRun: 10 }));
    app.get("/stream", async (req, reply) => {
      res = reply.raw;
      const write = res.write.bind(res) as (chunk: string) => boolean;
      // Counts the events handed to the socket; what was read and not yet handed over is held in memory.
      res.write = ((chunk: string) => {
        if (chunk.startsWith("id: ")) written += 1;
        observe();
        return write(chunk);
      }) as ServerResponse["write"];
      return streamRunEvents(req, reply, transcript, "run-1", 0);
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = app.server.address() as { port: number };

    // A client that sends its request and then never reads: once the kernel's buffers are full, every
    // write the server makes stays in the process.
    client = connect(port, "127.0.0.1");
    client.pause();
    client.write("GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n");

    await waitFor(() => res?.writableNeedDrain && written > 0, { what: "the socket to stop taking data" });
    expect(read, "the stream stopped reading the transcript").toBeLessThan(EVENTS);
    expect(mostHeld * EVENT_DATA_MAX_BYTES).toBeLessThanOrEqual(STREAM_BATCH_BYTES);
    // What the response buffers on top: its high-water mark plus the one event that crossed it.
    expect(res!.writableLength).toBeLessThanOrEqual(res!.writableHighWaterMark + EVENT_DATA_MAX_BYTES + 1024);
  });
});

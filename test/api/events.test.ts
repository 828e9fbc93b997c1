import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { SseStream } from "../support/sse.ts";

let t: TestDispatch;
beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "2" });
});
afterAll(() => t.stop());

function stream(runId: string, headers: Record<string, string> = {}) {
  return SseStream.open(`${t.url}/api/v1/agent/runs/${runId}/events`, {
    headers: { authorization: `Bearer ${t.key}`, ...headers },
  });
}

describe("GET /agent/runs/{id}/events", () => {
  it("pages the transcript as JSON with after and limit", async () => {
    const id = (await t.api("POST", "/api/v1/agent/runs", { prompt: "hello\n$ echo one\n$ echo two" })).body
      .run_id;
    await waitForState(t, id, ["SUCCEEDED"]);
    const all = (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body;
    const types = all.events.map((e: { type: string }) => e.type);
    expect(types).toEqual([
      "state",
      "state",
      "message",
      "tool_call",
      "tool_result",
      "tool_call",
      "tool_result",
      "message",
      "state",
    ]);
    expect(all.events[4].data).toMatchObject({
      tool: "shell",
      command: "echo one",
      exit_code: 0,
      output: "one\n",
    });
    expect(all.events[7].data.role).toBe("assistant");
    expect(all.events[7].data.text).toContain("hello");
    expect(all.next_after).toBe(all.events.at(-1).seq);
    const page = (await t.api("GET", `/api/v1/agent/runs/${id}/events?after=2&limit=3`)).body;
    expect(page.events.map((e: { seq: number }) => e.seq)).toEqual([3, 4, 5]);
    expect(page.next_after).toBe(5);
    const empty = (await t.api("GET", `/api/v1/agent/runs/${id}/events?after=999`)).body;
    expect(empty).toEqual({ events: [], next_after: 999 });
  });

  it("streams as SSE with ids and no event field, and resumes after Last-Event-ID losing and repeating nothing", async () => {
    // A run that emits events over time: each command waits for the previous event to be streamed.
    const lines = Array.from({ length: 25 }, (_, i) => `$ echo line-${i}; sleep 0.02`).join("\n");
    const id = (await t.api("POST", "/api/v1/agent/runs", { prompt: lines })).body.run_id;
    const received: number[] = [];
    let lastId: string | undefined;
    const res1 = await stream(id);
    expect(res1.status).toBe(200);
    expect(res1.headers["content-type"]).toContain("text/event-stream");
    for await (const msg of res1) {
      expect(msg.event).toBeUndefined();
      const event = JSON.parse(msg.data);
      expect(msg.id).toBe(String(event.seq));
      received.push(event.seq);
      lastId = msg.id;
      if (received.length === 12) break;
    }
    res1.close();
    const res2 = await stream(id, { "last-event-id": lastId! });
    for await (const msg of res2) {
      const event = JSON.parse(msg.data);
      received.push(event.seq);
      if (event.type === "state" && event.data.state === "SUCCEEDED") break;
    }
    res2.close();
    expect(received).toEqual(Array.from({ length: received.length }, (_, i) => i + 1));
    const stored = (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events;
    expect(received.length).toBe(stored.length);
  });

  it("?after= starts a stream after that event", async () => {
    const id = (await t.api("POST", "/api/v1/agent/runs", { prompt: "$ true" })).body.run_id;
    await waitForState(t, id, ["SUCCEEDED"]);
    const res = await SseStream.open(`${t.url}/api/v1/agent/runs/${id}/events?after=3`, {
      headers: { authorization: `Bearer ${t.key}` },
    });
    const first = await res.next();
    res.close();
    expect(JSON.parse(first!.data).seq).toBe(4);
  });
});

import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../support/dispatch.ts";
import { SseStream } from "../support/sse.ts";

let t: TestDispatch | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await t?.stop();
  t = undefined;
});

/** A raw connection that sends `request`; resolves, once the server has closed it, with all it answered. */
function rawRequest(url: string, request: string): { socket: Socket; answer: Promise<string> } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  sockets.push(socket);
  let answer = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    answer += chunk;
  });
  socket.on("error", () => {}); // a reset is one way of being closed
  socket.write(request);
  return { socket, answer: new Promise((resolve) => socket.on("close", () => resolve(answer))) };
}

describe("HTTP connections", () => {
  it("closes connections whose body never arrives, and keeps an event stream open past that timeout", async () => {
    t = await startTestDispatch({ DISPATCH_REQUEST_TIMEOUT_MS: "300", DISPATCH_MAX_CONCURRENT_RUNS: "0" });
    const { url, key } = t;
    const runId = (await t.api("POST", "/api/v1/agent/runs", { prompt: "wait" })).body.run_id;
    const events = await SseStream.open(`${url}/api/v1/agent/runs/${runId}/events`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(JSON.parse((await events.next())!.data).data.state).toBe("QUEUED");

    // Headers, then a tenth of the promised body, then nothing.
    const slow = Array.from({ length: 50 }, () =>
      rawRequest(
        url,
        `POST /api/v1/agent/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"prompt": "${"a".repeat(90)}`,
      ),
    );
    const answers = await Promise.all(slow.map((s) => s.answer));
    for (const answer of answers) expect(answer).toMatch(/^(HTTP\/1\.1 408 |$)/);
    expect(answers.some((a) => a.startsWith("HTTP/1.1 408 "))).toBe(true);

    // The stream opened before all of them is still being served.
    await t.dispatch.store.appendEvent(runId, "log", { message: "still streaming" });
    expect(JSON.parse((await events.next())!.data).data.message).toBe("still streaming");
    events.close();
  });

  it("closes connections over the cap at once, and serves again once they are gone", async () => {
    t = await startTestDispatch({ DISPATCH_MAX_CONNECTIONS: "5", DISPATCH_MAX_CONCURRENT_RUNS: "0" });
    const held: Array<{ socket: Socket; answer: Promise<string> }> = [];
    const outcomes: string[] = [];
    for (let i = 0; i < 8; i++) {
      const conn = rawRequest(t.url, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      // Answered (the connection stays open: keep-alive) or closed unanswered.
      let closed = false;
      void conn.answer.then(() => {
        closed = true;
      });
      let data = "";
      conn.socket.on("data", (chunk: string) => {
        data += chunk;
      });
      await waitFor(() => closed || data.includes("\r\n\r\n"), {
        what: `connection ${i} to be answered or closed`,
      });
      outcomes.push(closed && data === "" ? "refused" : "served");
      held.push(conn);
    }
    expect(outcomes).toEqual([
      "served",
      "served",
      "served",
      "served",
      "served",
      "refused",
      "refused",
      "refused",
    ]);

    for (const { socket } of held) socket.destroy();
    const health = await waitFor(async () => (await fetch(`${t!.url}/healthz`)).ok, {
      what: "the server to accept connections again",
    });
    expect(health).toBe(true);
  });
});

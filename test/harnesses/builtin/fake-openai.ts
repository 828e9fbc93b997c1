import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One answer of the fake server: text, or tool calls (arguments streamed in two deltas). */
export interface FakeTurn {
  text?: string;
  calls?: Array<{ name: string; arguments: Record<string, unknown> }>;
}

/**
 * A loopback OpenAI-compatible chat-completions server: POST /v1/chat/completions answers with SSE chunks
 * (content or tool_calls deltas, a finish_reason, a usage chunk, then `data: [DONE]`); GET /v1/models lists
 * one model. Records every request body.
 */
export async function startFakeOpenAI(turns: FakeTurn[]) {
  const requests: Array<Record<string, unknown>> = [];
  let next = 0;
  const server: Server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/v1/models") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ object: "list", data: [{ id: "fake-coder", object: "model", owned_by: "test" }] }),
      );
      return;
    }
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      requests.push(body);
      const turn = turns[next++] ?? { text: "(the fake server has no more turns)" };
      const id = `chatcmpl-${next}`;
      const chunk = (choice: Record<string, unknown> | null, extra: Record<string, unknown> = {}) =>
        `data: ${JSON.stringify({
          id,
          object: "chat.completion.chunk",
          created: 1_800_000_000,
          model: String(body.model),
          choices: choice ? [{ index: 0, ...choice }] : [],
          ...extra,
        })}\n\n`;
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write(chunk({ delta: { role: "assistant", content: "" }, finish_reason: null }));
      if (turn.text) res.write(chunk({ delta: { content: turn.text }, finish_reason: null }));
      (turn.calls ?? []).forEach((call, index) => {
        const args = JSON.stringify(call.arguments);
        const half = Math.floor(args.length / 2);
        res.write(
          chunk({
            delta: {
              tool_calls: [
                {
                  index,
                  id: `call_${next}_${index}`,
                  type: "function",
                  function: { name: call.name, arguments: "" },
                },
              ],
            },
            finish_reason: null,
          }),
        );
        res.write(
          chunk({ delta: { tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] } }),
        );
        res.write(chunk({ delta: { tool_calls: [{ index, function: { arguments: args.slice(half) } }] } }));
      });
      res.write(chunk({ delta: {}, finish_reason: turn.calls?.length ? "tool_calls" : "stop" }));
      res.write(chunk(null, { usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 } }));
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

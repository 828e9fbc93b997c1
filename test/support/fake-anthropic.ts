import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * One scripted answer of a fake model: text and/or tool calls, the usage it reports, and optionally a
 * gate it waits on (a test releases it once it has done something mid-turn) or a stall (it streams its
 * first text and then never ends: cancel mid-stream).
 */
export interface ScriptedTurn {
  text?: string;
  /** `input` may be a function: evaluated when the turn is answered (after its gate), e.g. to name a path. */
  calls?: Array<{ name: string; input: ToolInput | (() => ToolInput) }>;
  usage?: { input_tokens: number; output_tokens: number };
  gate?: Promise<void>;
  stall?: boolean;
}

/** A function call's arguments, or a custom (freeform) tool's text input (OpenAI Responses only). */
export type ToolInput = Record<string, unknown> | string;

export interface RecordedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/**
 * A loopback Anthropic Messages API: POST /v1/messages answers with the real SSE stream (message_start,
 * content_block_start / text_delta / input_json_delta / content_block_stop, message_delta with usage,
 * message_stop), or with one JSON message when the request does not ask for a stream. Requests that offer
 * tools are the agent's turns and take the next scripted turn (taken off the front of `turns`: a test may
 * clear what is left); side requests of the CLI (titles, summaries) get a short fixed answer. Every
 * request is recorded (headers included: tests check which key arrived).
 */
export async function startFakeAnthropic(turns: ScriptedTurn[]) {
  const requests: RecordedRequest[] = [];
  const open = new Set<ServerResponse>();
  let ids = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0] ?? "";
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      } catch {
        // recorded as empty
      }
      requests.push({ path, headers: req.headers, body });
      if (req.method === "POST" && path === "/v1/messages/count_tokens") {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ input_tokens: 10 }));
        return;
      }
      if (req.method !== "POST" || path !== "/v1/messages") {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: path } }));
        return;
      }
      const agentTurn = Array.isArray(body.tools) && body.tools.length > 0;
      const turn: ScriptedTurn = agentTurn
        ? (turns.shift() ?? { text: "(the fake server has no more turns)" })
        : { text: "Fake title", usage: { input_tokens: 1, output_tokens: 1 } };
      open.add(res);
      res.on("close", () => open.delete(res));
      void answer(res, turn, String(body.model ?? "claude-fake"), `msg_${++ids}`, body.stream === true);
    });
  });

  async function answer(res: ServerResponse, turn: ScriptedTurn, model: string, id: string, stream: boolean) {
    if (turn.gate) await turn.gate;
    const usage = turn.usage ?? { input_tokens: 100, output_tokens: 20 };
    const content: Array<Record<string, unknown>> = [];
    if (turn.text) content.push({ type: "text", text: turn.text });
    for (const [i, call] of (turn.calls ?? []).entries()) {
      content.push({
        type: "tool_use",
        id: `toolu_${id}_${i}`,
        name: call.name,
        input: typeof call.input === "function" ? call.input() : call.input,
      });
    }
    const stopReason = turn.calls?.length ? "tool_use" : "end_turn";
    if (!stream) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id,
          type: "message",
          role: "assistant",
          model,
          content,
          stop_reason: stopReason,
          stop_sequence: null,
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const send = (event: string, data: Record<string, unknown>) =>
      res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
    send("message_start", {
      message: {
        id,
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.input_tokens, output_tokens: 1 },
      },
    });
    for (const [index, block] of content.entries()) {
      if (block.type === "text") {
        const text = String(block.text);
        send("content_block_start", { index, content_block: { type: "text", text: "" } });
        const half = Math.ceil(text.length / 2);
        send("content_block_delta", { index, delta: { type: "text_delta", text: text.slice(0, half) } });
        // A stalled turn keeps the connection open, mid-block, until the client goes away.
        if (turn.stall) return;
        send("content_block_delta", { index, delta: { type: "text_delta", text: text.slice(half) } });
      } else {
        send("content_block_start", {
          index,
          content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
        });
        const json = JSON.stringify(block.input);
        const half = Math.floor(json.length / 2);
        send("content_block_delta", {
          index,
          delta: { type: "input_json_delta", partial_json: json.slice(0, half) },
        });
        send("content_block_delta", {
          index,
          delta: { type: "input_json_delta", partial_json: json.slice(half) },
        });
      }
      send("content_block_stop", { index });
    }
    send("message_delta", {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    });
    send("message_stop", {});
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    /** ANTHROPIC_BASE_URL (without /v1, as Anthropic's SDKs take it). */
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    /** The agent's turns: requests that offered tools. */
    agentRequests: () =>
      requests.filter((r) => r.path === "/v1/messages" && Array.isArray(r.body.tools) && r.body.tools.length),
    /** Streams still open (a stalled turn whose client has not gone away). */
    openStreams: () => open.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.close(() => resolve());
      }),
  };
}

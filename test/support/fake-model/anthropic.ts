import type { ServerResponse } from "node:http";
import { callsOf, halves, type ScriptedTurn, usageOf } from "./turns.ts";

/**
 * An Anthropic Messages answer (POST /v1/messages): the real SSE stream (message_start,
 * content_block_start / text_delta / input_json_delta / content_block_stop, message_delta with usage,
 * message_stop), or one JSON message when the request does not ask for a stream.
 */
export function answerAnthropic(
  res: ServerResponse,
  turn: ScriptedTurn,
  request: { model: string; id: string; stream: boolean },
): void {
  const { model, id } = request;
  const usage = usageOf(turn);
  const content: Array<Record<string, unknown>> = [];
  if (turn.text) content.push({ type: "text", text: turn.text });
  for (const [i, call] of callsOf(turn).entries()) {
    content.push({ type: "tool_use", id: `toolu_${id}_${i}`, name: call.name, input: call.input });
  }
  const stopReason = turn.calls?.length ? "tool_use" : "end_turn";
  if (!request.stream) {
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
      const [first, second] = halves(String(block.text));
      send("content_block_start", { index, content_block: { type: "text", text: "" } });
      send("content_block_delta", { index, delta: { type: "text_delta", text: first } });
      // A stalled turn keeps the connection open, mid-block, until the client goes away.
      if (turn.stall) return;
      send("content_block_delta", { index, delta: { type: "text_delta", text: second } });
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

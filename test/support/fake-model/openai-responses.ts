import type { ServerResponse } from "node:http";
import { callsOf, halves, type ScriptedTurn, usageOf } from "./turns.ts";

/**
 * An OpenAI Responses answer (POST /v1/responses, streaming): response.created, output items added with
 * their text or argument deltas and done, response.completed with usage. A call whose input is a string is
 * a custom (freeform) tool call, such as Codex's apply_patch; an object is a function call with JSON
 * arguments.
 */
export function answerResponses(
  res: ServerResponse,
  turn: ScriptedTurn,
  request: { model: string; n: number },
): void {
  const { model, n } = request;
  const usage = usageOf(turn);
  let seq = 0;
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
  const response = (status: string, output: unknown[], extra: Record<string, unknown> = {}) => ({
    id: `resp_${n}`,
    object: "response",
    created_at: 1_800_000_000,
    status,
    model,
    output,
    ...extra,
  });
  send("response.created", { response: response("in_progress", []) });
  send("response.in_progress", { response: response("in_progress", []) });
  const output: Array<Record<string, unknown>> = [];
  if (turn.text) {
    const at = { item_id: `msg_${n}`, output_index: output.length };
    const added = { id: at.item_id, type: "message", status: "in_progress", role: "assistant", content: [] };
    send("response.output_item.added", { output_index: at.output_index, item: added });
    const empty = { type: "output_text", text: "", annotations: [] };
    send("response.content_part.added", { ...at, content_index: 0, part: empty });
    const [first, second] = halves(turn.text);
    send("response.output_text.delta", { ...at, content_index: 0, delta: first });
    if (turn.stall) return;
    send("response.output_text.delta", { ...at, content_index: 0, delta: second });
    send("response.output_text.done", { ...at, content_index: 0, text: turn.text });
    const part = { type: "output_text", text: turn.text, annotations: [] };
    send("response.content_part.done", { ...at, content_index: 0, part });
    const item = { ...added, status: "completed", content: [part] };
    send("response.output_item.done", { output_index: at.output_index, item });
    output.push(item);
  }
  for (const [i, call] of callsOf(turn).entries()) {
    const index = output.length;
    const callId = `call_${n}_${i}`;
    if (typeof call.input === "string") {
      const input = call.input;
      const id = `ctc_${n}_${i}`;
      const item = {
        id,
        type: "custom_tool_call",
        status: "completed",
        call_id: callId,
        name: call.name,
        input,
      };
      send("response.output_item.added", { output_index: index, item: { ...item, input: "" } });
      send("response.custom_tool_call_input.delta", { item_id: id, output_index: index, delta: input });
      send("response.custom_tool_call_input.done", { item_id: id, output_index: index, input });
      send("response.output_item.done", { output_index: index, item });
      output.push(item);
      continue;
    }
    const id = `fc_${n}_${i}`;
    const args = JSON.stringify(call.input);
    const half = Math.floor(args.length / 2);
    const item = {
      id,
      type: "function_call",
      status: "completed",
      call_id: callId,
      name: call.name,
      arguments: args,
    };
    send("response.output_item.added", {
      output_index: index,
      item: { ...item, status: "in_progress", arguments: "" },
    });
    send("response.function_call_arguments.delta", {
      item_id: id,
      output_index: index,
      delta: args.slice(0, half),
    });
    send("response.function_call_arguments.delta", {
      item_id: id,
      output_index: index,
      delta: args.slice(half),
    });
    send("response.function_call_arguments.done", { item_id: id, output_index: index, arguments: args });
    send("response.output_item.done", { output_index: index, item });
    output.push(item);
  }
  send("response.completed", {
    response: response("completed", output, {
      usage: {
        input_tokens: usage.input_tokens,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: usage.output_tokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: usage.input_tokens + usage.output_tokens,
      },
    }),
  });
  res.end();
}

import type { ServerResponse } from "node:http";
import { callsOf, halves, type ScriptedTurn, usageOf } from "./turns.ts";

/**
 * An OpenAI Chat Completions answer (POST /v1/chat/completions, streaming): chat.completion.chunk events
 * with content or tool_calls deltas (a call's arguments in two deltas), a finish_reason, a usage chunk,
 * then `data: [DONE]`.
 */
export function answerChatCompletions(
  res: ServerResponse,
  turn: ScriptedTurn,
  request: { model: string; n: number },
): void {
  const { model, n } = request;
  const usage = usageOf(turn);
  const id = `chatcmpl-${n}`;
  const chunk = (choice: Record<string, unknown> | null, extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({
      id,
      object: "chat.completion.chunk",
      created: 1_800_000_000,
      model,
      choices: choice ? [{ index: 0, ...choice }] : [],
      ...extra,
    })}\n\n`;
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.write(chunk({ delta: { role: "assistant", content: "" }, finish_reason: null }));
  if (turn.text) {
    const [first, second] = halves(turn.text);
    res.write(chunk({ delta: { content: first }, finish_reason: null }));
    if (turn.stall) return;
    res.write(chunk({ delta: { content: second }, finish_reason: null }));
  }
  for (const [index, call] of callsOf(turn).entries()) {
    const args = JSON.stringify(call.input);
    const half = Math.floor(args.length / 2);
    const start = {
      index,
      id: `call_${n}_${index}`,
      type: "function",
      function: { name: call.name, arguments: "" },
    };
    res.write(chunk({ delta: { tool_calls: [start] }, finish_reason: null }));
    res.write(chunk({ delta: { tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] } }));
    res.write(chunk({ delta: { tool_calls: [{ index, function: { arguments: args.slice(half) } }] } }));
  }
  res.write(chunk({ delta: {}, finish_reason: turn.calls?.length ? "tool_calls" : "stop" }));
  const { input_tokens: prompt, output_tokens: completion } = usage;
  res.write(
    chunk(null, {
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    }),
  );
  res.end("data: [DONE]\n\n");
}

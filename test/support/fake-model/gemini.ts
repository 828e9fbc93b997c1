import type { ServerResponse } from "node:http";
import { callsOf, halves, type ScriptedTurn, usageOf } from "./turns.ts";

/**
 * A Gemini answer (POST /v1beta/models/{model}:streamGenerateContent?alt=sse or :generateContent): SSE
 * chunks of candidates with text parts, then functionCall parts, a finishReason and usageMetadata; or the
 * same as one JSON response.
 */
export function answerGemini(res: ServerResponse, turn: ScriptedTurn, stream: boolean): void {
  const usage = usageOf(turn);
  const usageMetadata = {
    promptTokenCount: usage.input_tokens,
    candidatesTokenCount: usage.output_tokens,
    totalTokenCount: usage.input_tokens + usage.output_tokens,
  };
  const calls = callsOf(turn).map((c) => ({ functionCall: { name: c.name, args: c.input } }));
  const chunk = (parts: unknown[], last: boolean) => ({
    candidates: [{ content: { role: "model", parts }, index: 0, ...(last ? { finishReason: "STOP" } : {}) }],
    ...(last ? { usageMetadata } : {}),
    modelVersion: "gemini-fake",
  });
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(chunk([...(turn.text ? [{ text: turn.text }] : []), ...calls], true)));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\r\n\r\n`);
  if (turn.text) {
    const [first, second] = halves(turn.text);
    send(chunk([{ text: first }], false));
    if (turn.stall) return;
    send(chunk([{ text: second }], calls.length === 0));
  }
  if (calls.length > 0 || !turn.text) send(chunk(calls, true));
  res.end();
}

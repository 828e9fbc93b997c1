import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { RecordedRequest, ScriptedTurn } from "./fake-anthropic.ts";

/**
 * A loopback OpenAI Responses API: POST /v1/responses answers with the real event stream
 * (response.created, response.output_item.added, response.output_text.delta,
 * response.function_call_arguments.delta, response.output_item.done, response.completed with usage). A
 * scripted call whose input is a string is a custom (freeform) tool call, such as Codex's apply_patch; an
 * object is a function call with JSON arguments. Requests that offer tools take the next scripted turn
 * (taken off the front of `turns`); others get a short fixed answer. Every request is recorded. GET
 * /v1/models lists one model.
 */
export async function startFakeResponses(turns: ScriptedTurn[]) {
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
      if (req.method === "GET" && path === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ object: "list", data: [{ id: "gpt-fake", object: "model", owned_by: "test" }] }),
        );
        return;
      }
      if (req.method !== "POST" || path !== "/v1/responses") {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${path}`, type: "invalid_request_error" } }));
        return;
      }
      const agentTurn = Array.isArray(body.tools) && body.tools.length > 0;
      const turn: ScriptedTurn = agentTurn
        ? (turns.shift() ?? { text: "(the fake server has no more turns)" })
        : { text: "Fake title", usage: { input_tokens: 1, output_tokens: 1 } };
      open.add(res);
      res.on("close", () => open.delete(res));
      void answer(res, turn, String(body.model ?? "gpt-fake"), ++ids);
    });
  });

  async function answer(res: ServerResponse, turn: ScriptedTurn, model: string, n: number) {
    if (turn.gate) await turn.gate;
    const usage = turn.usage ?? { input_tokens: 100, output_tokens: 20 };
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
      const index = output.length;
      const id = `msg_${n}`;
      send("response.output_item.added", {
        output_index: index,
        item: { id, type: "message", status: "in_progress", role: "assistant", content: [] },
      });
      send("response.content_part.added", {
        item_id: id,
        output_index: index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] },
      });
      const half = Math.ceil(turn.text.length / 2);
      send("response.output_text.delta", {
        item_id: id,
        output_index: index,
        content_index: 0,
        delta: turn.text.slice(0, half),
      });
      if (turn.stall) return;
      send("response.output_text.delta", {
        item_id: id,
        output_index: index,
        content_index: 0,
        delta: turn.text.slice(half),
      });
      send("response.output_text.done", {
        item_id: id,
        output_index: index,
        content_index: 0,
        text: turn.text,
      });
      const part = { type: "output_text", text: turn.text, annotations: [] };
      send("response.content_part.done", { item_id: id, output_index: index, content_index: 0, part });
      const item = { id, type: "message", status: "completed", role: "assistant", content: [part] };
      send("response.output_item.done", { output_index: index, item });
      output.push(item);
    }
    for (const [i, call] of (turn.calls ?? []).entries()) {
      const index = output.length;
      const input = typeof call.input === "function" ? call.input() : call.input;
      const callId = `call_${n}_${i}`;
      if (typeof input === "string") {
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
      const args = JSON.stringify(input);
      const half = Math.floor(args.length / 2);
      send("response.output_item.added", {
        output_index: index,
        item: {
          id,
          type: "function_call",
          status: "in_progress",
          call_id: callId,
          name: call.name,
          arguments: "",
        },
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
      const item = {
        id,
        type: "function_call",
        status: "completed",
        call_id: callId,
        name: call.name,
        arguments: args,
      };
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

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    /** OPENAI_BASE_URL (with /v1, as OpenAI's SDKs take it). */
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    /** The agent's turns: requests that offered tools. */
    agentRequests: () =>
      requests.filter(
        (r) => r.path === "/v1/responses" && Array.isArray(r.body.tools) && r.body.tools.length,
      ),
    openStreams: () => open.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.close(() => resolve());
      }),
  };
}

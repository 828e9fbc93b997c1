import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { RecordedRequest, ScriptedTurn } from "./fake-anthropic.ts";

/**
 * A loopback Gemini API: POST /v1beta/models/{model}:streamGenerateContent?alt=sse answers with the real
 * SSE chunks (candidates with text parts, then functionCall parts, a finishReason and usageMetadata);
 * :generateContent answers with one JSON response; :countTokens with a count. Requests that offer tools
 * (function declarations) take the next scripted turn (taken off the front of `turns`: a test may clear
 * what is left); the CLI's side requests (routing, next-speaker checks) get `sideAnswer`. Every request is
 * recorded.
 */
export async function startFakeGemini(turns: ScriptedTurn[], sideAnswer = '{"next_speaker":"user"}') {
  const requests: RecordedRequest[] = [];
  const open = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = decodeURIComponent((req.url ?? "").split("?")[0] ?? "");
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      } catch {
        // recorded as empty
      }
      requests.push({ path, headers: req.headers, body });
      const method = /^\/v1beta\/models\/[^:]+:(\w+)$/.exec(path)?.[1];
      if (req.method !== "POST" || !method) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { code: 404, message: `no route ${path}`, status: "NOT_FOUND" } }));
        return;
      }
      if (method === "countTokens") {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ totalTokens: 10 }));
        return;
      }
      const tools = Array.isArray(body.tools)
        ? (body.tools as Array<{ functionDeclarations?: unknown[] }>)
        : [];
      const agentTurn = tools.some((t) => (t.functionDeclarations?.length ?? 0) > 0);
      const turn: ScriptedTurn = agentTurn
        ? (turns.shift() ?? { text: "(the fake server has no more turns)" })
        : { text: sideAnswer, usage: { input_tokens: 1, output_tokens: 1 } };
      open.add(res);
      res.on("close", () => open.delete(res));
      void answer(res, turn, method === "streamGenerateContent");
    });
  });

  async function answer(res: ServerResponse, turn: ScriptedTurn, stream: boolean) {
    if (turn.gate) await turn.gate;
    const usage = turn.usage ?? { input_tokens: 100, output_tokens: 20 };
    const usageMetadata = {
      promptTokenCount: usage.input_tokens,
      candidatesTokenCount: usage.output_tokens,
      totalTokenCount: usage.input_tokens + usage.output_tokens,
    };
    const calls = (turn.calls ?? []).map((c) => ({
      functionCall: { name: c.name, args: typeof c.input === "function" ? c.input() : c.input },
    }));
    const chunk = (parts: unknown[], last: boolean) => ({
      candidates: [
        { content: { role: "model", parts }, index: 0, ...(last ? { finishReason: "STOP" } : {}) },
      ],
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
      const half = Math.ceil(turn.text.length / 2);
      send(chunk([{ text: turn.text.slice(0, half) }], false));
      if (turn.stall) return;
      send(chunk([{ text: turn.text.slice(half) }], calls.length === 0));
    }
    if (calls.length > 0 || !turn.text) send(chunk(calls, true));
    res.end();
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    /** GEMINI_BASE_URL (the API root, without /v1beta). */
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    agentRequests: () =>
      requests.filter((r) =>
        (Array.isArray(r.body.tools)
          ? (r.body.tools as Array<{ functionDeclarations?: unknown[] }>)
          : []
        ).some((t) => (t.functionDeclarations?.length ?? 0) > 0),
      ),
    openStreams: () => open.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.close(() => resolve());
      }),
  };
}

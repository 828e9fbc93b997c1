import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { answerAnthropic } from "./anthropic.ts";
import { answerGemini } from "./gemini.ts";
import { answerChatCompletions } from "./openai-chat.ts";
import { answerResponses } from "./openai-responses.ts";
import type { ScriptedTurn } from "./turns.ts";

export type { ScriptedTurn, ToolInput } from "./turns.ts";

/** Whose wire format a request spoke (by its route). */
export type Provider = "anthropic" | "openai" | "gemini";

export interface RecordedRequest {
  provider: Provider | undefined;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** When its body had arrived (Date.now()): a bench reads when an agent's model call reached the provider. */
  at: number;
}

export type FakeModel = Awaited<ReturnType<typeof startFakeModel>>;

/** The models GET /v1/models lists: those the tests name for OpenAI and OpenAI-compatible runs. */
const LISTED_MODELS = ["gpt-fake", "fake-coder"];

/** What side requests (titles, summaries, Gemini CLI's routing and next-speaker checks) are told. */
const SIDE_ANSWER: Record<Provider, string> = {
  anthropic: "Fake title",
  openai: "Fake title",
  gemini: '{"next_speaker":"user"}',
};

/**
 * One loopback model provider for every test, speaking each provider's real wire format by route:
 * Anthropic Messages (POST /v1/messages, streaming or not; count_tokens), OpenAI Chat Completions
 * (POST /v1/chat/completions) and Responses (POST /v1/responses), both streaming, GET /v1/models, and
 * Gemini (POST /v1beta/models/{model}:streamGenerateContent, :generateContent, :countTokens).
 *
 * A request that offers tools is an agent's turn and takes the next scripted turn off the front of
 * `turns` (a test may push more or clear what is left); other requests are an agent's side requests and
 * get a short fixed answer. Every request is recorded, headers included (tests check which key arrived).
 */
export async function startFakeModel(turns: ScriptedTurn[]) {
  const requests: RecordedRequest[] = [];
  const open = new Set<ServerResponse>();
  let answered = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = pathOf(req.url ?? "");
      const method = req.method ?? "GET";
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      } catch {
        // recorded as empty
      }
      const route = routeOf(method, path);
      requests.push({ provider: route?.provider, method, path, headers: req.headers, body, at: Date.now() });
      if (!route) return notFound(res, path);
      if (route.name === "models") {
        const data = LISTED_MODELS.map((id) => ({ id, object: "model", owned_by: "test" }));
        return json(res, { object: "list", data });
      }
      if (route.name === "count_tokens") return json(res, { input_tokens: 10 });
      if (route.name === "countTokens") return json(res, { totalTokens: 10 });
      const turn: ScriptedTurn = offersTools(route.provider, body)
        ? (turns.shift() ?? { text: "(the fake server has no more turns)" })
        : { text: SIDE_ANSWER[route.provider], usage: { input_tokens: 1, output_tokens: 1 } };
      const n = ++answered;
      open.add(res);
      res.on("close", () => open.delete(res));
      void (async () => {
        if (turn.gate) await turn.gate;
        const model = String(body.model ?? "fake-model");
        if (route.name === "messages")
          answerAnthropic(res, turn, { model, id: `msg_${n}`, stream: body.stream === true });
        else if (route.name === "chat") answerChatCompletions(res, turn, { model, n });
        else if (route.name === "responses") answerResponses(res, turn, { model, n });
        else answerGemini(res, turn, route.name === "streamGenerateContent");
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const root = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    /**
     * The base URL as the provider's SDKs and CLIs take it: ANTHROPIC_BASE_URL and GEMINI_BASE_URL are the
     * root (without /v1, /v1beta); OPENAI_BASE_URL and OPENAI_COMPATIBLE_BASE_URL end in /v1.
     */
    baseUrl: (provider: Provider) => (provider === "openai" ? `${root}/v1` : root),
    requests,
    /** The agents' turns (requests that offered tools), of one provider's wire format when named. */
    agentRequests: (provider?: Provider) =>
      requests.filter(
        (r) =>
          r.provider !== undefined &&
          (provider ?? r.provider) === r.provider &&
          offersTools(r.provider, r.body),
      ),
    /** Answers still open (a stalled turn whose client has not gone away, a gated one). */
    openStreams: () => open.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.destroy();
        server.close(() => resolve());
      }),
  };
}

type Route =
  | { provider: "anthropic"; name: "messages" | "count_tokens" }
  | { provider: "openai"; name: "chat" | "responses" | "models" }
  | { provider: "gemini"; name: "generateContent" | "streamGenerateContent" | "countTokens" };

function routeOf(method: string, path: string): Route | undefined {
  if (method === "GET") return path === "/v1/models" ? { provider: "openai", name: "models" } : undefined;
  if (method !== "POST") return undefined;
  if (path === "/v1/messages") return { provider: "anthropic", name: "messages" };
  if (path === "/v1/messages/count_tokens") return { provider: "anthropic", name: "count_tokens" };
  if (path === "/v1/chat/completions") return { provider: "openai", name: "chat" };
  if (path === "/v1/responses") return { provider: "openai", name: "responses" };
  const gemini = /^\/v1beta\/models\/[^:/]+:(\w+)$/.exec(path)?.[1];
  if (gemini === "generateContent" || gemini === "streamGenerateContent" || gemini === "countTokens") {
    return { provider: "gemini", name: gemini };
  }
  return undefined;
}

/** The request's path, percent-decoded (Gemini's model names arrive encoded) where it decodes. */
function pathOf(url: string): string {
  const path = url.split("?")[0] ?? "";
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** Whether a request offers the model tools: Anthropic's and OpenAI's `tools`, Gemini's function declarations. */
function offersTools(provider: Provider, body: Record<string, unknown>): boolean {
  if (!Array.isArray(body.tools) || body.tools.length === 0) return false;
  if (provider !== "gemini") return true;
  return (body.tools as Array<{ functionDeclarations?: unknown[] }>).some(
    (t) => (t.functionDeclarations?.length ?? 0) > 0,
  );
}

function json(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
}

/** A 404 with the fields each provider's SDK reads an error from (Anthropic's type, Gemini's code/status). */
function notFound(res: ServerResponse, path: string): void {
  const error = { type: "not_found_error", code: 404, status: "NOT_FOUND", message: `no route ${path}` };
  res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ type: "error", error }));
}

import type { Fetch } from "../../src/index.ts";

/** One request as the client sent it. */
export interface SentRequest {
  url: URL;
  method: string;
  headers: Headers;
  body: string | undefined;
  signal: AbortSignal | undefined;
}

type Step = Response | Error | ((req: SentRequest) => Response | Promise<Response>);

/**
 * A fetch that answers with `steps` in order (a Response, an Error to throw as a connection failure,
 * or a function of the request) and records every request; running out of steps fails the test.
 */
export function mockFetch(...steps: Step[]): { fetch: Fetch; requests: SentRequest[] } {
  const requests: SentRequest[] = [];
  const fetch: Fetch = async (input, init = {}) => {
    const req: SentRequest = {
      url: new URL(String(input instanceof Request ? input.url : input)),
      method: init.method ?? "GET",
      headers: new Headers(init.headers),
      body: typeof init.body === "string" ? init.body : undefined,
      signal: init.signal ?? undefined,
    };
    requests.push(req);
    const step = steps.shift();
    if (step === undefined) throw new Error(`mockFetch: unexpected request ${req.method} ${req.url}`);
    if (step instanceof Error) throw step;
    return typeof step === "function" ? step(req) : step;
  };
  return { fetch, requests };
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** An application/problem+json error response as the server sends it. */
export function problem(
  status: number,
  code: string,
  detail: string,
  headers: Record<string, string> = {},
): Response {
  const title = code.replaceAll("_", " ");
  return new Response(
    JSON.stringify({
      type: `https://dispatch.dev/problems/${code.replaceAll("_", "-")}`,
      title,
      status,
      detail,
      error: `${title} (${detail})`,
      error_code: code,
      retryable: [409, 429, 500, 503].includes(status),
      instance: "/api/v1/agent/runs",
      trace_id: "trace-1",
    }),
    {
      status,
      headers: { "content-type": "application/problem+json", "x-request-id": "trace-1", ...headers },
    },
  );
}

/** A connection failure as undici reports it. */
export function connectionRefused(): Error {
  return new TypeError("fetch failed", {
    cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }),
  });
}

/** A fetch that never answers until its signal aborts (then rejects as fetch does). */
export function hangingResponse(req: SentRequest): Promise<Response> {
  return new Promise((_, reject) => {
    const signal = req.signal;
    if (!signal) return;
    const fail = () => reject(signal.reason ?? new DOMException("aborted", "AbortError"));
    if (signal.aborted) fail();
    else signal.addEventListener("abort", fail, { once: true });
  });
}

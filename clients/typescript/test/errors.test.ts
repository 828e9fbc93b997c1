import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../../../test/support/dispatch.ts";
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  Dispatch,
  DispatchError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
} from "../src/index.ts";
import { mockFetch, problem } from "./support/mock-fetch.ts";

// Every error class, raised for its status by a live server where one can produce it (409 and 5xx
// cannot be provoked on purpose, so a scripted fetch stands in for those).

let t: TestDispatch;
let client: Dispatch;

beforeAll(async () => {
  t = await startTestDispatch();
  client = new Dispatch({ apiKey: t.key, baseURL: t.url });
});
afterAll(async () => {
  await t?.stop();
});

async function caught(promise: Promise<unknown>): Promise<APIError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(APIError);
    return err as APIError;
  }
  throw new Error("expected the call to fail");
}

/** The class is exactly `Class`, with the status, headers and problem body of the response. */
function expectProblem(err: APIError, Class: typeof APIError, status: number, code: string): void {
  expect(err.constructor).toBe(Class);
  expect(err.name).toBe(Class.name);
  expect(err.status).toBe(status);
  expect(err.headers).toBeInstanceOf(Headers);
  expect(err.headers?.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(err.problem).toMatchObject({ status, error_code: code, title: expect.any(String) });
  expect(err.code).toBe(code);
  expect(err.requestID).toBeTruthy();
  expect(err.message).toBe(`${status} ${err.problem!.error}`);
}

describe("error classes from a live server", () => {
  it("401 → AuthenticationError", async () => {
    const stranger = new Dispatch({ apiKey: `dsp_${"x".repeat(40)}`, baseURL: t.url });
    const err = await caught(stranger.runs.list());
    expectProblem(err, AuthenticationError, 401, "authentication_required");
    expect(err.headers?.get("www-authenticate")).toMatch(/^Bearer/);
    expect(err.problem?.detail).toMatch(/unknown or revoked/);
  });

  it("403 → PermissionDeniedError (a read-only key creating a run)", async () => {
    const reader = new Dispatch({ apiKey: await t.newKey("default", { role: "read" }), baseURL: t.url });
    const err = await caught(reader.runs.create({ prompt: "$ true" }));
    expectProblem(err, PermissionDeniedError, 403, "not_authorized");
    expect(err.problem?.detail).toMatch(/read-only/);
  });

  it("404 → NotFoundError, for an unknown run and for another team's", async () => {
    expectProblem(
      await caught(client.runs.retrieve("no-such-run")),
      NotFoundError,
      404,
      "resource_not_found",
    );
    const theirs = await new Dispatch({ apiKey: await t.newKey("other-team"), baseURL: t.url }).runs.create({
      prompt: "$ true",
    });
    const err = await caught(client.runs.retrieve(theirs.run_id));
    expectProblem(err, NotFoundError, 404, "resource_not_found");
  });

  it("400 → BadRequestError naming the field", async () => {
    const err = await caught(client.runs.create({ title: "no prompt" }));
    expectProblem(err, BadRequestError, 400, "invalid_request");
    expect(err.problem?.detail).toMatch(/prompt/);
    const untyped = await caught(client.post("agent/runs", { body: { prompt: 42 } }));
    expectProblem(untyped, BadRequestError, 400, "invalid_request");
  });

  it("422 → UnprocessableEntityError when an idempotency key is reused with another body", async () => {
    const idempotencyKey = `reuse-${crypto.randomUUID()}`;
    await client.runs.create({ prompt: "$ echo first" }, { idempotencyKey });
    const err = await caught(client.runs.create({ prompt: "$ echo second" }, { idempotencyKey }));
    expectProblem(err, UnprocessableEntityError, 422, "idempotency_key_reused");
  });

  it("429 → RateLimitError with Retry-After, once the key's burst is spent", async () => {
    const limited = await startTestDispatch({
      DISPATCH_RATE_LIMIT_BURST: "2",
      DISPATCH_RATE_LIMIT_PER_MINUTE: "1",
    });
    try {
      const dispatch = new Dispatch({ apiKey: limited.key, baseURL: limited.url, maxRetries: 0 });
      await dispatch.runs.list();
      await dispatch.runs.list();
      const err = await caught(dispatch.runs.list());
      expectProblem(err, RateLimitError, 429, "rate_limited");
      expect(Number(err.headers?.get("retry-after"))).toBeGreaterThan(0);
      expect(err.problem?.retryable).toBe(true);
    } finally {
      await limited.stop();
    }
  });

  it("no server listening → APIConnectionError", async () => {
    const port = await closedPort();
    const err = await caught(
      new Dispatch({ apiKey: t.key, baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 }).runs.list(),
    );
    expect(err.constructor).toBe(APIConnectionError);
    expect(err.status).toBeUndefined();
    expect(err.cause).toBeDefined();
  });

  it("a server that never answers → APIConnectionTimeoutError", async () => {
    const silent = createServer(() => {}); // accepts, never responds
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const dispatch = new Dispatch({ apiKey: t.key, baseURL: url, timeout: 200, maxRetries: 1 });
      const err = await caught(dispatch.runs.list());
      expect(err.constructor).toBe(APIConnectionTimeoutError);
      expect(err).toBeInstanceOf(APIConnectionError);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("the first connection of an event stream fails with the status's class", async () => {
    const stream = client.runs.events("no-such-run");
    const err = await caught(
      (async () => {
        for await (const _ of stream) break;
      })(),
    );
    expectProblem(err, NotFoundError, 404, "resource_not_found");
  });
});

describe("error classes for statuses a scripted fetch produces", () => {
  const statuses: Array<[number, string, typeof APIError]> = [
    [409, "conflict", ConflictError],
    [500, "internal_error", InternalServerError],
    [503, "resource_unavailable", InternalServerError],
    [413, "payload_too_large", APIError],
  ];
  for (const [status, code, Class] of statuses) {
    it(`${status} → ${Class.name}`, async () => {
      const m = mockFetch(problem(status, code, "scripted"));
      const dispatch = new Dispatch({ apiKey: t.key, baseURL: t.url, fetch: m.fetch, maxRetries: 0 });
      const err = await caught(dispatch.runs.create({ prompt: "$ true" }));
      expectProblem(err, Class, status, code);
      expect(err.problem?.detail).toBe("scripted");
    });
  }

  it("a non-problem error body is kept as the body, with a status message", async () => {
    const m = mockFetch(new Response("<html>bad gateway</html>", { status: 502, statusText: "Bad Gateway" }));
    const dispatch = new Dispatch({ apiKey: t.key, baseURL: t.url, fetch: m.fetch, maxRetries: 0 });
    const err = await caught(dispatch.runs.list());
    expect(err).toBeInstanceOf(InternalServerError);
    expect(err.problem).toBeUndefined();
    expect(err.body).toBe("<html>bad gateway</html>");
    expect(err.message).toBe("502 Bad Gateway");
  });

  it("configuration mistakes are DispatchErrors, not requests", () => {
    const saved = process.env.DISPATCH_API_KEY;
    delete process.env.DISPATCH_API_KEY;
    try {
      expect(() => new Dispatch()).toThrow(DispatchError);
      expect(() => new Dispatch()).toThrow(/DISPATCH_API_KEY/);
    } finally {
      if (saved !== undefined) process.env.DISPATCH_API_KEY = saved;
    }
    expect(() => new Dispatch({ apiKey: t.key, baseURL: "not a url" })).toThrow(/baseURL/);
  });
});

async function closedPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIUserAbortError,
  BadRequestError,
  ConflictError,
  Dispatch,
  InternalServerError,
  RateLimitError,
} from "../src/index.ts";
import { connectionRefused, hangingResponse, json, mockFetch, problem } from "./support/mock-fetch.ts";

// Retries, backoff and timeouts against a scripted fetch, on vitest's fake clock: waits are observed
// by advancing time, never by sleeping.

const RUN = { run_id: "r1", task_id: "r1", state: "QUEUED", at_capacity: false };
const KEY = `dsp_${"a".repeat(40)}`;

function client(
  fetch: ReturnType<typeof mockFetch>["fetch"],
  options: { maxRetries?: number; timeout?: number } = {},
) {
  return new Dispatch({ apiKey: KEY, baseURL: "http://127.0.0.1:9/api/v1", fetch, ...options });
}

/** Advances the fake clock until `promise` settles, then returns its outcome. */
async function settle<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  let done = false;
  const outcome = promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  void outcome.then(() => {
    done = true;
  });
  for (let i = 0; !done && i < 10_000; i++) await vi.advanceTimersByTimeAsync(50);
  return outcome;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("retries", () => {
  it("waits the Retry-After of a 429 before retrying", async () => {
    const m = mockFetch(problem(429, "rate_limited", "retry in 3 s", { "retry-after": "3" }), json(200, RUN));
    const created = client(m.fetch).runs.create({ prompt: "hi" });
    await vi.advanceTimersByTimeAsync(2_900);
    expect(m.requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(m.requests).toHaveLength(2);
    expect(await created).toEqual(RUN);
  });

  it("prefers retry-after-ms, and reads Retry-After as an HTTP date", async () => {
    const m = mockFetch(
      problem(429, "rate_limited", "slow down", { "retry-after-ms": "1500", "retry-after": "30" }),
      problem(503, "resource_unavailable", "restarting", {
        "retry-after": new Date(Date.now() + 1_500 + 5_000).toUTCString(),
      }),
      json(200, RUN),
    );
    const created = client(m.fetch).runs.create({ prompt: "hi" });
    await vi.advanceTimersByTimeAsync(1_400);
    expect(m.requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(m.requests).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(3_500); // the date has second precision: ≥ 4 s after the 2nd try
    expect(m.requests).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1_600);
    expect(m.requests).toHaveLength(3);
    expect(await created).toEqual(RUN);
  });

  it("does not wait for a Retry-After beyond 60 s: the RateLimitError comes at once", async () => {
    const m = mockFetch(problem(429, "rate_limited", "retry in 120 s", { "retry-after": "120" }));
    const { error } = await settle(client(m.fetch).runs.create({ prompt: "hi" }));
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).headers?.get("retry-after")).toBe("120");
    expect(m.requests).toHaveLength(1);
  });

  it("retries a 500 and returns the success that follows", async () => {
    const m = mockFetch(problem(500, "internal_error", "boom"), json(200, RUN));
    const { value } = await settle(client(m.fetch).runs.retrieve("r1"));
    expect(value).toEqual(RUN);
    expect(m.requests).toHaveLength(2);
  });

  it("backs off exponentially with jitter: about 0.5 s, then 1 s", async () => {
    const times: number[] = [];
    const fail = () => {
      times.push(Date.now());
      return problem(500, "internal_error", "boom");
    };
    const m = mockFetch(fail, fail, fail);
    const { error } = await settle(client(m.fetch).runs.retrieve("r1"));
    expect(error).toBeInstanceOf(InternalServerError);
    expect(m.requests).toHaveLength(3);
    const [first, second] = [times[1]! - times[0]!, times[2]! - times[1]!];
    expect(first).toBeGreaterThanOrEqual(375);
    expect(first).toBeLessThanOrEqual(550);
    expect(second).toBeGreaterThanOrEqual(750);
    expect(second).toBeLessThanOrEqual(1_050);
  });

  it("does not retry a 400", async () => {
    const m = mockFetch(problem(400, "invalid_request", "prompt: required"), json(200, RUN));
    const { error } = await settle(client(m.fetch).runs.create({ prompt: "" }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(m.requests).toHaveLength(1);
  });

  it("retries a 409 conflict, and raises ConflictError when retries run out", async () => {
    const retried = mockFetch(problem(409, "conflict", "a concurrent change won"), json(200, RUN));
    expect((await settle(client(retried.fetch).runs.create({ prompt: "hi" }))).value).toEqual(RUN);
    expect(retried.requests).toHaveLength(2);

    const exhausted = mockFetch(problem(409, "conflict", "again"), problem(409, "conflict", "again"));
    const { error } = await settle(client(exhausted.fetch, { maxRetries: 1 }).runs.create({ prompt: "hi" }));
    expect(error).toBeInstanceOf(ConflictError);
    expect(exhausted.requests).toHaveLength(2);
  });

  it("follows x-should-retry either way", async () => {
    const no = mockFetch(problem(500, "internal_error", "do not", { "x-should-retry": "false" }));
    expect((await settle(client(no.fetch).runs.retrieve("r1"))).error).toBeInstanceOf(InternalServerError);
    expect(no.requests).toHaveLength(1);

    const yes = mockFetch(
      problem(400, "invalid_request", "try again", { "x-should-retry": "true" }),
      json(200, RUN),
    );
    expect((await settle(client(yes.fetch).runs.retrieve("r1"))).value).toEqual(RUN);
    expect(yes.requests).toHaveLength(2);
  });

  it("retries connection errors, then raises APIConnectionError with the cause", async () => {
    const recovered = mockFetch(connectionRefused(), json(200, RUN));
    expect((await settle(client(recovered.fetch).runs.retrieve("r1"))).value).toEqual(RUN);

    const m = mockFetch(connectionRefused(), connectionRefused(), connectionRefused());
    const { error } = await settle(client(m.fetch).runs.retrieve("r1"));
    expect(error).toBeInstanceOf(APIConnectionError);
    expect((error as APIConnectionError).status).toBeUndefined();
    expect((error as Error).cause).toBeInstanceOf(TypeError);
    expect(m.requests).toHaveLength(3);
  });

  it("honours maxRetries per client and per request", async () => {
    const m = mockFetch(...Array.from({ length: 6 }, () => problem(500, "internal_error", "boom")));
    await settle(client(m.fetch, { maxRetries: 4 }).runs.retrieve("r1"));
    expect(m.requests).toHaveLength(5);
    await settle(client(m.fetch, { maxRetries: 4 }).runs.retrieve("r1", { maxRetries: 0 }));
    expect(m.requests).toHaveLength(6);
  });
});

describe("idempotency keys", () => {
  it("are one per logical POST, the same on every retry, and new for the next call", async () => {
    const m = mockFetch(
      problem(500, "internal_error", "boom"),
      connectionRefused(),
      json(200, RUN),
      json(200, { followup_id: "f1", outcome: "live_session" }),
    );
    const dispatch = client(m.fetch);
    await settle(dispatch.runs.create({ prompt: "hi" }));
    await settle(dispatch.runs.followup("r1", { message: "more" }));
    const keys = m.requests.map((r) => r.headers.get("idempotency-key"));
    expect(keys[0]).toMatch(/^dispatch-ts-[0-9a-f-]{32,}$/);
    expect(keys.slice(0, 3)).toEqual([keys[0], keys[0], keys[0]]);
    expect(keys[3]).toBeTruthy();
    expect(keys[3]).not.toBe(keys[0]);
  });

  it("take the caller's key when given, and are not sent on GET", async () => {
    const m = mockFetch(json(200, RUN), json(200, RUN));
    const dispatch = client(m.fetch);
    await settle(dispatch.runs.create({ prompt: "hi" }, { idempotencyKey: "order-42" }));
    await settle(dispatch.runs.retrieve("r1"));
    expect(m.requests[0]!.headers.get("idempotency-key")).toBe("order-42");
    expect(m.requests[1]!.headers.has("idempotency-key")).toBe(false);
  });
});

describe("timeouts", () => {
  it("raise APIConnectionTimeoutError after retrying each timed-out attempt", async () => {
    const m = mockFetch(hangingResponse, hangingResponse);
    const pending = client(m.fetch, { timeout: 1_000, maxRetries: 1 }).runs.retrieve("r1");
    const { error } = await settle(pending);
    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect(m.requests).toHaveLength(2);
  });

  it("can be set per request", async () => {
    const m = mockFetch(hangingResponse);
    const pending = client(m.fetch, { timeout: 600_000 }).runs.retrieve("r1", {
      timeout: 2_000,
      maxRetries: 0,
    });
    await vi.advanceTimersByTimeAsync(1_900);
    expect(m.requests[0]!.signal?.aborted).toBe(false);
    const { error } = await settle(pending);
    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
  });
});

describe("per-request options", () => {
  it("add and remove headers over the client's defaults", async () => {
    const m = mockFetch(json(200, RUN));
    const dispatch = new Dispatch({
      apiKey: KEY,
      baseURL: "http://127.0.0.1:9/api/v1",
      fetch: m.fetch,
      defaultHeaders: { "x-team-hint": "a", "x-trace": "t" },
    });
    await settle(dispatch.runs.retrieve("r1", { headers: { "x-trace": null, "x-extra": "1" } }));
    const headers = m.requests[0]!.headers;
    expect(headers.get("authorization")).toBe(`Bearer ${KEY}`);
    expect(headers.get("x-team-hint")).toBe("a");
    expect(headers.has("x-trace")).toBe(false);
    expect(headers.get("x-extra")).toBe("1");
  });

  it("stop on the caller's signal with APIUserAbortError, also while waiting to retry", async () => {
    const m = mockFetch(problem(500, "internal_error", "boom"), json(200, RUN));
    const controller = new AbortController();
    const pending = client(m.fetch).runs.retrieve("r1", { signal: controller.signal });
    await vi.advanceTimersByTimeAsync(10);
    controller.abort();
    const { error } = await settle(pending);
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect(m.requests).toHaveLength(1);
  });
});

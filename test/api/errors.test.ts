import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemSchema } from "../../src/api/schemas/common.ts";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";

let t: TestDispatch;
let runId: string;
beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0", DISPATCH_SQLITE_BUSY_TIMEOUT_MS: "20" });
  runId = (await t.api("POST", "/api/v1/agent/runs", { prompt: "x" })).body.run_id;
});
afterAll(() => t.stop());

const RETRYABLE: Record<number, boolean> = { 409: true, 429: true, 500: true, 503: true };

function expectProblem(
  res: { status: number; headers: Headers; body: unknown },
  status: number,
  code: string,
  path?: string,
) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers.get("content-type")).toContain("application/problem+json");
  const body = ProblemSchema.parse(res.body);
  expect(body.status).toBe(status);
  expect(body.error_code).toBe(code);
  expect(body.retryable).toBe(RETRYABLE[status] ?? false);
  expect(body.error).toBe(body.detail ? `${body.title} (${body.detail})` : body.title);
  if (path) expect(body.instance).toBe(path);
  return body;
}

async function raw(
  method: string,
  path: string,
  init: { headers?: Record<string, string>; body?: string | Uint8Array<ArrayBuffer> } = {},
) {
  const res = await fetch(t.url + path, {
    method,
    headers: { authorization: `Bearer ${t.key}`, ...init.headers },
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, body, text };
}

describe("every error code of the API", () => {
  it("400 invalid_request names the field", async () => {
    const res = await t.api("POST", "/api/v1/agent/runs", { prompt: 42 });
    const body = expectProblem(res, 400, "invalid_request", "/api/v1/agent/runs");
    expect(body.detail).toContain("prompt");
  });

  it("401 authentication_required for missing, malformed, unknown and revoked keys — before the body is read", async () => {
    for (const authorization of ["", "Basic abc", "Bearer nope", `Bearer dsp_${"A".repeat(40)}`]) {
      const res = await raw("POST", "/api/v1/agent/runs", {
        headers: { authorization, "content-type": "application/json" },
        body: "{not json",
      });
      expectProblem(res, 401, "authentication_required");
    }
    const key = await t.newKey("team_default");
    const keyId = (await t.dispatch.store.listApiKeys()).at(-1)!.id;
    expect(
      (await t.api("GET", "/api/v1/agent/runs", undefined, { authorization: `Bearer ${key}` })).status,
    ).toBe(200);
    await t.dispatch.store.revokeApiKey(keyId, new Date().toISOString());
    expectProblem(
      await t.api("GET", "/api/v1/agent/runs", undefined, { authorization: `Bearer ${key}` }),
      401,
      "authentication_required",
    );
  });

  it("403 not_authorized for a read-only key that tries to change something", async () => {
    const key = await t.newKey("team_default", { role: "read" });
    const h = { authorization: `Bearer ${key}` };
    expect((await t.api("GET", `/api/v1/agent/runs/${runId}`, undefined, h)).status).toBe(200);
    expectProblem(await t.api("POST", "/api/v1/agent/runs", { prompt: "x" }, h), 403, "not_authorized");
    expectProblem(
      await t.api("POST", `/api/v1/agent/runs/${runId}/cancel`, undefined, h),
      403,
      "not_authorized",
    );
  });

  it("404 resource_not_found for unknown routes and runs", async () => {
    expectProblem(await t.api("GET", "/api/v1/nope"), 404, "resource_not_found", "/api/v1/nope");
    expectProblem(await t.api("GET", "/api/v1/agent/runs/unknown-run"), 404, "resource_not_found");
  });

  it("405 method_not_allowed with an Allow header", async () => {
    const res = await t.api("DELETE", `/api/v1/agent/runs/${runId}`);
    expectProblem(res, 405, "method_not_allowed");
    expect(res.headers.get("allow")).toContain("GET");
    const put = await t.api("PUT", "/api/v1/agent/runs");
    expectProblem(put, 405, "method_not_allowed");
    expect(put.headers.get("allow")).toMatch(/GET.*POST|POST.*GET/);
  });

  it("409 conflict when another writer holds the database, and the retry succeeds", async () => {
    const other = new DatabaseSync(join(t.dataDir, "dispatch.db"));
    other.exec("BEGIN IMMEDIATE");
    try {
      expectProblem(await t.api("POST", "/api/v1/agent/runs", { prompt: "x" }), 409, "conflict");
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    expect((await t.api("POST", "/api/v1/agent/runs", { prompt: "x" })).status).toBe(200);
  });

  it("413 payload_too_large over a route's body limit (1 MiB; create and follow-ups admit five images)", async () => {
    const identity = await t.api("POST", "/api/v1/agent/identities", { name: "x".repeat(1024 * 1024 + 10) });
    expectProblem(identity, 413, "payload_too_large");
    const run = await t.api("POST", "/api/v1/agent/runs", { prompt: "x".repeat(40 * 1024 * 1024) });
    expectProblem(run, 413, "payload_too_large");
  });

  it("415 unsupported_media_type for a body that is not JSON", async () => {
    const res = await raw("POST", "/api/v1/agent/runs", {
      headers: { "content-type": "text/plain" },
      body: "prompt=x",
    });
    expectProblem(res, 415, "unsupported_media_type");
  });

  it("422 idempotency_key_reused for the same key with another body", async () => {
    const h = { "idempotency-key": "reuse-me" };
    expect((await t.api("POST", "/api/v1/agent/runs", { prompt: "a" }, h)).status).toBe(200);
    expectProblem(
      await t.api("POST", "/api/v1/agent/runs", { prompt: "b" }, h),
      422,
      "idempotency_key_reused",
    );
  });

  it("429 rate_limited with Retry-After", async () => {
    const limited = await startTestDispatch({
      DISPATCH_MAX_CONCURRENT_RUNS: "0",
      DISPATCH_RATE_LIMIT_PER_MINUTE: "1",
      DISPATCH_RATE_LIMIT_BURST: "3",
    });
    try {
      const statuses: number[] = [];
      let last: Awaited<ReturnType<typeof limited.api>> | undefined;
      for (let i = 0; i < 4; i++) {
        last = await limited.api("GET", "/api/v1/agent/runs");
        statuses.push(last.status);
      }
      expect(statuses).toEqual([200, 200, 200, 429]);
      expectProblem(last!, 429, "rate_limited");
      expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
      // Another key has its own bucket.
      const other = await limited.newKey("team_default");
      expect(
        (await limited.api("GET", "/api/v1/agent/runs", undefined, { authorization: `Bearer ${other}` }))
          .status,
      ).toBe(200);
    } finally {
      await limited.stop();
    }
  });

  it("500 internal_error for a bug: logged with a trace id, never for bad input", async () => {
    const store = t.dispatch.store;
    const original = store.getRun;
    store.getRun = async () => {
      throw new Error("injected fault");
    };
    try {
      const res = await t.api("GET", `/api/v1/agent/runs/${runId}`);
      const body = expectProblem(res, 500, "internal_error");
      expect(body.trace_id).toBe(res.headers.get("x-request-id"));
      expect(JSON.stringify(body)).not.toContain("injected fault");
    } finally {
      store.getRun = original;
    }
  });

  it("503 resource_unavailable with Retry-After when the database is down", async () => {
    const down = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
    try {
      await down.dispatch.store.close();
      const res = await down.api("GET", "/api/v1/agent/runs");
      expectProblem(res, 503, "resource_unavailable");
      expect(res.headers.get("retry-after")).toBeTruthy();
      const ready = await fetch(`${down.url}/readyz`);
      expect(ready.status).toBe(503);
      expect((await fetch(`${down.url}/healthz`)).status).toBe(200);
    } finally {
      await down.stop();
    }
  });
});

describe("a JSON Content-Type with an empty body is a request without a body", () => {
  it("cancel as the official Oz Python SDK sends it → 200; create still says what it needs", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", { prompt: "$ sleep 30" });
    const id = created.body.run_id;
    const cancel = await raw("POST", `/api/v1/agent/runs/${id}/cancel`, {
      headers: { "content-type": "application/json" },
      body: "",
    });
    expect(cancel.status, cancel.text).toBe(200);
    expect(cancel.body).toBe(id);
    const create = await raw("POST", "/api/v1/agent/runs", {
      headers: { "content-type": "application/json" },
      body: "",
    });
    expect(expectProblem(create, 400, "invalid_request").detail).toBe("body: expected a JSON object");
  });
});

describe("no input of any shape yields a 5xx", () => {
  const bodies: Array<[string, string | Uint8Array<ArrayBuffer>]> = [
    ["malformed JSON", "{"],
    ["a JSON string", '"hello"'],
    ["a JSON array", "[1,2]"],
    ["null", "null"],
    ["a number", "12"],
    ["empty body", ""],
    ["prompt of wrong type", '{"prompt": ["x"]}'],
    ["empty prompt", '{"prompt": "   "}'],
    ["no prompt and no skill", '{"title": "x"}'],
    ["title too long", JSON.stringify({ prompt: "x", title: "t".repeat(301) })],
    ["prompt too long", JSON.stringify({ prompt: "p".repeat(100_001) })],
    ["config not an object", '{"prompt": "x", "config": "fast"}'],
    ["config.model_id wrong type", '{"prompt": "x", "config": {"model_id": 5}}'],
    [
      "mcp server with command and url",
      '{"prompt":"x","config":{"mcp_servers":{"a":{"command":"x","url":"http://a"}}}}',
    ],
    ["mcp server with neither", '{"prompt":"x","config":{"mcp_servers":{"a":{}}}}'],
    ["max_run_minutes negative", '{"prompt":"x","config":{"max_run_minutes":-1}}'],
    ["metadata with a bad key", '{"prompt":"x","metadata":{"bad key":"v"}}'],
    ["metadata value too long", JSON.stringify({ prompt: "x", metadata: { k: "v".repeat(257) } })],
    [
      "too many metadata keys",
      JSON.stringify({
        prompt: "x",
        metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, "v"])),
      }),
    ],
    ["metadata value not a string", '{"prompt":"x","metadata":{"k":1}}'],
    ["prototype pollution", '{"prompt":"x","__proto__":{"admin":true}}'],
    ["deep nesting", `${"[".repeat(5000)}${"]".repeat(5000)}`],
    ["invalid UTF-8", new Uint8Array([0xff, 0xfe, 0x7b, 0x7d])],
  ];
  for (const [what, body] of bodies) {
    it(`create with ${what} → 400`, async () => {
      const res = await raw("POST", "/api/v1/agent/runs", {
        headers: { "content-type": "application/json" },
        body,
      });
      expect(res.status, res.text).toBe(400);
      expectProblem(res, 400, "invalid_request");
    });
  }

  it("follow-up with an empty, missing or oversized message → 400", async () => {
    for (const body of [
      '{"message": ""}',
      "{}",
      '{"message": 3}',
      '{"message":"x","mode":"turbo"}',
      JSON.stringify({ message: "m".repeat(100_001) }),
    ]) {
      const res = await raw("POST", `/api/v1/agent/runs/${runId}/followups`, {
        headers: { "content-type": "application/json" },
        body,
      });
      expectProblem(res, 400, "invalid_request");
    }
  });

  const queries = [
    "limit=0",
    "limit=501",
    "limit=abc",
    "limit=1&limit=2",
    "sort_by=state",
    "sort_order=up",
    "state=RUNNING",
    "created_after=yesterday",
    "updated_after=2026-13-45T99:00:00Z",
    "cursor=not-a-cursor",
    `cursor=${Buffer.from('{"s":"title","o":"asc","v":"a","i":"b"}').toString("base64url")}`,
    "name=a&config_name=b",
    "q=",
  ];
  for (const qs of queries) {
    it(`list with ${qs} → 400 naming the parameter`, async () => {
      const res = await t.api("GET", `/api/v1/agent/runs?${qs}`);
      const body = expectProblem(res, 400, "invalid_request");
      const param = qs.split("=")[0]!;
      expect(body.detail).toContain(param === "q" ? "q" : param);
    });
  }

  it("events with bad paging parameters or Last-Event-ID → 400", async () => {
    expectProblem(await t.api("GET", `/api/v1/agent/runs/${runId}/events?after=-1`), 400, "invalid_request");
    expectProblem(
      await t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1001`),
      400,
      "invalid_request",
    );
    expectProblem(
      await t.api("GET", `/api/v1/agent/runs/${runId}/events`, undefined, {
        accept: "text/event-stream",
        "last-event-id": "x",
      }),
      400,
      "invalid_request",
    );
  });

  it("oversized Idempotency-Key, odd paths and bad percent-encoding → 4xx", async () => {
    expectProblem(
      await t.api("POST", "/api/v1/agent/runs", { prompt: "x" }, { "idempotency-key": "k".repeat(256) }),
      400,
      "invalid_request",
    );
    expectProblem(await t.api("GET", `/api/v1/agent/runs/${"x".repeat(5000)}`), 400, "invalid_request");
    expectProblem(await raw("GET", "/api/v1/agent/runs/%E0%A4%A"), 400, "invalid_request");
    expect((await raw("GET", "/api/v1/agent/runs/..%2F..%2Fetc%2Fpasswd")).status).toBe(404);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";

let t: TestDispatch;
beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
});
afterAll(() => t.stop());

describe("JSON bodies with keys that reach the prototype", () => {
  it.each([
    ['{"prompt": "hi", "metadata": {"__proto__": {"team": "x"}}}', "metadata.__proto__"],
    ['{"__proto__": {"admin": true}, "prompt": "hi"}', "__proto__"],
    [
      '{"prompt": "hi", "config": {"mcp_servers": {"a": {"__proto__": {}}}}}',
      "config.mcp_servers.a.__proto__",
    ],
    ['{"prompt": "hi", "config": {"constructor": {"prototype": {"x": 1}}}}', "config.constructor.prototype"],
  ])("answers 400 naming the key in %s", async (body, path) => {
    const res = await t.api("POST", "/api/v1/agent/runs", body, { "content-type": "application/json" });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe("invalid_request");
    expect(res.body.detail).toBe(
      `${path}: this key is not accepted, as it would reach JavaScript's object prototype; rename or remove it`,
    );
  });

  it("still calls malformed JSON malformed", async () => {
    const res = await t.api("POST", "/api/v1/agent/runs", '{"prompt": ', {
      "content-type": "application/json",
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/not valid JSON/);
  });
});

describe("optional bodies", () => {
  const json = { "content-type": "application/json" };

  it("may be left out (an empty body is none), but JSON null is not an object", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", { prompt: "hi" });
    const cancel = `/api/v1/agent/runs/${created.body.run_id}/cancel`;
    const refused = await t.api("POST", cancel, "null", json);
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toBe("body: expected a JSON object");
    const cancelled = await t.api("POST", cancel, "", json);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toBe(created.body.run_id);
  });
});

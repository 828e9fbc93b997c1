import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";

let t: TestDispatch;
beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
});
afterAll(() => t.stop());

async function count(): Promise<number> {
  const res = await t.api("GET", "/api/v1/agent/runs?limit=500");
  return res.body.runs.length;
}

describe("Idempotency-Key", () => {
  it("20 parallel identical creates make one run and all get the original response", async () => {
    const before = await count();
    const body = { prompt: "deploy", metadata: { b: "2", a: "1" } };
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        t.api(
          "POST",
          i % 2 ? "/api/v1/agent/run" : "/api/v1/agent/runs",
          // Equal as parsed JSON, whatever the key order.
          i % 3 ? body : { metadata: { a: "1", b: "2" }, prompt: "deploy" },
          { "idempotency-key": "parallel-1" },
        ),
      ),
    );
    for (const res of responses) expect([200, 409]).toContain(res.status);
    const ok = responses.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThan(0);
    expect(new Set(ok.map((r) => r.text)).size).toBe(1);
    expect(await count()).toBe(before + 1);
  });

  it("the key is scoped to the principal", async () => {
    const other = await t.newKey("team_default");
    const a = await t.api("POST", "/api/v1/agent/runs", { prompt: "x" }, { "idempotency-key": "shared" });
    const b = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: "x" },
      { "idempotency-key": "shared", authorization: `Bearer ${other}` },
    );
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.body.run_id).not.toBe(b.body.run_id);
  });

  it("only 2xx responses are remembered", async () => {
    const bad = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: 1 },
      { "idempotency-key": "after-error" },
    );
    expect(bad.status).toBe(400);
    const good = await t.api(
      "POST",
      "/api/v1/agent/runs",
      { prompt: "fixed" },
      { "idempotency-key": "after-error" },
    );
    expect(good.status).toBe(200);
  });

  it("follow-ups: a repeated follow-up is recorded once; another message under the key is 422", async () => {
    const id = (await t.api("POST", "/api/v1/agent/runs", { prompt: "x" })).body.run_id;
    const h = { "idempotency-key": "fu-1" };
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "more" }, h),
      ),
    );
    expect(new Set(results.map((r) => r.body.followup_id)).size).toBe(1);
    const events = (await t.api("GET", `/api/v1/agent/runs/${id}/events`)).body.events;
    expect(events.filter((e: { type: string }) => e.type === "followup")).toHaveLength(1);
    const reused = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "different" }, h);
    expect(reused.status).toBe(422);
    // The same key on another run is another request.
    const id2 = (await t.api("POST", "/api/v1/agent/runs", { prompt: "y" })).body.run_id;
    expect((await t.api("POST", `/api/v1/agent/runs/${id2}/followups`, { message: "more" }, h)).status).toBe(
      422,
    );
  });

  it("cancel: a retry with the same key gets the original 200, without a key it is a 400", async () => {
    const id = (await t.api("POST", "/api/v1/agent/runs", { prompt: "x" })).body.run_id;
    const h = { "idempotency-key": "cancel-1" };
    const first = await t.api("POST", `/api/v1/agent/runs/${id}/cancel`, undefined, h);
    const retried = await t.api("POST", `/api/v1/agent/runs/${id}/cancel`, undefined, h);
    expect([first.status, retried.status]).toEqual([200, 200]);
    expect(retried.body).toBe(id);
    expect((await t.api("POST", `/api/v1/agent/runs/${id}/cancel`)).status).toBe(400);
    const states = (await t.api("GET", `/api/v1/agent/runs/${id}/events`)).body.events.filter(
      (e: { type: string }) => e.type === "state",
    );
    expect(states.map((e: { data: { state: string } }) => e.data.state)).toEqual(["QUEUED", "CANCELLED"]);
  });
});

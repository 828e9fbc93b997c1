import { expect, it } from "vitest";
import { startTestDispatch, waitFor } from "../support/dispatch.ts";

it("logs JSON lines with request ids and never the API key, even at trace level and on errors", async () => {
  const lines: string[] = [];
  const key = `dsp_${"K".repeat(40)}`;
  const t = await startTestDispatch({ DISPATCH_ADMIN_API_KEY: key }, { logs: lines, logLevel: "trace" });
  try {
    const h = {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      "x-request-id": "trace-me",
    };
    const created = await (
      await fetch(`${t.url}/api/v1/agent/runs`, { method: "POST", headers: h, body: '{"prompt":"$ true"}' })
    ).json();
    await fetch(`${t.url}/api/v1/agent/runs`, { method: "POST", headers: h, body: "{broken" });
    await fetch(`${t.url}/api/v1/agent/runs/${created.run_id}`, {
      headers: { authorization: `Bearer dsp_${"X".repeat(40)}` },
    });
    const original = t.dispatch.store.listRuns;
    t.dispatch.store.listRuns = async () => {
      throw new Error(`fault while handling ${key}`);
    };
    await fetch(`${t.url}/api/v1/agent/runs`, { headers: h });
    t.dispatch.store.listRuns = original;
    await waitFor(
      async () =>
        (await (await fetch(`${t.url}/api/v1/agent/runs/${created.run_id}`, { headers: h })).json()).state ===
        "SUCCEEDED",
    );
  } finally {
    await t.stop();
  }
  const records = lines.map((l) => JSON.parse(l));
  expect(records.some((r) => r.reqId === "trace-me")).toBe(true);
  expect(records.some((r) => r.msg === "unhandled error" && r.trace_id)).toBe(true);
  const all = lines.join("\n");
  // Even an error message that carries a key is scrubbed.
  expect(all).toContain("fault while handling dsp_[redacted]");
  expect(all).not.toContain("K".repeat(40));
  expect(all).not.toContain("X".repeat(40));
});

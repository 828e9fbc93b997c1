import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { expect, it } from "vitest";
import { startDispatch } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { waitFor } from "../support/dispatch.ts";

it("logs JSON lines with request ids and never the API key, even at trace level and on errors", async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  const dataDir = await mkdtemp(join(tmpdir(), "dispatch-log-"));
  const key = `dsp_${"K".repeat(40)}`;
  const d = await startDispatch(
    loadConfig({ DISPATCH_DATA_DIR: dataDir, DISPATCH_PORT: "0", DISPATCH_ADMIN_API_KEY: key }),
    createLogger("trace", sink),
  );
  try {
    const h = {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      "x-request-id": "trace-me",
    };
    const created = await (
      await fetch(`${d.url}/api/v1/agent/runs`, { method: "POST", headers: h, body: '{"prompt":"$ true"}' })
    ).json();
    await fetch(`${d.url}/api/v1/agent/runs`, { method: "POST", headers: h, body: "{broken" });
    await fetch(`${d.url}/api/v1/agent/runs/${created.run_id}`, {
      headers: { authorization: `Bearer dsp_${"X".repeat(40)}` },
    });
    const original = d.store.listRuns;
    d.store.listRuns = async () => {
      throw new Error(`fault while handling ${key}`);
    };
    await fetch(`${d.url}/api/v1/agent/runs`, { headers: h });
    d.store.listRuns = original;
    await waitFor(
      async () =>
        (await (await fetch(`${d.url}/api/v1/agent/runs/${created.run_id}`, { headers: h })).json()).state ===
        "SUCCEEDED",
    );
  } finally {
    await d.stop();
    await rm(dataDir, { recursive: true, force: true });
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

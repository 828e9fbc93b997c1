import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch } from "../support/dispatch.ts";

/** Dispatch itself connects to a run's `url` MCP servers: only those the operator allows may be named. */
describe("MCP server URLs at create", () => {
  let t: TestDispatch;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-mcp-config-"));
    const configFile = join(dir, "dispatch.config.yaml");
    await writeFile(
      configFile,
      "mcp:\n  allowed_urls:\n    - https://mcp.example.com\n    - https://tools.example.org/mcp\n",
    );
    // No executor: the runs are only created, never connected to.
    t = await startTestDispatch({ DISPATCH_CONFIG_FILE: configFile, DISPATCH_MAX_CONCURRENT_RUNS: "0" });
  });
  afterAll(async () => {
    await t?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const create = (url: string) =>
    t.api("POST", "/api/v1/agent/runs", { prompt: "x", config: { mcp_servers: { remote: { url } } } });

  it.each([
    "http://127.0.0.1:8080/api/v1/agent/runs",
    "http://169.254.169.254/latest/meta-data/",
    "https://mcp.example.com.attacker.net/mcp",
    "http://mcp.example.com/mcp",
    "https://tools.example.org/mcp-other",
    "https://tools.example.org/",
  ])("refuses %s with a 400 naming the setting that allows it", async (url) => {
    const res = await create(url);
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe("invalid_request");
    expect(res.body.detail).toContain(
      `config.mcp_servers.remote.url: ${url} is not an allowed MCP server URL`,
    );
    expect(res.body.detail).toContain("mcp.allowed_urls in dispatch.config.yaml");
  });

  it.each([
    "https://mcp.example.com/mcp",
    "https://tools.example.org/mcp",
    "https://tools.example.org/mcp/v1",
  ])("accepts %s", async (url) => {
    const res = await create(url);
    expect(res.status).toBe(200);
    const run = await t.api("GET", `/api/v1/agent/runs/${res.body.run_id}`);
    expect(run.body.agent_config.mcp_servers).toEqual({ remote: { url } });
  });

  it("refuses every url when none is allowed (the default)", async () => {
    const plain = await startTestDispatch({ DISPATCH_MAX_CONCURRENT_RUNS: "0" });
    try {
      const res = await plain.api("POST", "/api/v1/agent/runs", {
        prompt: "x",
        config: { mcp_servers: { remote: { url: "https://mcp.example.com/mcp" } } },
      });
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain("(none is allowed)");
    } finally {
      await plain.stop();
    }
  });
});

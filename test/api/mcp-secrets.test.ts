import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { type FakeModel, startFakeModel } from "../support/fake-model/server.ts";

/**
 * The values of a run's MCP servers' `env` and `headers` are its creator's tokens: anyone who may read the
 * run (a read key, the session link) sees the config with those values replaced, never the values, while
 * the MCP server the executor starts still receives them.
 */
describe("secrets in config.mcp_servers", () => {
  const ENV_SECRET = "env-secret-6f1d2a9c";
  const HEADER_SECRET = "header-secret-93b7e0d4";
  let t: TestDispatch;
  let fake: FakeModel;
  let dir: string;
  let serverSource: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "dispatch-mcp-secrets-"));
    const configFile = join(dir, "dispatch.config.yaml");
    await writeFile(configFile, "mcp:\n  allowed_urls:\n    - https://mcp.example.com\n");
    serverSource = await readFile(
      fileURLToPath(new URL("../fixtures/mcp-test-server.cjs", import.meta.url)),
      "utf8",
    );
    // The agent asks the stdio server for its own environment: what the executor gave it.
    fake = await startFakeModel([
      { calls: [{ name: "tools__read", input: { path: "/proc/self/environ" } }] },
      { text: "Read it." },
    ]);
    t = await startTestDispatch({
      DISPATCH_CONFIG_FILE: configFile,
      OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl("openai"),
    });
  });
  afterAll(async () => {
    await t?.stop();
    await fake?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("are shown redacted by GET, list, the events and the session page", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "Look around\n$ true",
      config: {
        harness: { type: "scripted" },
        mcp_servers: {
          tools: { command: "mcp-tools", args: ["--stdio"], env: { TOOLS_TOKEN: ENV_SECRET, MODE: "fast" } },
          remote: {
            url: "https://mcp.example.com/mcp",
            headers: { Authorization: `Bearer ${HEADER_SECRET}` },
          },
        },
      },
    });
    expect(created.status, created.text).toBe(200);
    const run = await waitForState(t, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);

    const got = await t.api("GET", `/api/v1/agent/runs/${run.run_id}`);
    const listed = await t.api("GET", "/api/v1/agent/runs?limit=100");
    const events = await t.api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=1000`);
    const page = await fetch(run.session_link as string);
    const html = await page.text();
    expect(page.status).toBe(200);
    for (const text of [got.text, listed.text, events.text, html]) {
      expect(text).not.toContain(ENV_SECRET);
      expect(text).not.toContain(HEADER_SECRET);
    }
    // The names stay, so that people can tell what was set; the rest of the server's config is unchanged.
    expect(got.body.agent_config.mcp_servers).toEqual({
      tools: {
        command: "mcp-tools",
        args: ["--stdio"],
        env: { TOOLS_TOKEN: "[redacted]", MODE: "[redacted]" },
      },
      remote: { url: "https://mcp.example.com/mcp", headers: { Authorization: "[redacted]" } },
    });
    const item = listed.body.runs.find((r: { run_id: string }) => r.run_id === run.run_id);
    expect(item.agent_config.mcp_servers).toEqual(got.body.agent_config.mcp_servers);
  });

  it("are refused at create when sent back as shown, naming the field", async () => {
    const res = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "x",
      config: { mcp_servers: { tools: { command: "mcp-tools", env: { TOOLS_TOKEN: "[redacted]" } } } },
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe(
      'config.mcp_servers.tools.env.TOOLS_TOKEN: "[redacted]" is how Dispatch shows a secret, not its value; give the value',
    );
  });

  it("are shown redacted by a schedule, and kept when its config is sent back as shown", async () => {
    const created = await t.api("POST", "/api/v1/agent/schedules", {
      name: "nightly-tools",
      cron_schedule: "0 3 * * *",
      prompt: "$ true",
      agent_config: {
        mcp_servers: {
          remote: {
            url: "https://mcp.example.com/mcp",
            headers: { Authorization: `Bearer ${HEADER_SECRET}` },
          },
        },
      },
    });
    expect(created.status, created.text).toBe(201);
    const got = await t.api("GET", `/api/v1/agent/schedules/${created.body.id}`);
    const listed = await t.api("GET", "/api/v1/agent/schedules");
    for (const text of [created.text, got.text, listed.text]) expect(text).not.toContain(HEADER_SECRET);
    expect(got.body.agent_config.mcp_servers.remote.headers).toEqual({ Authorization: "[redacted]" });

    // Read, change the time, write back: the header the client was never shown stays the schedule's.
    const { id, name, prompt, enabled, agent_config } = got.body;
    const replaced = await t.api("PUT", `/api/v1/agent/schedules/${id}`, {
      name,
      prompt,
      enabled,
      agent_config,
      cron_schedule: "0 4 * * *",
    });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.text).not.toContain(HEADER_SECRET);
    const stored = (await t.dispatch.store.getSchedule(got.body.scope.uid, id))!;
    expect(stored.cronSchedule).toBe("0 4 * * *");
    expect(stored.agentConfig.mcp_servers?.remote?.headers).toEqual({
      Authorization: `Bearer ${HEADER_SECRET}`,
    });
  });

  it("still reach the MCP server the executor starts", async () => {
    const created = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "Read your environment",
      config: {
        model_id: "openai-compatible/fake-coder",
        mcp_servers: {
          tools: { command: "node", args: ["-e", serverSource], env: { TOOLS_TOKEN: ENV_SECRET } },
        },
      },
    });
    expect(created.status, created.text).toBe(200);
    const run = await waitForState(t, created.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(run.status_message).toBeUndefined();
    expect(run.agent_config.mcp_servers.tools.env).toEqual({ TOOLS_TOKEN: "[redacted]" });
    const events = await t.api("GET", `/api/v1/agent/runs/${run.run_id}/events?limit=1000`);
    const read = (
      events.body.events as Array<{ type: string; data: { tool?: string; output?: string } }>
    ).find((e) => e.type === "tool_result" && e.data.tool === "tools__read");
    expect(read?.data.output).toContain(`TOOLS_TOKEN=${ENV_SECRET}`);
  });
});

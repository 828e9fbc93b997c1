import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelConfigError } from "../../../src/harnesses/builtin/models.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../../support/dispatch.ts";
import { type FakeModel, startFakeModel } from "../../support/fake-model/server.ts";
import { scriptedModel, type Turn, userTexts } from "./support.ts";

type Ev = { type: string; data: Record<string, unknown> };

/** Mock models by model_id, so each test scripts its own. */
const mocks = new Map<string, ReturnType<typeof scriptedModel>>();
const script = (name: string, turns: Parameters<typeof scriptedModel>[0]) => {
  const m = scriptedModel(turns);
  mocks.set(`mock/${name}`, m);
  return m;
};

let t: TestDispatch;
beforeAll(async () => {
  t = await startTestDispatch(
    {},
    {
      builtin: {
        resolveModel: (id) => {
          const m = id ? mocks.get(id) : undefined;
          if (!m) throw new ModelConfigError(`no mock model ${id}`);
          return { id: id!, model: m.model };
        },
      },
    },
  );
});
afterAll(async () => {
  await t?.stop();
});

const create = async (t: TestDispatch, prompt: string, config: Record<string, unknown>) => {
  const res = await t.api("POST", "/api/v1/agent/runs", { prompt, config });
  expect(res.status).toBe(200);
  return res.body.run_id as string;
};
const events = async (t: TestDispatch, id: string) =>
  (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events as Ev[];
const ws = (t: TestDispatch, id: string, file: string) => join(t.dataDir, "workspaces", id, file);

describe("builtin harness through the executor (MockLanguageModelV4)", () => {
  it("edits a file in the workspace over several steps and succeeds, with usage on the run", async () => {
    script("edit", [
      {
        text: "Creating it.",
        calls: [{ tool: "write_file", input: { path: "notes.md", content: "# Notes\nTODO\n" } }],
      },
      { calls: [{ tool: "edit_file", input: { path: "notes.md", old_string: "TODO", new_string: "Done" } }] },
      { text: "Updated notes.md." },
    ]);
    const id = await create(t, "Fix the notes", { model_id: "mock/edit" });
    expect((await t.api("GET", `/api/v1/agent/runs/${id}`)).body.agent_config.harness).toEqual({
      type: "oz",
      name: "builtin",
    });
    const run = await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state).toBe("SUCCEEDED");
    expect(await readFile(ws(t, id, "notes.md"), "utf8")).toBe("# Notes\nDone\n");
    expect(run.request_usage).toEqual({
      input_tokens: 30,
      output_tokens: 15,
      total_tokens: 45,
      // The mock model has no price: its tokens are shown per model, without a cost.
      model_token_usage: [
        {
          model_id: "mock/edit",
          total_tokens: 45,
          usage_type: "byok",
          tokens_by_category: { primary_agent: 45 },
        },
      ],
    });
    const evs = await events(t, id);
    expect(evs.filter((e) => e.type === "tool_call").map((e) => e.data.tool)).toEqual([
      "write_file",
      "edit_file",
    ]);
    expect(evs.filter((e) => e.type === "usage")).toHaveLength(3);
    const last = evs.filter((e) => e.type === "message").at(-1)!;
    expect(last.data).toMatchObject({ role: "assistant", text: "Updated notes.md." });
  });

  it("delivers a follow-up posted while a tool runs as a user message in the next model call", async () => {
    const m = script("steer", [
      { calls: [{ tool: "shell", input: { command: "while [ ! -e gate ]; do sleep 0.02; done" } }] },
      { text: "Using Python instead." },
    ]);
    const id = await create(t, "Write it in Go", { model_id: "mock/steer" });
    await waitFor(async () => (await events(t, id)).some((e) => e.type === "tool_call"), {
      what: "the tool call",
    });
    const fu = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "Actually, use Python" });
    expect(fu.body.outcome).toBe("live_session");
    await import("node:fs/promises").then((fs) => fs.writeFile(ws(t, id, "gate"), ""));
    const run = await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state).toBe("SUCCEEDED");
    expect(m.calls).toHaveLength(2);
    expect(userTexts(m.calls[0]!)).toEqual(["Write it in Go"]);
    expect(userTexts(m.calls[1]!)).toEqual(["Write it in Go", "Actually, use Python"]);
    expect(JSON.stringify(m.calls[1]!.prompt.at(-1))).toContain("Actually, use Python");
  });

  it("cancels during a long tool call: CANCELLED, and the process gone", async () => {
    const m = script("cancel", [
      { calls: [{ tool: "shell", input: { command: "echo $$ > pid; sleep 30" } }] },
    ]);
    const id = await create(t, "Wait a while", { model_id: "mock/cancel" });
    const pid = await waitFor(async () => Number(await readFile(ws(t, id, "pid"), "utf8")) || undefined, {
      what: "the command to start",
    });
    expect((await t.api("POST", `/api/v1/agent/runs/${id}/cancel`)).status).toBe(200);
    await waitFor(
      () => {
        try {
          process.kill(-pid, 0);
          return false;
        } catch {
          return true;
        }
      },
      // Well inside the sleep's 30 s: only the kill ends it this soon.
      { timeoutMs: 15_000, what: "the sleep's process group to be gone" },
    );
    expect((await t.api("GET", `/api/v1/agent/runs/${id}`)).body.state).toBe("CANCELLED");
    expect(m.calls).toHaveLength(1);
  });

  it("a cancelled run keeps the usage of the steps it completed", async () => {
    script("cancel-usage", [
      { calls: [{ tool: "list_files", input: {} }], usage: { input: 7, output: 3 } },
      { calls: [{ tool: "shell", input: { command: "echo $$ > pid; sleep 30" } }] },
    ]);
    const id = await create(t, "Look, then wait", { model_id: "mock/cancel-usage" });
    await waitFor(async () => Number(await readFile(ws(t, id, "pid"), "utf8").catch(() => "")) || undefined, {
      what: "the second step's command to start",
    });
    expect((await t.api("POST", `/api/v1/agent/runs/${id}/cancel`)).status).toBe(200);
    const usage = await waitFor(
      async () => {
        const run = (await t.api("GET", `/api/v1/agent/runs/${id}`)).body;
        return run.request_usage?.total_tokens > 0 ? run.request_usage : undefined;
      },
      { intervalMs: 200, what: "the cancelled run's usage" },
    );
    expect(usage).toMatchObject({ input_tokens: 7, output_tokens: 3, total_tokens: 10 });
    expect((await t.api("GET", `/api/v1/agent/runs/${id}`)).body.state).toBe("CANCELLED");
  });

  it("fails at the step limit with a clear message", async () => {
    // The server's default limit is 100: a run that never stops calling tools hits it.
    const loop: Turn = { calls: [{ tool: "list_files", input: {} }], usage: { input: 1, output: 1 } };
    script(
      "loop",
      Array.from({ length: 100 }, () => loop),
    );
    const id = await create(t, "Loop", { model_id: "mock/loop" });
    const run = await waitForState(t, id, ["SUCCEEDED", "FAILED", "ERROR"], 20_000);
    expect(run.state).toBe("FAILED");
    expect(run.status_message).toMatchObject({ error_code: "budget_exceeded", reason: "step_limit" });
    expect(run.status_message.message).toContain("stopped after 100 steps (the step limit)");
    expect(run.request_usage.total_tokens).toBe(200);
  });

  it("resumes a finished run's conversation with its history when a follow-up arrives", async () => {
    const m = script("resume", [
      { calls: [{ tool: "write_file", input: { path: "a.txt", content: "A" } }] },
      { text: "Wrote a.txt." },
      { text: "It contains A." },
    ]);
    const id = await create(t, "Write a.txt", { model_id: "mock/resume" });
    await waitForState(t, id, ["SUCCEEDED"]);
    const fu = await t.api("POST", `/api/v1/agent/runs/${id}/followups`, { message: "What is in it?" });
    expect(fu.body.outcome).toBe("handoff_execution");
    await waitFor(async () => m.calls.length === 3, { what: "the follow-up's model call" });
    const run = await waitForState(t, id, ["SUCCEEDED"]);
    const prompt = m.calls[2]!.prompt.filter((p) => p.role !== "system");
    expect(prompt.map((p) => p.role)).toEqual(["user", "assistant", "tool", "assistant", "user"]);
    expect(userTexts(m.calls[2]!)).toEqual(["Write a.txt", "What is in it?"]);
    expect(run.request_usage.total_tokens).toBe(45);
  });
});

/** Whether a process whose command line contains `marker` is still running (in any pid namespace). */
async function processesWith(marker: string): Promise<boolean> {
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes(marker)) return true;
  }
  return false;
}

describe("builtin harness with configured providers", () => {
  let real: TestDispatch;
  let fake: FakeModel;
  // Stdio servers run in the run's sandbox, which shows the system's programs but not this checkout: the
  // fixture's source goes on the command line, to the system's node.
  const server = fileURLToPath(new URL("../../fixtures/mcp-test-server.cjs", import.meta.url));
  let serverSource = "";
  let hostDir = "";
  const HOST_SECRET_FILE = () => join(hostDir, "secret.txt");
  beforeAll(async () => {
    process.env.ANTHROPIC_API_KEY = "sk-ant-leak-check"; // in Dispatch's environment, not its config
    serverSource = await readFile(server, "utf8");
    hostDir = await mkdtemp(join(tmpdir(), "dispatch-host-"));
    await writeFile(HOST_SECRET_FILE(), "host-secret-b71c\n");
    fake = await startFakeModel([
      { calls: [{ name: "write_file", input: { path: "hello.py", content: "print('hi')\n" } }] },
      { text: "Wrote hello.py." },
      {
        calls: [
          { name: "tools__shout", input: { text: "hello" } },
          { name: "tools__env", input: {} },
        ],
      },
      { text: "The server shouted." },
      {
        calls: [
          { name: "tools__read", input: { path: HOST_SECRET_FILE() } },
          { name: "tools__read", input: { path: `/proc/${process.pid}/environ` } },
        ],
      },
      { text: "Tried." },
    ]);
    real = await startTestDispatch({ OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl("openai") });
  });
  afterAll(async () => {
    delete process.env.ANTHROPIC_API_KEY;
    await rm(hostDir, { recursive: true, force: true });
    await real?.stop();
    await fake?.close();
  });

  it("runs end to end against a loopback OpenAI-compatible server (openai-compatible/<model>)", async () => {
    const id = await create(real, "Write hello.py", { model_id: "openai-compatible/fake-coder" });
    const run = await waitForState(real, id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.status_message).toBeUndefined();
    expect(run.state).toBe("SUCCEEDED");
    expect(await readFile(ws(real, id, "hello.py"), "utf8")).toBe("print('hi')\n");
    expect(run.request_usage).toEqual({
      input_tokens: 200,
      output_tokens: 40,
      total_tokens: 240,
      model_token_usage: [
        {
          model_id: "openai-compatible/fake-coder",
          total_tokens: 240,
          usage_type: "custom_endpoint",
          tokens_by_category: { primary_agent: 240 },
        },
      ],
    });
    expect(fake.agentRequests()[0]!.body.model).toBe("fake-coder");
    expect(fake.agentRequests()[0]!.body.stream).toBe(true);
    const second = JSON.stringify(fake.agentRequests()[1]!.body.messages);
    expect(second).toContain("wrote 12 bytes to hello.py");
    expect(second).toContain("Write hello.py");
  });

  it("offers a stdio MCP server's tools, calls one and records its result; no secrets reach it", async () => {
    const instance = `mcp-${Date.now()}`;
    const id = await create(real, "Shout hello", {
      model_id: "openai-compatible/fake-coder",
      mcp_servers: {
        tools: { command: "node", args: ["-e", serverSource, instance], env: { GREETING: "hi" } },
      },
    });
    const run = await waitForState(real, id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.status_message).toBeUndefined();
    const offered = (fake.agentRequests()[2]!.body.tools as Array<{ function: { name: string } }>).map(
      (x) => x.function.name,
    );
    expect(offered).toEqual(expect.arrayContaining(["tools__shout", "tools__env", "shell", "edit_file"]));
    const evs = await events(real, id);
    const results = evs.filter((e) => e.type === "tool_result");
    expect(results.find((e) => e.data.tool === "tools__shout")?.data.output).toBe("HELLO!");
    const env = String(results.find((e) => e.data.tool === "tools__env")?.data.output);
    expect(env).toContain("GREETING");
    expect(env).toContain(`cwd=${join(real.dataDir, "workspaces", id)}`);
    expect(env).not.toContain("ANTHROPIC_API_KEY");
    // PWD (the workspace) comes from the shell that places the sandbox in the run's cgroup, where there is one.
    const names = env
      .split("\n")[0]!
      .split(",")
      .filter((n) => n !== "PWD");
    expect(names.sort()).toEqual(["DISPATCH_RUN_ID", "GREETING", "HOME", "LANG", "PATH", "TERM"].sort());
    // The client is closed when the run ends: the server process is gone.
    await waitFor(async () => !(await processesWith(instance)), {
      timeoutMs: 15_000,
      what: "the MCP server process to exit",
    });
  });

  it("runs a stdio MCP server in the run's sandbox: no host file outside the workspace, no Dispatch process", async () => {
    const id = await create(real, "Read things", {
      model_id: "openai-compatible/fake-coder",
      mcp_servers: { tools: { command: "node", args: ["-e", serverSource] } },
    });
    const run = await waitForState(real, id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.status_message).toBeUndefined();
    const results = (await events(real, id))
      .filter((e) => e.type === "tool_result" && e.data.tool === "tools__read")
      .map((e) => e.data);
    expect(results).toHaveLength(2);
    expect(results[0]).toMatchObject({ error: true, output: expect.stringContaining("ENOENT") });
    expect(String(results[0]!.output)).not.toContain("host-secret-b71c");
    // Dispatch's process (and its environment) does not exist in the sandbox's pid namespace.
    expect(results[1]).toMatchObject({ error: true, output: expect.stringContaining("ENOENT") });
  });

  it("fails the run naming an MCP server that does not start", async () => {
    const id = await create(real, "x", {
      model_id: "openai-compatible/fake-coder",
      mcp_servers: { broken: { command: "/nonexistent/mcp-server" } },
    });
    const run = await waitForState(real, id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state).toBe("FAILED");
    expect(run.status_message.message).toMatch(/^MCP server "broken" failed to start/);
    expect(run.status_message).toMatchObject({ error_code: "invalid_request", reason: "mcp_server_failed" });
  });

  it("fails at once with what to configure: unknown provider, missing key", async () => {
    const unknown = await create(real, "x", { model_id: "mistral/large" });
    const missing = await create(real, "x", { model_id: "anthropic/claude-sonnet-4-5" });
    const a = await waitForState(real, unknown, ["FAILED", "SUCCEEDED", "ERROR"]);
    const b = await waitForState(real, missing, ["FAILED", "SUCCEEDED", "ERROR"]);
    expect(a.status_message).toMatchObject({ error_code: "invalid_request", reason: "unknown_provider" });
    expect(a.status_message.message).toContain('unknown model provider "mistral"');
    // The key in Dispatch's process environment is not used: only its validated configuration is.
    expect(b.status_message.message).toContain("set ANTHROPIC_API_KEY");
  });
});

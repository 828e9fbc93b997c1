import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";
import { startHarnessDispatch, testKey } from "./support.ts";

/**
 * An external agent reaches its provider only through Dispatch's model gateway, and the gateway forwards
 * only calls for the run's own model (or a model the operator allows): an agent cannot run up a bill on a
 * model its run did not choose. A model without a price cannot be held to a cost limit, so a run with a
 * limit may not use one: refused at create when its model has none, stopped when it asks for one. Claude
 * Code and Codex run for real against loopback providers; the "agent" that asks for another model is a
 * command it runs in its sandbox, as a prompt-injected agent would.
 */

const turns: ScriptedTurn[] = [];
let fake: FakeModel;
let d: Awaited<ReturnType<typeof startHarnessDispatch>>;

beforeAll(async () => {
  fake = await startFakeModel(turns);
  d = await startHarnessDispatch({
    ANTHROPIC_API_KEY: testKey("anthropic"),
    ANTHROPIC_BASE_URL: fake.baseUrl("anthropic"),
    OPENAI_API_KEY: testKey("openai"),
    OPENAI_BASE_URL: fake.baseUrl("openai"),
  });
});
afterAll(async () => {
  await d?.stop();
  await fake?.close();
});

/** What reached the provider on Anthropic's routes (the agents' turns and their side requests). */
const anthropicRequests = () => fake.requests.filter((r) => r.provider === "anthropic");

/** A shell command that asks the gateway for one Anthropic Messages call of `model`, printing the status. */
function askAnthropic(model: string): string {
  const body = JSON.stringify({ model, max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
  return `curl -s -w ' status:%{http_code}' -H 'content-type: application/json' -d '${body}' "$ANTHROPIC_BASE_URL/v1/messages"`;
}

const bash = (command: string) => ({ name: "Bash", input: { command, description: "Ask for a model" } });

async function toolOutput(dispatch: typeof d, runId: string): Promise<string> {
  const result = (await dispatch.events(runId)).find((e) => e.type === "tool_result");
  return String(result?.data.output);
}

describe("the model gateway", () => {
  it("refuses a Claude Code call for a model other than the run's, which never reaches the provider", async () => {
    turns.push({ calls: [bash(askAnthropic("claude-opus-4-1"))] }, { text: "Asked." });
    const res = await d.api("POST", "/api/v1/agent/runs", {
      prompt: "Ask for opus",
      config: { harness: { type: "claude" }, model_id: "anthropic/claude-sonnet-4-5" },
    });
    expect(res.status, res.text).toBe(200);
    const run = await d.state(res.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const output = await toolOutput(d, res.body.run_id);
    expect(output).toContain("status:403");
    expect(output).toContain("claude-opus-4-1 is not allowed");
    expect(anthropicRequests().filter((r) => r.body.model === "claude-opus-4-1")).toEqual([]);
    // The agent's own calls were the run's model.
    expect(fake.agentRequests("anthropic").every((r) => r.body.model === "claude-sonnet-4-5")).toBe(true);
  });

  it("keeps Claude Code's subagents on the run's model: a subagent asking for haiku runs it", async () => {
    const before = anthropicRequests().length;
    turns.push(
      {
        calls: [
          {
            name: "Task",
            input: {
              description: "Look",
              prompt: "Look around",
              subagent_type: "general-purpose",
              model: "haiku",
            },
          },
        ],
      },
      { text: "Looked." },
      { text: "The subagent looked." },
    );
    const res = await d.api("POST", "/api/v1/agent/runs", {
      prompt: "Have a subagent look",
      config: { harness: { type: "claude" }, model_id: "anthropic/claude-sonnet-4-5" },
    });
    const run = await d.state(res.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const models = anthropicRequests()
      .slice(before)
      .map((r) => r.body.model);
    expect(models.length).toBeGreaterThanOrEqual(3);
    expect(new Set(models)).toEqual(new Set(["claude-sonnet-4-5"]));
  });

  it("refuses a Codex call for a model other than the run's, sent straight to the gateway's socket", async () => {
    const body = JSON.stringify({ model: "gpt-4o", input: "hi", stream: false });
    const ask = `curl -s -w ' status:%{http_code}' --unix-socket "$(ls /tmp/dispatch-gateway-*/model.sock)" -H 'content-type: application/json' -d '${body}' http://gateway/responses`;
    turns.push(
      { calls: [{ name: "exec_command", input: { cmd: ask, yield_time_ms: 10_000 } }] },
      { text: "Asked." },
    );
    const res = await d.api("POST", "/api/v1/agent/runs", {
      prompt: "Ask for gpt-4o",
      config: { harness: { type: "codex" }, model_id: "openai/gpt-5" },
    });
    expect(res.status, res.text).toBe(200);
    const run = await d.state(res.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const output = await toolOutput(d, res.body.run_id);
    expect(output).toContain("status:403");
    expect(output).toContain("gpt-4o is not allowed");
    expect(fake.requests.filter((r) => r.body.model === "gpt-4o")).toEqual([]);
  });

  it("holds a run that names no model to the agent's default, which has a price", async () => {
    turns.push({ text: "Hello." });
    const res = await d.api("POST", "/api/v1/agent/runs", {
      prompt: "Say hello",
      config: { harness: { type: "claude" }, max_cost_usd: 1 },
    });
    expect(res.status, res.text).toBe(200);
    const run = await d.state(res.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    expect(run.agent_config.model_id).toBe("anthropic/claude-sonnet-4-5");
    expect(anthropicRequests().at(-1)?.body.model).toBe("claude-sonnet-4-5");
    expect(run.request_usage.inference_cost).toBeGreaterThan(0);
  });
});

describe("a cost limit and a model without a price", () => {
  it("is refused at create, for the run's limit and for the server's", async () => {
    for (const [harness, model] of [
      ["claude", "anthropic/claude-unpriced-9"],
      ["codex", "openai/gpt-fake"],
    ]) {
      const res = await d.api("POST", "/api/v1/agent/runs", {
        prompt: "x",
        config: { harness: { type: harness }, model_id: model, max_cost_usd: 1 },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.body.detail).toContain(`model ${model} has no price on this server`);
      expect(res.body.detail).toContain("config.max_cost_usd");
    }
    const limited = await startHarnessDispatch({
      ANTHROPIC_API_KEY: testKey("anthropic"),
      ANTHROPIC_BASE_URL: fake.baseUrl("anthropic"),
      DISPATCH_MAX_COST_USD: "2",
    });
    try {
      const res = await limited.api("POST", "/api/v1/agent/runs", {
        prompt: "x",
        config: { harness: { type: "claude" }, model_id: "anthropic/claude-unpriced-9" },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.body.detail).toContain("model anthropic/claude-unpriced-9 has no price");
      expect(res.body.detail).toContain("DISPATCH_MAX_COST_USD");
    } finally {
      await limited.stop();
    }
  });

  describe("allowed by the operator beside the run's model", () => {
    let dir: string;
    let allowing: Awaited<ReturnType<typeof startHarnessDispatch>>;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "dispatch-gateway-models-"));
      const configFile = join(dir, "dispatch.config.yaml");
      await writeFile(configFile, "models:\n  gateway_allowed: [anthropic/claude-unpriced-9]\n");
      allowing = await startHarnessDispatch({
        ANTHROPIC_API_KEY: testKey("anthropic"),
        ANTHROPIC_BASE_URL: fake.baseUrl("anthropic"),
        DISPATCH_CONFIG_FILE: configFile,
      });
    });
    afterAll(async () => {
      await allowing?.stop();
      await rm(dir, { recursive: true, force: true });
    });

    it("is forwarded for a run without a limit", async () => {
      turns.push({ calls: [bash(askAnthropic("claude-unpriced-9"))] }, { text: "Asked." });
      const res = await allowing.api("POST", "/api/v1/agent/runs", {
        prompt: "Ask for the other model",
        config: { harness: { type: "claude" }, model_id: "anthropic/claude-sonnet-4-5" },
      });
      const run = await allowing.state(res.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);
      expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
      expect(await toolOutput(allowing, res.body.run_id)).toContain("status:200");
      expect(anthropicRequests().filter((r) => r.body.model === "claude-unpriced-9")).toHaveLength(1);
    });

    it("stops a run with a limit that asks for it: FAILED, budget_exceeded, saying the model has no price", async () => {
      const before = anthropicRequests().filter((r) => r.body.model === "claude-unpriced-9").length;
      turns.push({ calls: [bash(askAnthropic("claude-unpriced-9"))] }, { text: "Asked." });
      const res = await allowing.api("POST", "/api/v1/agent/runs", {
        prompt: "Ask for the other model",
        config: { harness: { type: "claude" }, model_id: "anthropic/claude-sonnet-4-5", max_cost_usd: 5 },
      });
      expect(res.status, res.text).toBe(200);
      const run = await allowing.state(res.body.run_id, ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"]);
      turns.length = 0;
      expect(run.state).toBe("FAILED");
      expect(run.status_message).toMatchObject({ error_code: "budget_exceeded", reason: "cost_limit" });
      expect(run.status_message.message).toContain(
        "model anthropic/claude-unpriced-9 has no price on this server",
      );
      expect(run.status_message.message).toContain("$5.00");
      expect(anthropicRequests().filter((r) => r.body.model === "claude-unpriced-9")).toHaveLength(before);
    });
  });
});

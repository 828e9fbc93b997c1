import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";
import { startHarnessDispatch, testKey } from "./support.ts";

/**
 * Cost of an external agent: Dispatch's model gateway reads each relayed answer's usage, so a
 * Claude Code run gets an inference_cost and is stopped mid-turn once it passes config.max_cost_usd, to wait
 * for more budget.
 * Claude Code runs for real against a loopback Anthropic API.
 */

const turns: ScriptedTurn[] = [];
let fake: FakeModel;
let d: Awaited<ReturnType<typeof startHarnessDispatch>>;

beforeAll(async () => {
  fake = await startFakeModel(turns);
  d = await startHarnessDispatch({
    ANTHROPIC_API_KEY: testKey("anthropic"),
    ANTHROPIC_BASE_URL: fake.baseUrl("anthropic"),
  });
});
afterAll(async () => {
  await d?.stop();
  await fake?.close();
});

async function create(prompt: string, config: Record<string, unknown>) {
  const res = await d.api("POST", "/api/v1/agent/runs", {
    prompt,
    config: { harness: { type: "claude" }, model_id: "anthropic/claude-sonnet-4-5", ...config },
  });
  expect(res.status, res.text).toBe(200);
  return res.body.run_id as string;
}

describe("the cost of an external agent's run", () => {
  it("is what the gateway saw the provider bill, priced per call", async () => {
    turns.push(
      {
        calls: [{ name: "Bash", input: { command: "echo hi", description: "Say hi" } }],
        usage: { input_tokens: 10_000, output_tokens: 1000 },
      },
      { text: "Said hi.", usage: { input_tokens: 10_000, output_tokens: 1000 } },
    );
    const runId = await create("Say hi", {});
    const run = await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    // The agent's two turns: 20k input at $3/MTok + 2k output at $15/MTok = $0.09; its side calls (titles)
    // add a little on top.
    expect(run.request_usage.inference_cost).toBeGreaterThanOrEqual(0.09);
    expect(run.request_usage.inference_cost).toBeLessThan(0.1);
  });

  it("stops the agent mid-turn once it passes config.max_cost_usd: the run waits for more budget", async () => {
    const before = fake.agentRequests().length;
    turns.push(
      // $0.45 on the first call: over the $0.10 limit.
      {
        calls: [{ name: "Bash", input: { command: "echo one", description: "One" } }],
        usage: { input_tokens: 100_000, output_tokens: 10_000 },
      },
      { calls: [{ name: "Bash", input: { command: "echo two", description: "Two" } }] },
      { text: "Done." },
    );
    const runId = await create("Count", { max_cost_usd: 0.1 });
    const run = await d.state(runId, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR", "CANCELLED"]);
    turns.length = 0;
    expect(run.state, JSON.stringify(run.status_message)).toBe("BLOCKED");
    expect(run.status_message).toMatchObject({ reason: "awaiting_budget" });
    expect(run.status_message.message).toContain("$0.10");
    expect(run.request_usage.inference_cost).toBeGreaterThanOrEqual(0.45);
    expect(fake.agentRequests().length - before).toBe(1);
  });
});

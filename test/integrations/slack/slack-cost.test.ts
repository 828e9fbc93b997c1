import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../../support/fake-model/server.ts";
import { CHANNEL, type SlackDispatch, startSlackDispatch } from "./support.ts";

/**
 * Cost in Slack (docs/runtime.md): the status card shows what the run cost beside its limit, and a run at the
 * server's default cost limit (DISPATCH_MAX_COST_USD) waits for more budget. The builtin harness runs against a
 * loopback Anthropic API that reports usage.
 */

const turns: ScriptedTurn[] = [];
let fake: FakeModel;
let s: SlackDispatch;

beforeAll(async () => {
  fake = await startFakeModel(turns);
  s = await startSlackDispatch({
    env: {
      ANTHROPIC_API_KEY: "test-anthropic-key",
      ANTHROPIC_BASE_URL: fake.baseUrl("anthropic"),
      DISPATCH_DEFAULT_MODEL: "anthropic/claude-sonnet-4-5",
      DISPATCH_MAX_COST_USD: "0.05",
    },
  });
});
afterAll(async () => {
  await s?.stop();
  await fake?.close();
});

/** Starts a run with `/agent <prompt>` and returns its id and its card's thread. */
async function start(prompt: string, user: string) {
  await s.command({ text: prompt, user_id: user });
  const run = await waitFor(async () => (await s.runs()).find((r) => r.prompt === prompt), {
    what: "the run to be created",
  });
  const binding = await waitFor(async () => {
    const b = await s.t.dispatch.store.getThreadBinding(run.run_id);
    return b?.thread ? b : undefined;
  });
  return { runId: run.run_id as string, thread: binding.thread! };
}

/** The run's card once it says `contains`. */
async function card(thread: string, contains: string) {
  return waitFor(
    () => {
      const text = JSON.stringify(s.fake.message(CHANNEL, thread) ?? {});
      return text.includes(contains) ? text : undefined;
    },
    { timeoutMs: 30_000, what: `the status card to say ${contains}` },
  );
}

describe("cost in Slack", () => {
  it("the status card shows what the run cost", async () => {
    // 2000 input at $3/MTok + 1000 output at $15/MTok = $0.021.
    turns.push({ text: "All done.", usage: { input_tokens: 2000, output_tokens: 1000 } });
    const { runId, thread } = await start("Summarise the repo", "U1");
    const shown = await card(thread, "Succeeded");
    expect(shown).toContain("$0.02");
    const run = (await s.t.api("GET", `/api/v1/agent/runs/${runId}`)).body;
    expect(run.request_usage.inference_cost).toBeCloseTo(0.021, 6);
  });

  it("a run at the server's default cost limit waits for more budget, its card showing the cost beside the limit", async () => {
    const before = fake.agentRequests().length;
    // $0.063 after the first step: over the $0.05 default.
    turns.push(
      {
        calls: [{ name: "shell", input: { command: "echo one" } }],
        usage: { input_tokens: 15_000, output_tokens: 1200 },
      },
      { calls: [{ name: "shell", input: { command: "echo two" } }] },
      { text: "Done." },
    );
    const { runId, thread } = await start("Refactor everything", "U2");
    const shown = await card(thread, "Waiting for you");
    turns.length = 0;
    expect(shown).toContain("$0.063 of $0.05 (126 % spent)");
    const run = (await s.t.api("GET", `/api/v1/agent/runs/${runId}`)).body;
    expect(run.status_message).toMatchObject({ reason: "awaiting_budget" });
    expect(run.status_message.message).toContain("DISPATCH_MAX_COST_USD");
    expect(run.status_message.message).toContain("$0.063");
    expect(fake.agentRequests().length - before).toBe(1);
    expect((await s.t.api("POST", `/api/v1/agent/runs/${runId}/cancel`)).status).toBe(200);
  });
});

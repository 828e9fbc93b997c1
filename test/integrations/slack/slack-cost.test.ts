import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../../support/fake-model/server.ts";
import { CHANNEL, type SlackDispatch, startSlackDispatch } from "./support.ts";

/**
 * Cost in Slack (docs/runtime.md): the status card shows what the run cost, and a run stopped at the server's
 * default cost limit (DISPATCH_MAX_COST_USD) says so in its thread. The builtin harness runs against a
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

  it("a run over the server's default cost limit is stopped, and its thread says the cost, the limit and what to do", async () => {
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
    const replies = () => s.fake.succeeded("chat.postMessage").filter((c) => c.args.thread_ts === thread);
    const reply = await waitFor(() => replies()[0], { what: "the terminal reply", timeoutMs: 30_000 });
    turns.length = 0;
    const text = String(reply.args.text);
    expect(text).toContain("<@U2>");
    expect(text).toContain("Failed");
    expect(text).toContain("cost limit");
    expect(text).toContain("$0.06");
    expect(text).toContain("$0.05");
    expect(text).toContain("DISPATCH_MAX_COST_USD");
    const shown = await card(thread, "Failed");
    expect(shown).toContain("$0.06");
    const run = (await s.t.api("GET", `/api/v1/agent/runs/${runId}`)).body;
    expect(run.status_message).toMatchObject({ error_code: "budget_exceeded", reason: "cost_limit" });
    expect(fake.agentRequests().length - before).toBe(1);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../../support/fake-model/server.ts";
import { type LinearDispatch, startLinearDispatch } from "./support.ts";

/**
 * A run that waits for budget in a Linear agent session (docs/surfaces.md, "Waiting for you"): it asks with
 * an `elicitation` saying what it spent and how to answer; `extend $2` in the session continues the same
 * run. The builtin harness against a loopback Anthropic API that reports usage.
 */
const turns: ScriptedTurn[] = [];
let model: FakeModel;
let l: LinearDispatch;

describe("Linear: a run that waits for budget", { timeout: 120_000 }, () => {
  beforeAll(async () => {
    model = await startFakeModel(turns);
    l = await startLinearDispatch({
      env: {
        ANTHROPIC_API_KEY: "test-anthropic-key",
        ANTHROPIC_BASE_URL: model.baseUrl("anthropic"),
        DISPATCH_DEFAULT_MODEL: "anthropic/claude-sonnet-4-5",
        DISPATCH_MAX_COST_USD: "0.05",
      },
    });
  });
  afterAll(async () => {
    await l?.stop();
    await model?.close();
  });

  it("asks with an elicitation naming `extend $…` and `stop`; `extend $2` continues the run", async () => {
    turns.push(
      // $0.063 after one step: over the $0.05 default.
      {
        calls: [{ name: "shell", input: { command: "echo one" } }],
        usage: { input_tokens: 15_000, output_tokens: 1200 },
      },
      { text: "Finished after the extension.", usage: { input_tokens: 10, output_tokens: 10 } },
    );
    const issue = l.fake.issue(l.team, { title: "Tidy up", description: "The imports are a mess." });
    const event = l.fake.created(issue, l.ada, { comment: "@Dispatch tidy the imports" });
    const sessionId = event.agentSession.id;
    await l.deliver(event);
    const run = await waitFor(async () => (await l.runs()).find((r) => r.trigger_url === issue.url), {
      what: "the Linear run",
    });
    const blocked = await waitForState(l.t, run.run_id, ["BLOCKED", "SUCCEEDED", "FAILED"], 30_000);
    expect(blocked.status_message.reason).toBe("awaiting_budget");

    const ask = await l.activity(sessionId, (a) => a.content.type === "elicitation", "the elicitation");
    const body = String(ask.content.body);
    expect(body).toContain("Waiting for you: more budget.");
    expect(body).toContain("$0.063");
    expect(body).toContain("Reply `extend $5`");

    await l.deliver(l.fake.prompted(sessionId, l.ada, "extend $2"));
    const done = await waitForState(l.t, run.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 60_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    expect(done.budget.extended_usd).toBeCloseTo(2.013, 6);
    const thoughts = l.fake.activitiesOf(sessionId).map((a) => String(a.content.body ?? ""));
    expect(thoughts).toContain("Extended by $2.00: the agent continues in this run.");
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../../support/fake-model/server.ts";
import { type JiraDispatch, startJiraDispatch } from "./support.ts";

/**
 * A run that waits for budget on a Jira issue (docs/surfaces.md, "Waiting for you"): its comment says what
 * it spent and the mentions that answer; `extend $X` from the person who asked continues it, and a later
 * `stop` says nothing waits. The builtin harness against a loopback Anthropic API that reports usage.
 */
const turns: ScriptedTurn[] = [];
let model: FakeModel;
let j: JiraDispatch;

describe("Jira: a run that waits for budget", { timeout: 120_000 }, () => {
  beforeAll(async () => {
    model = await startFakeModel(turns);
    j = await startJiraDispatch("cloud", {
      env: {
        ANTHROPIC_API_KEY: "test-anthropic-key",
        ANTHROPIC_BASE_URL: model.baseUrl("anthropic"),
        DISPATCH_DEFAULT_MODEL: "anthropic/claude-sonnet-4-5",
        DISPATCH_MAX_COST_USD: "0.05",
      },
    });
  });
  afterAll(async () => {
    await j?.stop();
    await model?.close();
  });

  it("the run's comment names `extend $X` and `stop`; `extend $2` continues the run", async () => {
    turns.push(
      // $0.063 after one step: over the $0.05 default.
      {
        calls: [{ name: "shell", input: { command: "echo one" } }],
        usage: { input_tokens: 15_000, output_tokens: 1200 },
      },
      { text: "Finished after the extension.", usage: { input_tokens: 10, output_tokens: 10 } },
    );
    const issue = j.jira.issue("PROJ", { summary: "Tidy up", description: "The imports are a mess." });
    await j.deliver(j.jira.commentCreated(issue, j.ada, "tidy the imports"));
    const [run] = await waitFor(async () => {
      const runs = await j.runsOf(issue);
      return runs.length ? runs : undefined;
    });
    const blocked = await waitForState(j.t, run!.run_id, ["BLOCKED", "SUCCEEDED", "FAILED"], 30_000);
    expect(blocked.status_message.reason).toBe("awaiting_budget");
    const card = await j.comment(
      issue,
      (text) => text.includes("Waiting for more budget"),
      "the run's comment to say it waits for budget",
    );
    const text = j.jira.text(card.body);
    expect(text).toContain("extend $1");
    expect(text).toContain("stop");

    await j.deliver(j.jira.commentCreated(issue, j.ada, "extend $2"));
    const done = await waitForState(j.t, run!.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 60_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    expect(done.budget.extended_usd).toBeCloseTo(2.013, 6);

    await j.deliver(j.jira.commentCreated(issue, j.ada, "stop"));
    await j.comment(
      issue,
      (body) => body.includes("is not waiting for budget"),
      "the notice that nothing waits for budget",
    );
  });
});

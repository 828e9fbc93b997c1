import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../../support/fake-model/server.ts";
import { CHANNEL, type SlackDispatch, startSlackDispatch, TEAM } from "./support.ts";

// biome-ignore lint/suspicious/noExplicitAny: Slack payloads and API bodies are asserted field by field
type Json = any;

/**
 * Runs that wait for budget, from Slack (docs/surfaces.md, "Waiting for you"): the card offers Extend by $X
 * (what the run needs, rounded up to a whole dollar) and Stop here beside Cancel, under the channel's
 * follow-up policy; the clicker answers as themself, so past their own monthly budget an admin must extend.
 * Real Dispatch, fake Slack, the builtin harness against a loopback Anthropic API that reports usage.
 */

const turns: ScriptedTurn[] = [];
/** One step at $0.063 (15,000 input at $3/MTok + 1,200 output at $15/MTok): over the $0.05 default. */
const STEP = { input_tokens: 15_000, output_tokens: 1200 };
let fake: FakeModel;
let s: SlackDispatch;

beforeAll(async () => {
  fake = await startFakeModel(turns);
  s = await startSlackDispatch({
    settings: `slack: {}\nbudgets:\n  people:\n    slack:${TEAM}:U3: 0.03\n  admins: [slack:${TEAM}:U9]\n`,
    env: {
      ANTHROPIC_API_KEY: "test-anthropic-key",
      ANTHROPIC_BASE_URL: fake.baseUrl("anthropic"),
      DISPATCH_DEFAULT_MODEL: "anthropic/claude-sonnet-4-5",
      DISPATCH_MAX_COST_USD: "0.05",
      DISPATCH_POLL_INTERVAL_MS: "100",
    },
  });
});
afterAll(async () => {
  await s?.stop();
  await fake?.close();
});

// Each test scripts its own turns: none left over from another.
beforeEach(() => {
  turns.length = 0;
});

const getRun = async (id: string): Promise<Json> => (await s.t.api("GET", `/api/v1/agent/runs/${id}`)).body;
const buttons = (message: Json): Json[] =>
  (message?.blocks ?? []).find((b: Json) => b.type === "actions")?.elements ?? [];

/** Starts a run with `/agent <prompt>` as `user`, waits for it to wait for budget, and finds its card. */
async function waitingRun(prompt: string, user: string) {
  await s.command({ text: prompt, user_id: user });
  const created = await waitFor(async () => (await s.runs()).find((r) => r.prompt === prompt), {
    what: "the run to be created",
  });
  const run = await waitForState(s.t, created.run_id, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR"], 30_000);
  expect(run.state, JSON.stringify(run.status_message)).toBe("BLOCKED");
  expect(run.status_message.reason).toBe("awaiting_budget");
  const ts = await waitFor(async () => (await s.t.dispatch.store.getCardState(run.run_id))?.cardRef, {
    what: "the run's card",
  });
  const message = () => s.fake.message(CHANNEL, ts) as Json;
  await waitFor(() => JSON.stringify(message()?.blocks ?? []).includes("dispatch_extend_budget"), {
    what: "the card to offer Extend",
    timeoutMs: 15_000,
  });
  return { runId: run.run_id as string, ts, message };
}

/** Clicks a button of the run's card, as Slack posts a block action (signed, form-encoded). */
function click(actionId: string, runId: string, cardTs: string, user: string) {
  const payload = {
    type: "block_actions",
    team: { id: TEAM, domain: "acme" },
    user: { id: user, username: "someone", team_id: TEAM },
    api_app_id: "A0APP",
    trigger_id: `${Date.now()}.${Math.random().toString(36).slice(2)}.trigger`,
    container: { type: "message", message_ts: cardTs, channel_id: CHANNEL, is_ephemeral: false },
    channel: { id: CHANNEL, name: "dev" },
    message: { type: "message", ts: cardTs, text: "status card" },
    response_url: "https://hooks.slack.invalid/actions/1",
    actions: [
      {
        type: "button",
        action_id: actionId,
        block_id: "dispatch_run_actions",
        value: runId,
        action_ts: `${Date.now() / 1000}`,
      },
    ],
  };
  return s.post(
    new URLSearchParams({ payload: JSON.stringify(payload) }).toString(),
    "application/x-www-form-urlencoded",
  );
}

describe("Slack: a run that waits for budget", () => {
  it("offers Extend by $X and Stop here; a click by someone outside the channel is refused; Extend continues the run", async () => {
    turns.push(
      { calls: [{ name: "shell", input: { command: "echo one" } }], usage: STEP },
      { text: "Finished after the extension.", usage: { input_tokens: 10, output_tokens: 10 } },
    );
    const card = await waitingRun("Refactor the parser", "U1");
    // It needs about $0.063 more: offered as $1.
    expect(buttons(card.message()).map((b) => b.text.text)).toEqual([
      "Open session",
      "Extend by $1",
      "Stop here",
      "Cancel",
    ]);

    // Under the default `channel` policy, someone who is not in the channel may not answer.
    await click("dispatch_extend_budget", card.runId, card.ts, "U99");
    expect(await s.ephemeral("U99", 1)).toContain("Only members of <#C0CHAN> may act on its runs");
    expect((await getRun(card.runId)).state).toBe("BLOCKED");

    await click("dispatch_extend_budget", card.runId, card.ts, "U1");
    expect(await s.ephemeral("U1", 1)).toContain("Extended by $1.00");
    const done = await waitForState(s.t, card.runId, ["SUCCEEDED", "FAILED", "ERROR", "BLOCKED"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    expect(done.budget.extended_usd).toBeCloseTo(1.013, 6);
    await waitFor(() => !JSON.stringify(card.message().blocks).includes("dispatch_extend_budget"), {
      what: "the card to drop its Extend button",
      timeoutMs: 15_000,
    });

    // The card of an answered run: the click says so and changes nothing.
    await click("dispatch_stop_budget", card.runId, card.ts, "U1");
    expect(await s.ephemeral("U1", 2)).toContain("not waiting for budget");
    expect((await getRun(card.runId)).state).toBe("SUCCEEDED");
  });

  it("Stop here ends the run with what it has, without another model call", async () => {
    turns.push({ calls: [{ name: "shell", input: { command: "echo two" } }], usage: STEP });
    const card = await waitingRun("Tidy the imports", "U2");
    turns.length = 0;
    const calls = fake.agentRequests().length;
    await click("dispatch_stop_budget", card.runId, card.ts, "U2");
    expect(await s.ephemeral("U2", 1)).toContain("Stopped here");
    const ended = await waitForState(s.t, card.runId, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(ended.state).toBe("SUCCEEDED");
    expect(ended.status_message.message).toContain("Stopped at its budget by");
    expect(fake.agentRequests().length).toBe(calls);
  });

  it("past the clicker's own monthly budget they are told an admin must extend it; an admin's click does", async () => {
    turns.push(
      { calls: [{ name: "shell", input: { command: "echo three" } }], usage: STEP },
      { text: "Done with the admin's extension.", usage: { input_tokens: 10, output_tokens: 10 } },
    );
    const card = await waitingRun("Write the changelog", "U3");
    expect((await getRun(card.runId)).budget.limit.scope).toBe("person");

    await click("dispatch_extend_budget", card.runId, card.ts, "U3");
    const refused = await s.ephemeral("U3", 1);
    expect(refused).toContain("only an admin may extend beyond it");
    expect(refused).toContain("An admin must extend it");
    expect((await getRun(card.runId)).state).toBe("BLOCKED");

    await click("dispatch_extend_budget", card.runId, card.ts, "U9");
    expect(await s.ephemeral("U9", 1)).toContain("Extended by $1.00");
    const done = await waitForState(s.t, card.runId, ["SUCCEEDED", "FAILED", "ERROR", "BLOCKED"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
  });
});

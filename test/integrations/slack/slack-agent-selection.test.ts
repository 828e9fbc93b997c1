import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../../support/fake-model/server.ts";
import { CHANNEL, type SlackDispatch, startSlackDispatch } from "./support.ts";

/**
 * Choosing the agent from Slack (docs/surfaces.md): `/agent --agent claude …` (and in mentions), a channel's
 * default agent (`/agent agent claude`), and what a person reads when the agent is unknown or its key is
 * not configured. Claude Code runs for real against a loopback Anthropic API; Codex has no key here.
 */

const turns: ScriptedTurn[] = [];
let fake: FakeModel;
let s: SlackDispatch;

beforeAll(async () => {
  fake = await startFakeModel(turns);
  s = await startSlackDispatch({
    env: { ANTHROPIC_API_KEY: "test-anthropic-key", ANTHROPIC_BASE_URL: fake.baseUrl("anthropic") },
  });
});
afterAll(async () => {
  await s?.stop();
  await fake?.close();
});

/** The ids of the runs so far, for nextRun. */
async function seenRuns(): Promise<Set<string>> {
  return new Set((await s.runs()).map((r) => r.run_id as string));
}

/**
 * Waits for a run not among `seen` and returns it: found by id, since the list's order (updated_at) puts
 * an earlier run first again whenever it changes state.
 */
async function nextRun(seen: Set<string>) {
  return waitFor(async () => (await s.runs()).find((r) => !seen.has(r.run_id)), {
    what: "the run to be created",
  });
}

async function runState(runId: string, states: string[]) {
  return waitFor(
    async () => {
      const res = await s.t.api("GET", `/api/v1/agent/runs/${runId}`);
      return states.includes(res.body.state) ? res.body : undefined;
    },
    { timeoutMs: 60_000, what: `run ${runId} to reach ${states.join("/")}` },
  );
}

/** The run's status card as it stands in the channel (after every update). */
async function cardText(runId: string, contains: string) {
  return waitFor(
    async () => {
      const ref = (await s.t.dispatch.store.getCardState(runId))?.cardRef;
      const message = ref ? s.fake.message(CHANNEL, ref) : undefined;
      const text = message ? JSON.stringify(message) : "";
      return text.includes(contains) ? text : undefined;
    },
    { timeoutMs: 30_000, what: `the status card of ${runId} to say ${contains}` },
  );
}

describe("choosing the agent in Slack", () => {
  it("`/agent --agent claude <prompt>` runs Claude Code; the status card says which agent ran", async () => {
    turns.push({ text: "Hello from Claude Code." });
    const seen = await seenRuns();
    await s.command({ text: "--agent claude Say hello", user_id: "U1" });
    const created = await nextRun(seen);
    expect(created.agent_config.harness).toEqual({ type: "claude" });
    expect(created.prompt).toBe("Say hello");
    const run = await runState(created.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const card = await cardText(created.run_id, "Succeeded");
    expect(card).toContain("Agent: Claude Code");
  });

  it("in a mention, `--agent` picks the agent too (`—agent` as Slack may type it)", async () => {
    const seen = await seenRuns();
    await s.mention({ text: "<@UBOT> —agent scripted $ echo from a mention", user: "U2" });
    const created = await nextRun(seen);
    expect(created.agent_config.harness).toEqual({ type: "oz", name: "scripted" });
    expect(created.prompt).toBe("$ echo from a mention");
  });

  it("an unknown agent is answered with the agents there are; one without a key with the server's reason", async () => {
    const seen = await seenRuns();
    await s.command({ text: "--agent cursor fix the build", user_id: "U3" });
    const unknown = await s.ephemeral("U3");
    expect(unknown).toContain('unknown agent "cursor"');
    expect(unknown).toContain("claude, codex, gemini, builtin, scripted");

    await s.command({ text: "--agent codex fix the build", user_id: "U3" });
    const refused = await s.ephemeral("U3", 2);
    expect(refused).toContain("Could not start the run");
    expect(refused).toContain("OPENAI_API_KEY");
    expect((await s.runs()).length).toBe(seen.size);
  });

  it("a channel's default agent: `agent` shows, sets and clears it; `--agent` beats it; a refused default says where it came from", async () => {
    await s.command({ text: "agent", user_id: "U4" });
    expect(await s.ephemeral("U4")).toContain("no default agent");

    await s.command({ text: "agent Scripted", user_id: "U4" });
    expect(await s.ephemeral("U4", 2)).toContain("now use *Scripted (no model)*");
    await s.command({ text: "agent", user_id: "U5" });
    const shown = await s.ephemeral("U5");
    expect(shown).toContain("default agent is *Scripted (no model)* (`scripted`)");
    expect(shown).toContain("<@U4>");

    let seen = await seenRuns();
    await s.command({ text: "$ echo default agent", user_id: "U4" });
    expect((await nextRun(seen)).agent_config.harness).toEqual({ type: "oz", name: "scripted" });

    turns.push({ text: "Claude here." });
    seen = await seenRuns();
    await s.command({ text: "Say hi --agent claude", user_id: "U4" });
    const claude = await nextRun(seen);
    expect(claude.agent_config.harness).toEqual({ type: "claude" });
    expect((await runState(claude.run_id, ["SUCCEEDED", "FAILED", "ERROR"])).state).toBe("SUCCEEDED");

    // A default whose provider key is missing: the person hears the server's reason and where it came from.
    await s.command({ text: "agent codex", user_id: "U4" });
    expect(await s.ephemeral("U4", 3)).toContain("now use *Codex*");
    seen = await seenRuns();
    await s.command({ text: "fix the build", user_id: "U6" });
    const refused = await s.ephemeral("U6");
    expect(refused).toContain("OPENAI_API_KEY");
    expect(refused).toContain("`codex` is this channel's default agent");
    expect((await s.runs()).length).toBe(seen.size);

    await s.command({ text: "agent none", user_id: "U4" });
    expect(await s.ephemeral("U4", 4)).toContain("no default agent any more");
    await s.command({ text: "$ echo server default", user_id: "U6" });
    // No model is configured: the server's default is the scripted harness.
    expect((await nextRun(seen)).agent_config.harness).toEqual({ type: "oz", name: "scripted" });
    // Only the repository was never set: the agent setting kept it alone.
    const settings = await s.t.dispatch.store.getChannelSettings({
      platform: "slack",
      workspace: "T0TEAM",
      channel: CHANNEL,
    });
    expect(settings).toMatchObject({ agent: null, repository: null, updatedBy: "U4" });
  });

  it("`agent <unknown>` is refused with the list, and the setting stays", async () => {
    await s.command({ text: "agent copilot", user_id: "U7" });
    const text = await s.ephemeral("U7");
    expect(text).toContain('unknown agent "copilot"');
    expect(text).toContain("available agents: claude, codex, gemini, builtin, scripted");
  });
});

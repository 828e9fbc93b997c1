import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../../support/fake-model/server.ts";
import { type GitHubDispatch, HANDLE, startGitHubDispatch, uniqueIssue } from "./support.ts";

const MARKER = /<!-- dispatch:run=([A-Za-z0-9_-]+) -->/;

/**
 * Runs that wait for budget, from GitHub (docs/surfaces.md, "Waiting for you"): the tracking comment says
 * what it spent and how to answer; `@dispatch extend $X` from the person who asked continues it, from anyone
 * else is refused with the reason; `@dispatch stop` has it deliver what it has. Signed webhooks, the fake
 * GitHub, the builtin harness against a loopback Anthropic API that reports usage.
 */

const turns: ScriptedTurn[] = [];
/** One step at $0.063 (15,000 input at $3/MTok + 1,200 output at $15/MTok): over the $0.05 default. */
const STEP = { input_tokens: 15_000, output_tokens: 1200 };
let model: FakeModel;
let g: GitHubDispatch;

beforeAll(async () => {
  model = await startFakeModel(turns);
  g = await startGitHubDispatch({
    env: {
      ANTHROPIC_API_KEY: "test-anthropic-key",
      ANTHROPIC_BASE_URL: model.baseUrl("anthropic"),
      DISPATCH_DEFAULT_MODEL: "anthropic/claude-sonnet-4-5",
      DISPATCH_MAX_COST_USD: "0.05",
    },
  });
  g.fake.permissions.set("octocat", "write");
  g.fake.permissions.set("hubot", "write");
});
afterAll(async () => {
  await g?.stop();
  await model?.close();
});
// Each test scripts its own turns: none left over from another.
beforeEach(() => {
  turns.length = 0;
});

const getRun = async (id: string) => (await g.t.api("GET", `/api/v1/agent/runs/${id}`)).body;
const botCommentWith = (issue: number, text: string) =>
  waitFor(() => g.fake.botComments(g.repo, issue).find((c) => c.body.includes(text)), {
    what: `a comment on #${issue} saying ${JSON.stringify(text)}`,
    timeoutMs: 15_000,
  });

/** Asks for a run on a new issue as octocat and waits for it to wait for budget. */
async function waitingRun(prompt: string) {
  const issue = uniqueIssue();
  await g.comment({ issue, login: "octocat", body: `@${HANDLE} ${prompt}` });
  const binding = await waitFor(
    () =>
      g.t.dispatch.store.findLatestBinding({
        platform: "github",
        workspace: g.repo,
        channel: String(issue),
        thread: null,
      }),
    { what: `a run bound to #${issue}` },
  );
  const run = await waitForState(g.t, binding.runId, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR"], 30_000);
  expect(run.state, JSON.stringify(run.status_message)).toBe("BLOCKED");
  expect(run.status_message.reason).toBe("awaiting_budget");
  return { issue, runId: binding.runId };
}

describe("GitHub: a run that waits for budget", () => {
  it("the tracking comment names `extend $X` and `stop`; someone else's extend is refused; the requester's continues the run", async () => {
    turns.push(
      { calls: [{ name: "shell", input: { command: "echo one" } }], usage: STEP },
      { text: "Finished after the extension.", usage: { input_tokens: 10, output_tokens: 10 } },
    );
    const { issue, runId } = await waitingRun("Refactor the parser");
    const waiting = await waitFor(
      () =>
        g.fake
          .botComments(g.repo, issue)
          .find((c) => MARKER.test(c.body) && c.body.includes("**Waiting for more budget**")),
      { what: "the tracking comment to wait for budget", timeoutMs: 15_000 },
    );
    expect(waiting.body).toContain("$0.063");
    expect(waiting.body).toContain(`\`@${HANDLE} extend $1\``);
    expect(waiting.body).toContain(`\`@${HANDLE} stop\``);

    await g.comment({ issue, login: "hubot", body: `@${HANDLE} extend $2` });
    const refused = await botCommentWith(issue, "only the person who asked for it");
    expect(refused.body).toContain("@hubot");
    expect(refused.body).toContain("An admin must extend it");
    expect((await getRun(runId)).state).toBe("BLOCKED");

    await g.comment({ issue, login: "octocat", body: `@${HANDLE} extend $2` });
    // The comment is answered through the inbox: the run goes on from BLOCKED once it is.
    const done = await waitForState(g.t, runId, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    expect(done.budget.extended_usd).toBeCloseTo(2.013, 6);

    // Nothing waits any more: `stop` says so and changes nothing.
    await g.comment({ issue, login: "octocat", body: `@${HANDLE} stop` });
    const notice = await botCommentWith(issue, "is not waiting for budget");
    expect(notice.body).toContain("@octocat");
    expect((await getRun(runId)).state).toBe("SUCCEEDED");
  });

  it("`@dispatch stop` has it deliver what it has, without another model call", async () => {
    turns.push({ calls: [{ name: "shell", input: { command: "echo two" } }], usage: STEP });
    const { issue, runId } = await waitingRun("Tidy the imports");
    turns.length = 0;
    const calls = model.agentRequests().length;
    await g.comment({ issue, login: "octocat", body: `@${HANDLE} stop` });
    const ended = await waitForState(g.t, runId, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(ended.state, JSON.stringify(ended.status_message)).toBe("SUCCEEDED");
    expect(model.agentRequests().length).toBe(calls);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { type GitHubDispatch, HANDLE, startGitHubDispatch, uniqueIssue } from "./support.ts";

const MARKER = /<!-- dispatch:run=([A-Za-z0-9_-]+) -->/;

// biome-ignore lint/suspicious/noExplicitAny: API responses are asserted field by field
type Json = Record<string, any>;

/**
 * Plans that wait for approval, from GitHub (docs/surfaces.md, "Waiting for you"): `@dispatch plan …` waits
 * with its plan in the tracking comment and says how to answer; `@dispatch revise …` plans again,
 * `@dispatch approve` carries the plan out in the same run, which opens the pull request. Signed webhooks,
 * the fake GitHub with its git server, the scripted harness (whose plan is its script).
 */
describe("GitHub: a plan that waits for approval", () => {
  let g: GitHubDispatch;
  beforeAll(async () => {
    g = await startGitHubDispatch({ gitOverHttp: true });
    g.fake.permissions.set("octocat", "write");
  });
  afterAll(() => g?.stop());

  const trackingWith = (issue: number, text: string) =>
    waitFor(
      () => g.fake.botComments(g.repo, issue).find((c) => MARKER.test(c.body) && c.body.includes(text)),
      { what: `the tracking comment on #${issue} to say ${JSON.stringify(text)}`, timeoutMs: 15_000 },
    );
  const events = async (id: string): Promise<Json[]> =>
    (await g.t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events;
  const blockedTimes = async (id: string) =>
    (await events(id)).filter((e) => e.type === "state" && e.data.state === "BLOCKED").length;

  it("`@dispatch plan` waits with the plan in the tracking comment; `revise` plans again; `approve` carries it out and opens the PR", async () => {
    const issue = uniqueIssue();
    await g.comment({ issue, login: "octocat", body: `@${HANDLE} plan add a file\n$ echo x > x.txt` });
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
    const runId = binding.runId;
    const blocked = await waitForState(g.t, runId, ["BLOCKED", "SUCCEEDED", "FAILED"], 30_000);
    expect(blocked.state).toBe("BLOCKED");

    const waiting = await trackingWith(issue, "**Waiting for you**");
    expect(waiting.body).toContain("✋");
    expect(waiting.body).toContain("**Waiting for approval of its plan**");
    expect(waiting.body).toContain("> $ echo x > x.txt");
    expect(waiting.body).toContain(`\`@${HANDLE} approve\``);
    expect(waiting.body).toContain(`\`@${HANDLE} revise <what to change>\``);
    expect(waiting.body).toContain(`\`@${HANDLE} cancel\``);
    // Waiting, nothing is delivered yet.
    expect(g.fake.pulls.filter((p) => p.repo === g.repo && p.head === blocked.agent_config.branch)).toEqual(
      [],
    );

    await g.comment({ issue, login: "octocat", body: `@${HANDLE} revise\n$ echo y > y.txt` });
    await waitFor(async () => (await blockedTimes(runId)) === 2, {
      what: "the revised plan to wait",
      timeoutMs: 30_000,
    });
    await trackingWith(issue, "> $ echo y > y.txt");

    await g.comment({ issue, login: "octocat", body: `@${HANDLE} approve go ahead` });
    const done = await waitForState(g.t, runId, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    expect((await events(runId)).filter((e) => e.type === "tool_call").map((e) => e.data.command)).toEqual([
      "echo y > y.txt",
    ]);
    const branch = done.agent_config.branch;
    expect(g.remotes.show(g.repo, branch, "y.txt")).toBe("y\n");
    const pr = g.fake.pulls.find((p) => p.repo === g.repo && p.head === branch);
    expect(pr).toBeDefined();
    await trackingWith(issue, `PR #${pr!.number} opened`);

    // Nothing waits any more: `approve` says so instead of starting anything.
    await g.comment({ issue, login: "octocat", body: `@${HANDLE} approve` });
    const notice = await waitFor(
      () =>
        g.fake.botComments(g.repo, issue).find((c) => c.body.includes("has no plan waiting for approval")),
      { what: "the notice that no plan waits" },
    );
    expect(notice.body).toContain("@octocat");
    expect((await g.t.api("GET", `/api/v1/agent/runs/${runId}`)).body.state).toBe("SUCCEEDED");
  });
});

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { type LinearDispatch, startLinearDispatch } from "./support.ts";

/**
 * Plans that wait for approval in a Linear agent session (docs/surfaces.md, "Waiting for you"): a mention
 * that says `plan` starts a plan-mode run; waiting, it asks with an `elicitation` holding the plan; the
 * reply in the session answers it (`revise …` plans again, `approve` carries it out in the same run).
 */
describe("Linear: a plan that waits for approval", { timeout: 120_000 }, () => {
  let l: LinearDispatch;
  beforeAll(async () => {
    l = await startLinearDispatch();
  });
  afterAll(() => l?.stop());

  it("`@Dispatch plan` waits with an elicitation holding the plan; `revise` and `approve` in the session answer it", async () => {
    const issue = l.fake.issue(l.team, {
      title: "Plan it",
      description: "Write a file.\n$ echo one > one.txt",
    });
    const event = l.fake.created(issue, l.ada, { comment: "@Dispatch plan this first" });
    const sessionId = event.agentSession.id;
    await l.deliver(event);
    const run = await waitFor(async () => (await l.runs()).find((r) => r.trigger_url === issue.url), {
      what: "the Linear run",
    });
    const blocked = await waitForState(l.t, run.run_id, ["BLOCKED", "SUCCEEDED", "FAILED"], 30_000);
    expect(blocked.state).toBe("BLOCKED");

    const ask = await l.activity(sessionId, (a) => a.content.type === "elicitation", "the elicitation");
    const body = String(ask.content.body);
    expect(body).toContain("Waiting for you: approval of its plan.");
    expect(body).toContain("$ echo one > one.txt");
    expect(body).toContain("Reply `approve`");
    // The plan is shown once: in the elicitation, not also as the thought before it.
    expect(
      l.fake
        .activitiesOf(sessionId)
        .filter((a) => String(a.content.body ?? "").includes("$ echo one > one.txt")),
    ).toEqual([ask]);

    await l.deliver(l.fake.prompted(sessionId, l.ada, "revise\n$ echo two > two.txt"));
    await waitFor(
      () => l.fake.activitiesOf(sessionId).filter((a) => a.content.type === "elicitation").length === 2,
      { what: "the revised plan's elicitation", timeoutMs: 30_000 },
    );
    const second = l.fake.activitiesOf(sessionId).filter((a) => a.content.type === "elicitation")[1]!;
    expect(String(second.content.body)).toContain("$ echo two > two.txt");

    await l.deliver(l.fake.prompted(sessionId, l.ada, "approve"));
    const done = await waitForState(l.t, run.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 60_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    expect(await readFile(join(l.t.dataDir, "workspaces", run.run_id, "two.txt"), "utf8")).toBe("two\n");
    const thoughts = l.fake.activitiesOf(sessionId).map((a) => String(a.content.body ?? ""));
    expect(thoughts).toContain("Approved: the agent carries out the plan in this run.");
    await l.activity(sessionId, (a) => a.content.type === "response", "the final response");
    // One elicitation per wait, however often the transcript was read.
    expect(l.fake.activitiesOf(sessionId).filter((a) => a.content.type === "elicitation")).toHaveLength(2);
  });
});

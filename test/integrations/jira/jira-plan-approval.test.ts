import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor, waitForState } from "../../support/dispatch.ts";
import { type JiraDispatch, startJiraDispatch } from "./support.ts";

/**
 * Plans that wait for approval on a Jira issue (docs/surfaces.md, "Waiting for you"): a mention saying
 * `plan …` starts a plan-mode run whose comment, once it waits, holds the plan and the mentions that
 * answer it; a mention saying `approve` carries the plan out in the same run.
 */
describe("Jira: a plan that waits for approval", { timeout: 120_000 }, () => {
  let j: JiraDispatch;
  beforeAll(async () => {
    j = await startJiraDispatch("cloud");
  });
  afterAll(() => j?.stop());

  it("`plan …` waits with the plan in the run's comment; `approve` carries it out", async () => {
    const issue = j.jira.issue("PROJ", { summary: "Plan a file", description: "A file is missing." });
    await j.deliver(j.jira.commentCreated(issue, j.ada, "plan write it\n$ echo x > x.txt"));
    const [run] = await waitFor(async () => {
      const runs = await j.runsOf(issue);
      return runs.length ? runs : undefined;
    });
    const blocked = await waitForState(j.t, run!.run_id, ["BLOCKED", "SUCCEEDED", "FAILED"], 30_000);
    expect(blocked.state).toBe("BLOCKED");
    const card = await j.comment(
      issue,
      (text) => text.includes("Waiting for approval of its plan"),
      "the run's comment to say what it waits for",
    );
    const text = j.jira.text(card.body);
    expect(text).toContain("Waiting for you");
    expect(text).toContain("$ echo x > x.txt");
    expect(text).toContain("revise <what to change>");

    await j.deliver(j.jira.commentCreated(issue, j.ada, "approve"));
    const done = await waitForState(j.t, run!.run_id, ["SUCCEEDED", "FAILED", "ERROR"], 60_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    const states = (await j.t.api("GET", `/api/v1/agent/runs/${run!.run_id}/events?limit=1000`)).body.events
      .filter((e: { type: string }) => e.type === "state")
      .map((e: { data: { state: string } }) => e.data.state);
    expect(states).toEqual(["QUEUED", "INPROGRESS", "BLOCKED", "INPROGRESS", "SUCCEEDED"]);
  });
});

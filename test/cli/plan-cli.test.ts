import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliFor } from "../support/cli.ts";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";

// A plan that waits for approval from the command line: `dispatch run --plan`, what `get`, `list` and
// `--follow` say of a BLOCKED run, and `dispatch approve` / `dispatch revise`, each a child process of
// src/main.ts against a live server (the scripted harness's plan is its script).

let t: TestDispatch;

beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_POLL_INTERVAL_MS: "100" });
});
afterAll(async () => {
  await t?.stop();
});

const dispatch = cliFor(() => t);

const blockedStates = async (runId: string): Promise<number> =>
  (await t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`)).body.events.filter(
    (e: { type: string; data: { state?: string } }) => e.type === "state" && e.data.state === "BLOCKED",
  ).length;

describe("dispatch run --plan, approve and revise", () => {
  it("follows a plan run until it waits, shows it waiting, revises it, approves it, then refuses", async () => {
    const ran = await dispatch(["run", "--plan", "--follow", "--title", "cli plan", "$ echo one > one.txt"]);
    expect(ran.code, ran.stderr).toBe(3);
    expect(ran.stdout).toContain("echo one > one.txt");
    const runId = /Run (\S+) queued/.exec(ran.stderr)?.[1];
    expect(runId).toBeTruthy();
    expect(ran.stderr).toContain("Waiting for you: approval of its plan.");
    expect(ran.stderr).toContain(`dispatch approve ${runId} [--note …]`);
    expect(ran.stderr).toContain(`dispatch revise ${runId} <changes>`);
    expect((await t.api("GET", `/api/v1/agent/runs/${runId}`)).body.state).toBe("BLOCKED");

    const got = await dispatch(["get", runId!]);
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/state\s+BLOCKED \(awaiting_approval\): The plan is ready/);
    expect(got.stderr).toContain(`dispatch approve ${runId}`);
    const listed = await dispatch(["list", "--state", "blocked"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${runId}\\s+BLOCKED \\(awaiting_approval\\)\\s+.*cli plan`));

    const noChanges = await dispatch(["revise", runId!]);
    expect(noChanges.code).toBe(2);
    expect(noChanges.stderr).toContain("say what to change in the plan");
    const revised = await dispatch(["revise", runId!, "$ echo two > two.txt"]);
    expect(revised.code, revised.stderr).toBe(0);
    expect(revised.stdout.trim()).toMatch(/^\S+$/);
    expect(revised.stderr).toContain("Changes sent");
    await waitFor(async () => (await blockedStates(runId!)) === 2, { what: "the revised plan to wait" });

    const approved = await dispatch(["approve", runId!, "--note", "Go ahead."]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stderr).toContain("Approved: the run carries out its plan");
    // Following from the start passes the answered waits and ends with the run.
    const followed = await dispatch(["logs", runId!, "--follow"]);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stderr).toContain(`Run ${runId} SUCCEEDED.`);
    expect((await waitForState(t, runId!, ["SUCCEEDED"])).state).toBe("SUCCEEDED");
    const commands = (await t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`)).body.events
      .filter((e: { type: string }) => e.type === "tool_call")
      .map((e: { data: { command: string } }) => e.data.command);
    expect(commands).toEqual(["echo two > two.txt"]);

    const again = await dispatch(["approve", runId!]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("has no plan waiting for approval");
    expect(again.stderr).toContain("HTTP 409");
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../../../test/support/dispatch.ts";
import { BadRequestError, ConflictError, Dispatch, type RunItem } from "../src/index.ts";

// client.runs.approve against a live Dispatch on 127.0.0.1: the scripted harness's plan is its script.

let t: TestDispatch;
let client: Dispatch;

beforeAll(async () => {
  t = await startTestDispatch({ DISPATCH_POLL_INTERVAL_MS: "100" });
  client = new Dispatch({ apiKey: t.key, baseURL: `${t.url}/api/v1` });
});
afterAll(async () => {
  await t?.stop();
});

/** The run once it is no longer QUEUED or INPROGRESS. */
const settled = (runId: string): Promise<RunItem> =>
  waitFor(
    async () => {
      const run = await client.runs.retrieve(runId);
      return run.state === "QUEUED" || run.state === "INPROGRESS" ? undefined : run;
    },
    { what: `run ${runId} to wait or finish` },
  );

describe("client.runs.approve", () => {
  it("revises a waiting plan, approves it, and is refused once nothing waits", async () => {
    const created = await client.runs.create({ prompt: "$ echo first > first.txt", mode: "plan" });
    const waiting = await settled(created.run_id);
    expect(waiting.state).toBe("BLOCKED");
    expect(waiting.status_message).toMatchObject({ reason: "awaiting_approval" });
    expect(waiting.artifacts.some((a) => a.artifact_type === "PLAN")).toBe(true);

    await expect(client.runs.approve(created.run_id, { action: "revise" })).rejects.toBeInstanceOf(
      BadRequestError,
    );
    const revised = await client.runs.approve(created.run_id, {
      action: "revise",
      message: "$ echo second > second.txt",
    });
    expect(revised.outcome).toBe("live_session");
    await waitFor(
      async () => {
        const page = await client.runs.listEvents(created.run_id, { limit: 1000 });
        return page.events.filter((e) => e.type === "state" && e.data.state === "BLOCKED").length === 2;
      },
      { what: "the revised plan to wait" },
    );

    const approved = await client.runs.approve(created.run_id, { action: "approve", message: "Go." });
    expect(approved.followup_id).toEqual(expect.any(String));
    const done = await settled(created.run_id);
    expect(done.state).toBe("SUCCEEDED");
    const events = await client.runs.listEvents(created.run_id, { limit: 1000 });
    expect(events.events.filter((e) => e.type === "tool_call").map((e) => e.data.command)).toEqual([
      "echo second > second.txt",
    ]);

    const again = client.runs.approve(created.run_id, { action: "approve" }, { maxRetries: 0 });
    await expect(again).rejects.toBeInstanceOf(ConflictError);
    await expect(again).rejects.toThrow(/no plan waiting for approval/);
  });
});

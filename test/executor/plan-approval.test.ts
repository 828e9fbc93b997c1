import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";

// biome-ignore lint/suspicious/noExplicitAny: API bodies are asserted field by field
type Json = any;

/**
 * Plans that wait for approval (docs/api.md): a `mode: plan` run ends its turn BLOCKED awaiting_approval
 * with a PLAN artifact and no executor slot; Approve continues the same run in normal mode with the plan as
 * its brief, Request changes revises it, nobody answering cancels it.
 */
describe("a plan that waits for approval", () => {
  let t: TestDispatch;
  beforeAll(async () => {
    t = await startTestDispatch({
      DISPATCH_MAX_CONCURRENT_RUNS: "1",
      DISPATCH_POLL_INTERVAL_MS: "100",
    });
  });
  afterAll(async () => {
    await t?.stop();
  });

  async function planRun(prompt: string): Promise<string> {
    const created = await t.api("POST", "/api/v1/agent/runs", { prompt, mode: "plan" });
    expect(created.status, created.text).toBe(200);
    const run = await waitForState(
      t,
      created.body.run_id,
      ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR"],
      30_000,
    );
    expect(run.state, JSON.stringify(run.status_message)).toBe("BLOCKED");
    return run.run_id;
  }

  const events = async (id: string): Promise<Json[]> =>
    (await t.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`)).body.events;
  const approve = (id: string, body: Json) => t.api("POST", `/api/v1/agent/runs/${id}/approve`, body);

  it("waits without a slot; Approve carries the plan out in the same run", async () => {
    // More waiting runs than the one executor slot: the second could only plan once the first, waiting,
    // had given the slot back; and once both wait, none holds it (its last checkpoint may still be
    // finishing as the state is seen).
    const first = await planRun("$ echo planned > plan.txt");
    const second = await planRun("$ echo second > second.txt");
    await waitFor(() => t.dispatch.executor!.activeRuns === 0, {
      what: "both waiting runs to free the slot",
    });
    const run = (await t.api("GET", `/api/v1/agent/runs/${first}`)).body;
    expect(run.status_message).toMatchObject({
      reason: "awaiting_approval",
      message: expect.stringContaining("approve"),
    });
    const plan = run.artifacts.find((a: Json) => a.artifact_type === "PLAN");
    expect(plan.data.document_uid).toEqual(expect.any(String));

    const once = { "idempotency-key": `approve-${first}` };
    const answer = { action: "approve", message: "Go ahead." };
    const approved = await t.api("POST", `/api/v1/agent/runs/${first}/approve`, answer, once);
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body.outcome).toBe("live_session");
    // Its retry (the answer lost on the way) gets the same answer again, not a conflict, and adds nothing.
    const retried = await t.api("POST", `/api/v1/agent/runs/${first}/approve`, answer, once);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body).toEqual(approved.body);
    const done = await waitForState(t, first, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(done.state).toBe("SUCCEEDED");
    // One execution: QUEUED → INPROGRESS → BLOCKED → INPROGRESS → SUCCEEDED, the command run once.
    const transcript = await events(first);
    expect(transcript.filter((e) => e.type === "state").map((e) => e.data.state)).toEqual([
      "QUEUED",
      "INPROGRESS",
      "BLOCKED",
      "INPROGRESS",
      "SUCCEEDED",
    ]);
    expect(transcript.filter((e) => e.type === "tool_call").map((e) => e.data.command)).toEqual([
      "echo planned > plan.txt",
    ]);
    expect(transcript.filter((e) => e.type === "followup")).toHaveLength(1);
    expect(await readFile(join(t.dataDir, "workspaces", first, "plan.txt"), "utf8")).toBe("planned\n");
    expect((await t.api("GET", `/api/v1/agent/runs/${second}`)).body.state).toBe("BLOCKED");
  });

  it("Request changes plans again and waits again; answers to a run not waiting are refused", async () => {
    const id = await planRun("$ echo one > one.txt");
    const missing = await approve(id, { action: "revise" });
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toContain("message");
    const revised = await approve(id, { action: "revise", message: "$ echo two > two.txt" });
    expect(revised.status, revised.text).toBe(200);
    await waitFor(
      async () =>
        (await events(id)).filter((e) => e.type === "state" && e.data.state === "BLOCKED").length === 2,
      { what: "the revised plan to wait" },
    );
    const plans = (await t.api("GET", `/api/v1/agent/runs/${id}`)).body.artifacts.filter(
      (a: Json) => a.artifact_type === "PLAN",
    );
    expect(plans).toHaveLength(2);
    expect((await approve(id, { action: "approve" })).status).toBe(200);
    await waitForState(t, id, ["SUCCEEDED"], 30_000);
    // The revised plan is what ran.
    expect((await events(id)).filter((e) => e.type === "tool_call").map((e) => e.data.command)).toEqual([
      "echo two > two.txt",
    ]);
    const again = await approve(id, { action: "approve" });
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain("no plan waiting");
  });

  it("is cancelled, saying why, when nobody answers in time", async () => {
    const impatient = await startTestDispatch({
      DISPATCH_POLL_INTERVAL_MS: "100",
      DISPATCH_BLOCKED_TIMEOUT_S: "2",
    });
    try {
      const created = await impatient.api("POST", "/api/v1/agent/runs", {
        prompt: "$ echo never",
        mode: "plan",
      });
      const run = await waitForState(
        impatient,
        created.body.run_id,
        ["CANCELLED", "SUCCEEDED", "FAILED"],
        30_000,
      );
      expect(run.state).toBe("CANCELLED");
      expect(run.status_message).toMatchObject({ reason: "unanswered" });
      expect(run.status_message.message).toContain("Nobody answered within 2s");
      expect(run.status_message.message).toContain("approval of its plan");
    } finally {
      await impatient.stop();
    }
  });
});

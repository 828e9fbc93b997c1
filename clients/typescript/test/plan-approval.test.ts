import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor } from "../../../test/support/dispatch.ts";
import { ConflictError, Dispatch } from "../src/index.ts";

// client.runs.approve against a live Dispatch on 127.0.0.1 (scripted harness: its plan is its script).

let t: TestDispatch;
let client: Dispatch;

beforeAll(async () => {
  t = await startTestDispatch();
  client = new Dispatch({ apiKey: t.key, baseURL: `${t.url}/api/v1` });
});
afterAll(async () => {
  await t?.stop();
});

const stateOf = async (id: string, states: string[]) =>
  waitFor(
    async () => {
      const run = await client.runs.retrieve(id);
      return states.includes(run.state) ? run : undefined;
    },
    { what: `run ${id} to reach ${states.join("/")}`, timeoutMs: 30_000 },
  );

describe("client.runs.approve", () => {
  it("approves the plan a run waits on; a run with no plan waiting is a ConflictError", async () => {
    const created = await client.runs.create({ prompt: "$ echo approved", mode: "plan" });
    const waiting = await stateOf(created.run_id, ["BLOCKED", "SUCCEEDED", "FAILED"]);
    expect(waiting.state).toBe("BLOCKED");
    expect(waiting.status_message?.reason).toBe("awaiting_approval");

    const answer = await client.runs.approve(created.run_id, { action: "approve", message: "Go." });
    expect(answer).toMatchObject({ followup_id: expect.any(String), outcome: "live_session" });
    expect((await stateOf(created.run_id, ["SUCCEEDED", "FAILED", "ERROR"])).state).toBe("SUCCEEDED");

    const again = await client.runs.approve(created.run_id, { action: "approve" }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ConflictError);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpRunsApi } from "../../src/runs/http-runs-api.ts";
import { extendOffer, waitsForBudget } from "../../src/runs/waiting-run.ts";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";

/**
 * Remote mode's answer to a run waiting for budget (docs/api.md, "Budgets"): HttpRunsApi.budget posts to
 * the route with the person as on_behalf_of, so the person's own rights apply, not the bot's admin key.
 * The builtin harness against a loopback Anthropic API that reports usage.
 */

const turns: ScriptedTurn[] = [];
let model: FakeModel;
let service: TestDispatch;

beforeAll(async () => {
  model = await startFakeModel(turns);
  service = await startTestDispatch({
    ANTHROPIC_API_KEY: "test-anthropic-key",
    ANTHROPIC_BASE_URL: model.baseUrl("anthropic"),
    DISPATCH_DEFAULT_MODEL: "anthropic/claude-sonnet-4-5",
    DISPATCH_POLL_INTERVAL_MS: "100",
  });
});
afterAll(async () => {
  await service?.stop();
  await model?.close();
});

const ada = { type: "user" as const, uid: "slack:T1:UADA", display_name: "Ada" };
const otto = { type: "user" as const, uid: "slack:T1:UOTTO", display_name: "Otto" };

describe("HttpRunsApi.budget", () => {
  it("answers as the person: someone else is refused, the requester extends and the run continues", async () => {
    turns.push(
      // $0.0105: over the run's one-cent limit after one step.
      {
        calls: [{ name: "shell", input: { command: "echo one" } }],
        usage: { input_tokens: 1000, output_tokens: 500 },
      },
      { text: "Done.", usage: { input_tokens: 10, output_tokens: 10 } },
    );
    const api = new HttpRunsApi({ baseUrl: `${service.url}/api/v1`, apiKey: service.key });
    const { run_id } = await api.create({
      prompt: "Write one",
      config: { max_cost_usd: 0.01 },
      creator: ada,
    });
    await waitForState(service, run_id, ["BLOCKED"], 30_000);
    const waiting = await api.get(run_id);
    expect(waitsForBudget(waiting)).toBe(true);
    expect(extendOffer(waiting)).toBe(1);

    await expect(api.budget(run_id, { action: "stop" }, { by: otto })).rejects.toMatchObject({
      code: "not_authorized",
      detail: expect.stringContaining("only the person who asked for it (Ada)"),
    });
    expect((await api.get(run_id)).state).toBe("BLOCKED");

    const answered = await api.budget(run_id, { action: "extend", amount_usd: 1 }, { by: ada });
    expect(answered).toMatchObject({ run_id, state: "INPROGRESS" });
    const done = await waitForState(service, run_id, ["SUCCEEDED", "FAILED", "ERROR", "BLOCKED"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    await expect(api.budget(run_id, { action: "stop" }, { by: ada })).rejects.toMatchObject({
      code: "conflict",
    });
  });
});

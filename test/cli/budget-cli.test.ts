import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitForState } from "../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";

// A run that waits for budget from the command line: what `get` says of it, and `dispatch budget <run>
// extend <usd> | stop`, each a child process of src/main.ts against a live server whose builtin harness
// talks to a loopback Anthropic API that reports usage.

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));
const SONNET = "anthropic/claude-sonnet-4-5";
/** One step at $0.063 (15,000 input, 1,200 output tokens at $3 / $15 per million). */
const STEP = { input_tokens: 15_000, output_tokens: 1200 };

const turns: ScriptedTurn[] = [];
let model: FakeModel;
let t: TestDispatch;

beforeAll(async () => {
  model = await startFakeModel(turns);
  t = await startTestDispatch({
    ANTHROPIC_API_KEY: "test-anthropic-key",
    ANTHROPIC_BASE_URL: model.baseUrl("anthropic"),
    DISPATCH_POLL_INTERVAL_MS: "100",
  });
});
afterAll(async () => {
  await t?.stop();
  await model?.close();
});
// Each test scripts its own turns: none left over from another.
beforeEach(() => {
  turns.length = 0;
});

function dispatch(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        DISPATCH_BASE_URL: t.url,
        DISPATCH_API_KEY: t.key,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

async function waitingRun(prompt: string): Promise<string> {
  const created = await t.api("POST", "/api/v1/agent/runs", {
    prompt,
    config: { model_id: SONNET, max_cost_usd: 0.05 },
  });
  expect(created.status, created.text).toBe(200);
  const run = await waitForState(t, created.body.run_id, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR"], 30_000);
  expect(run.state, JSON.stringify(run.status_message)).toBe("BLOCKED");
  expect(run.status_message.reason).toBe("awaiting_budget");
  return run.run_id;
}

describe("dispatch budget", () => {
  it("`get` says how to answer; a bad amount is a usage error; `extend $2` continues the run; a second answer is refused", async () => {
    turns.push(
      { calls: [{ name: "shell", input: { command: "echo one" } }], usage: STEP },
      { text: "Finished after the extension.", usage: { input_tokens: 10, output_tokens: 10 } },
    );
    const runId = await waitingRun("Refactor the parser");
    const got = await dispatch(["get", runId]);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout + got.stderr).toContain("BLOCKED (awaiting_budget)");
    expect(got.stdout + got.stderr).toContain(`dispatch budget ${runId} extend <usd>`);

    for (const bad of [["extend"], ["extend", "zero"], ["extend", "0"], ["more"], ["stop", "now"]]) {
      const refused = await dispatch(["budget", runId, ...bad]);
      expect(refused.code, bad.join(" ")).toBe(2);
      expect(refused.stderr, bad.join(" ")).toMatch(/dispatch budget <run id>/);
    }
    expect((await t.api("GET", `/api/v1/agent/runs/${runId}`)).body.state).toBe("BLOCKED");

    const extended = await dispatch(["budget", runId, "extend", "$2"]);
    expect(extended.code, extended.stderr).toBe(0);
    expect(extended.stdout.trim()).toBe("INPROGRESS");
    expect(extended.stderr).toContain("Extended by $2: the run continues");
    const done = await waitForState(t, runId, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    expect(done.budget.extended_usd).toBeCloseTo(2.013, 6);

    const again = await dispatch(["budget", runId, "stop"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("is not waiting for budget");
  });

  it("`stop` has the run deliver what it has, without another model call", async () => {
    turns.push({ calls: [{ name: "shell", input: { command: "echo two" } }], usage: STEP });
    const runId = await waitingRun("Tidy the imports");
    turns.length = 0;
    const calls = model.agentRequests().length;
    const stopped = await dispatch(["budget", runId, "stop", "--json"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(JSON.parse(stopped.stdout)).toMatchObject({ run_id: runId, state: "INPROGRESS" });
    const ended = await waitForState(t, runId, ["SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(ended.state).toBe("SUCCEEDED");
    expect(ended.status_message.message).toContain("Stopped at its budget by");
    expect(model.agentRequests().length).toBe(calls);
  });
});

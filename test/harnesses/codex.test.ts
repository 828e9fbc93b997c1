import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";
import { processesOf, requestText, startHarnessDispatch, testKey } from "./support.ts";

/**
 * Codex (the installed @openai/codex binary) as the `codex` harness, for real: in the run's bubblewrap
 * sandbox, against a loopback OpenAI Responses API that scripts its tool calls, reached only through
 * Dispatch's model gateway. Nothing is skipped: without the binary these tests fail.
 */

const KEY = testKey("openai");
const turns: ScriptedTurn[] = [];
let fake: FakeModel;
let d: Awaited<ReturnType<typeof startHarnessDispatch>>;

beforeAll(async () => {
  fake = await startFakeModel(turns);
  d = await startHarnessDispatch({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl("openai") });
});

afterAll(async () => {
  await d?.stop();
  await fake?.close();
  expect(d.logs.join("")).not.toContain(KEY);
});

function script(...next: ScriptedTurn[]) {
  turns.push(...next);
}

function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

async function create(prompt: string) {
  const res = await d.api("POST", "/api/v1/agent/runs", {
    prompt,
    config: { harness: { type: "codex" }, model_id: "openai/gpt-fake" },
  });
  expect(res.status, res.text).toBe(200);
  return res.body.run_id as string;
}

/** Codex's exec_command arguments (its shell tool). */
const exec = (cmd: string) => ({ name: "exec_command", input: { cmd, yield_time_ms: 10_000 } });

describe("codex harness", () => {
  it("edits a file and runs a command in the sandbox; the transcript and usage say so; the key stays in Dispatch", async () => {
    const before = fake.agentRequests().length;
    script(
      {
        text: "Creating hello.txt.",
        calls: [exec("printf 'hello from codex\\n' > hello.txt")],
        usage: { input_tokens: 1000, output_tokens: 50 },
      },
      {
        calls: [exec("cat hello.txt && printenv OPENAI_API_KEY")],
        usage: { input_tokens: 1100, output_tokens: 30 },
      },
      { text: "Wrote hello.txt and printed it.", usage: { input_tokens: 1200, output_tokens: 20 } },
    );
    const runId = await create("Write hello.txt and show it");
    const run = await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");

    const workspace = d.workspace(runId);
    expect(readFileSync(join(workspace, "hello.txt"), "utf8")).toBe("hello from codex\n");
    const events = await d.events(runId);
    const of = (type: string) => events.filter((e) => e.type === type).map((e) => e.data);
    expect(of("message").map((m) => [m.role, m.text])).toEqual([
      ["user", "Write hello.txt and show it"],
      ["assistant", "Creating hello.txt."],
      ["assistant", "Wrote hello.txt and printed it."],
    ]);
    const calls = of("tool_call");
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({ tool: "exec_command", kind: "command" });
    // Codex reports the command as it ran it: through its shell (`bash -lc "…"`).
    expect(calls[0].command).toMatch(/printf .*hello from codex.* > hello\.txt/);
    expect(calls[1].command).toContain("cat hello.txt && printenv OPENAI_API_KEY");
    const results = of("tool_result");
    expect(results.map((r) => r.call_id)).toEqual(calls.map((c) => c.call_id));
    expect(results[1]).toMatchObject({ exit_code: 0 });
    expect(results[1].output).toContain("hello from codex");
    // The agent's own environment holds a placeholder, never Dispatch's key.
    expect(results[1].output).toContain("dispatch-model-gateway");

    expect(run.request_usage).toMatchObject({ input_tokens: 3300, output_tokens: 100 });

    const requests = fake.agentRequests().slice(before);
    expect(requests).toHaveLength(3);
    for (const r of requests) expect(r.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(JSON.stringify(events)).not.toContain(KEY);
    expect(await d.agentAreaText(runId)).not.toContain(KEY);
    expect(existsSync(join(workspace, ".codex"))).toBe(false);
  });

  it("takes a follow-up sent while it works at its next turn, resuming the same thread", async () => {
    const held = gate();
    const before = fake.agentRequests().length;
    script({ gate: held.promise, text: "First part done." }, { text: "Second part done." });
    const runId = await create("Do the first part");
    await waitFor(() => fake.agentRequests().length > before, {
      timeoutMs: 60_000,
      what: "the first model call",
    });
    const sent = await d.api("POST", `/api/v1/agent/runs/${runId}/followups`, {
      message: "Now the second part",
    });
    expect(sent.status, sent.text).toBeLessThan(300);
    held.open();
    await waitFor(() => fake.agentRequests().length === before + 2, {
      timeoutMs: 60_000,
      what: "the follow-up's model call",
    });
    const run = await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const second = requestText(fake.agentRequests()[before + 1]!.body);
    expect(second).toContain("Do the first part");
    expect(second).toContain("First part done.");
    expect(second).toContain("Now the second part");
    const followup = (await d.events(runId)).find((e) => e.type === "followup");
    expect(followup?.data.outcome).toBe("live_session");
  });

  it("resumes the same Codex thread for a follow-up after the run finished", async () => {
    const before = fake.agentRequests().length;
    script({ text: "The capital is Paris." });
    const runId = await create("What is the capital of France?");
    expect((await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"])).state).toBe("SUCCEEDED");
    const sessions = JSON.parse(readFileSync(join(`${d.workspace(runId)}.agent`, "sessions.json"), "utf8"));
    expect(sessions.codex).toBeTruthy();

    script({ text: "About two million people." });
    const sent = await d.api("POST", `/api/v1/agent/runs/${runId}/followups`, {
      message: "How many live there?",
    });
    expect(sent.status, sent.text).toBeLessThan(300);
    await waitFor(() => fake.agentRequests().length === before + 2, {
      timeoutMs: 60_000,
      what: "the follow-up's model call",
    });
    const run = await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const resumed = requestText(fake.agentRequests()[before + 1]!.body);
    expect(resumed).toContain("What is the capital of France?");
    expect(resumed).toContain("The capital is Paris.");
    expect(resumed).toContain("How many live there?");
    const again = JSON.parse(readFileSync(join(`${d.workspace(runId)}.agent`, "sessions.json"), "utf8"));
    expect(again.codex).toBe(sessions.codex);
  });

  it("cancel mid-stream ends the agent and everything it started", async () => {
    const before = fake.agentRequests().length;
    script({ text: "Thinking about it at great length", stall: true });
    const runId = await create("Take your time");
    await waitFor(() => fake.agentRequests().length > before && fake.openStreams() > 0, {
      timeoutMs: 60_000,
      what: "the model stream to start",
    });
    const workspace = d.workspace(runId);
    expect(processesOf(workspace).some((p) => p.includes("codex"))).toBe(true);
    const res = await d.api("POST", `/api/v1/agent/runs/${runId}/cancel`);
    expect(res.status, res.text).toBe(200);
    expect((await d.state(runId, ["CANCELLED", "SUCCEEDED", "FAILED"])).state).toBe("CANCELLED");
    await waitFor(() => processesOf(workspace).length === 0, { what: "no process of the run left" });
    await waitFor(() => fake.openStreams() === 0, { what: "the model stream to be closed" });
  });

  it("refuses a codex run at create when no OpenAI key is configured, or for another provider's model", async () => {
    const bare = await startHarnessDispatch({});
    try {
      const res = await bare.api("POST", "/api/v1/agent/runs", {
        prompt: "hello",
        config: { harness: { type: "codex" } },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.text).toContain("OPENAI_API_KEY");
    } finally {
      await bare.stop();
    }
    const res = await d.api("POST", "/api/v1/agent/runs", {
      prompt: "hello",
      config: { harness: { type: "codex" }, model_id: "anthropic/claude-sonnet-4-5" },
    });
    expect(res.status, res.text).toBe(400);
    expect(res.text).toContain("config.model_id");
  });
});

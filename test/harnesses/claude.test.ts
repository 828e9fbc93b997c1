import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/dispatch.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../support/fake-model/server.ts";
import { processesOf, requestText, startHarnessDispatch, testKey } from "./support.ts";

/**
 * Claude Code (the installed @anthropic-ai/claude-code binary) as the `claude` harness, for real: in the
 * run's bubblewrap sandbox, against a loopback Anthropic Messages API that scripts its tool calls, reached
 * only through Dispatch's model gateway. Nothing is skipped: without the binary these tests fail.
 */

const KEY = testKey("anthropic");
const turns: ScriptedTurn[] = [];
let fake: FakeModel;
let d: Awaited<ReturnType<typeof startHarnessDispatch>>;

beforeAll(async () => {
  fake = await startFakeModel(turns);
  d = await startHarnessDispatch({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: fake.baseUrl("anthropic") });
});

afterAll(async () => {
  await d?.stop();
  await fake?.close();
  // No key in any log line of the whole file's runs, nor anywhere in the agents' private areas.
  expect(d.logs.join("")).not.toContain(KEY);
});

/** Scripts the next agent turns (the fake answers requests that offer tools from this queue). */
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
  const res = await d.api("POST", "/api/v1/agent/runs", { prompt, config: { harness: { type: "claude" } } });
  expect(res.status, res.text).toBe(200);
  return res.body.run_id as string;
}

describe("claude harness", () => {
  it("edits a file and runs a command in the sandbox; the transcript and usage say so; the key stays in Dispatch", async () => {
    let runId = "";
    const before = fake.agentRequests().length;
    script(
      {
        text: "Creating hello.txt.",
        calls: [
          {
            name: "Write",
            // Answered once the agent runs, in its workspace.
            input: () => ({
              file_path: join(d.workspace(runId), "hello.txt"),
              content: "hello from claude\n",
            }),
          },
        ],
        usage: { input_tokens: 1000, output_tokens: 50 },
      },
      {
        calls: [
          {
            name: "Bash",
            input: { command: "cat hello.txt && printenv ANTHROPIC_API_KEY", description: "Show the file" },
          },
        ],
        usage: { input_tokens: 1100, output_tokens: 30 },
      },
      { text: "Wrote hello.txt and printed it.", usage: { input_tokens: 1200, output_tokens: 20 } },
    );
    runId = await create("Write hello.txt and show it");
    const run = await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");

    const workspace = d.workspace(runId);
    expect(readFileSync(join(workspace, "hello.txt"), "utf8")).toBe("hello from claude\n");
    const events = await d.events(runId);
    const of = (type: string) => events.filter((e) => e.type === type).map((e) => e.data);
    expect(of("message").map((m) => [m.role, m.text])).toEqual([
      ["user", "Write hello.txt and show it"],
      ["assistant", "Creating hello.txt."],
      ["assistant", "Wrote hello.txt and printed it."],
    ]);
    const calls = of("tool_call");
    expect(calls).toMatchObject([
      { tool: "Write", kind: "file_edit", path: join(workspace, "hello.txt") },
      { tool: "Bash", kind: "command", command: "cat hello.txt && printenv ANTHROPIC_API_KEY" },
    ]);
    const results = of("tool_result");
    expect(results.map((r) => r.call_id)).toEqual(calls.map((c) => c.call_id));
    // The agent's own environment holds a placeholder, never Dispatch's key.
    expect(results[1].output).toContain("hello from claude");
    expect(results[1].output).toContain("dispatch-model-gateway");

    // Claude Code's result usage, summed over its three model calls, is the run's request_usage.
    expect(run.request_usage).toMatchObject({ input_tokens: 3300, output_tokens: 100 });
    expect(of("usage").reduce((n, u) => n + u.input_tokens, 0)).toBe(3300);

    // The fake got Dispatch's key from the gateway, and only that.
    const requests = fake.agentRequests().slice(before);
    expect(requests).toHaveLength(3);
    for (const r of requests) {
      expect(r.headers["x-api-key"]).toBe(KEY);
      expect(r.headers.authorization).toBeUndefined();
    }
    expect(JSON.stringify(events)).not.toContain(KEY);
    expect(await d.agentAreaText(runId)).not.toContain(KEY);
    // The agent's state lives beside the workspace, not in it.
    expect(existsSync(join(workspace, ".claude"))).toBe(false);
  });

  it("hands a live follow-up to the running agent, which takes it in at its next step", async () => {
    const held = gate();
    const before = fake.agentRequests().length;
    script(
      {
        gate: held.promise,
        calls: [{ name: "Bash", input: { command: "echo first", description: "first" } }],
      },
      { text: "Did both." },
    );
    const runId = await create("Say first");
    await waitFor(() => fake.agentRequests().length > before, {
      timeoutMs: 60_000,
      what: "the first model call",
    });
    const sent = await d.api("POST", `/api/v1/agent/runs/${runId}/followups`, { message: "Then say second" });
    expect(sent.status, sent.text).toBeLessThan(300);
    await waitFor(
      async () => (await d.events(runId)).some((e) => e.type === "log" && e.data.phase === "followup"),
      { timeoutMs: 30_000, what: "the follow-up to reach the agent" },
    );
    held.open();
    const run = await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const requests = fake.agentRequests().slice(before);
    expect(requests).toHaveLength(2);
    expect(requestText(requests[1]!.body)).toContain("Then say second");
    const followup = (await d.events(runId)).find((e) => e.type === "followup");
    expect(followup?.data.outcome).toBe("live_session");
  });

  it("resumes the same Claude Code session for a follow-up after the run finished", async () => {
    const before = fake.agentRequests().length;
    script({ text: "The capital is Paris." });
    const runId = await create("What is the capital of France?");
    expect((await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"])).state).toBe("SUCCEEDED");
    const sessions = JSON.parse(readFileSync(join(`${d.workspace(runId)}.agent`, "sessions.json"), "utf8"));
    expect(sessions.claude).toMatch(/^[0-9a-f-]{36}$/);

    script({ text: "About two million people." });
    const sent = await d.api("POST", `/api/v1/agent/runs/${runId}/followups`, {
      message: "How many live there?",
    });
    expect(sent.status, sent.text).toBeLessThan(300);
    await waitFor(async () => fake.agentRequests().length === before + 2, {
      timeoutMs: 60_000,
      what: "the follow-up's model call",
    });
    const run = await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    // The resumed session sends the earlier turns along: the agent kept its context.
    const resumed = requestText(fake.agentRequests()[before + 1]!.body);
    expect(resumed).toContain("What is the capital of France?");
    expect(resumed).toContain("The capital is Paris.");
    expect(resumed).toContain("How many live there?");
    const again = JSON.parse(readFileSync(join(`${d.workspace(runId)}.agent`, "sessions.json"), "utf8"));
    expect(again.claude).toBe(sessions.claude);
    const answers = (await d.events(runId)).filter(
      (e) => e.type === "message" && e.data.role === "assistant",
    );
    expect(answers.map((e) => e.data.text)).toEqual(["The capital is Paris.", "About two million people."]);
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
    expect(processesOf(workspace).some((p) => p.includes("claude"))).toBe(true);
    const res = await d.api("POST", `/api/v1/agent/runs/${runId}/cancel`);
    expect(res.status, res.text).toBe(200);
    expect((await d.state(runId, ["CANCELLED", "SUCCEEDED", "FAILED"])).state).toBe("CANCELLED");
    await waitFor(() => processesOf(workspace).length === 0, { what: "no process of the run left" });
    await waitFor(() => fake.openStreams() === 0, { what: "the model stream to be closed" });
  });

  it("reaches nothing but its model endpoint: other provider paths are refused, other hosts unreachable", async () => {
    const before = fake.agentRequests().length;
    const probe = [
      `curl -s -o /dev/null -w 'models:%{http_code} ' "$ANTHROPIC_BASE_URL/v1/models"`,
      `curl -s -o /dev/null -w 'outside:%{http_code}' --max-time 5 http://1.1.1.1/ || echo 'outside:unreachable'`,
    ].join("; ");
    script(
      { calls: [{ name: "Bash", input: { command: probe, description: "Probe the network" } }] },
      { text: "Probed." },
    );
    const runId = await create("Probe the network");
    const run = await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"]);
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");
    const result = (await d.events(runId)).find((e) => e.type === "tool_result");
    expect(result?.data.output).toContain("models:403");
    expect(result?.data.output).toMatch(/outside:(000|unreachable)/);
    // The refused call never reached the provider.
    expect(fake.requests.filter((r) => r.path === "/v1/models")).toEqual([]);
    expect(fake.agentRequests().length).toBe(before + 2);
  });

  it("stops at the step limit and at the wall-clock limit", async () => {
    const limited = await startHarnessDispatch(
      { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: fake.baseUrl("anthropic") },
      { maxSteps: 2, minuteMs: 1500 },
    );
    try {
      const loop = { calls: [{ name: "Bash", input: { command: "echo again", description: "again" } }] };
      script(loop, loop, loop);
      const res = await limited.api("POST", "/api/v1/agent/runs", {
        prompt: "Loop",
        config: { harness: { type: "claude" } },
      });
      const stepped = await limited.state(res.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);
      expect(stepped.state, JSON.stringify(await limited.events(res.body.run_id))).toBe("FAILED");
      expect(stepped.status_message.message).toContain("step limit");
      // The third call was refused, so the third scripted turn is still waiting: take it back.
      turns.splice(0);

      script({ text: "Slow", stall: true });
      const slow = await limited.api("POST", "/api/v1/agent/runs", {
        prompt: "Be slow",
        config: { harness: { type: "claude" }, max_run_minutes: 1 },
      });
      const timed = await limited.state(slow.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);
      expect(timed.state, JSON.stringify(await limited.events(slow.body.run_id))).toBe("FAILED");
      expect(timed.status_message.message).toContain("max_run_minutes");
      const workspace = limited.workspace(slow.body.run_id);
      await waitFor(() => processesOf(workspace).length === 0, { what: "no process of the run left" });
      expect(limited.logs.join("")).not.toContain(KEY);
    } finally {
      await limited.stop();
    }
  });

  it("refuses a claude run at create when no Anthropic key is configured", async () => {
    const bare = await startHarnessDispatch({});
    try {
      const res = await bare.api("POST", "/api/v1/agent/runs", {
        prompt: "hello",
        config: { harness: { type: "claude" } },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.text).toContain("ANTHROPIC_API_KEY");
    } finally {
      await bare.stop();
    }
  });
});

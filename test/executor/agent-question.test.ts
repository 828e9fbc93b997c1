import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startTestDispatch, type TestDispatch, waitFor, waitForState } from "../support/dispatch.ts";
import { type FakeModel, startFakeModel } from "../support/fake-model/server.ts";

// biome-ignore lint/suspicious/noExplicitAny: API bodies and model requests are asserted field by field
type Json = any;

const ADMIN_KEY = `dsp_${"q".repeat(40)}`;
const MODEL = "openai-compatible/fake-coder";

/**
 * Questions from the agent (docs/runtime.md, "Questions from the agent"): the builtin agent's ask_user
 * ends its turn, the run waits BLOCKED awaiting_input with the question as its status message and holds
 * no executor slot, and a follow-up answers it: the same run continues (on whichever worker claims it,
 * from its checkpoint) with the question and the answer in the model's conversation.
 */
describe("a question from the agent", () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** Dispatch processes' worth of parts, one after the other, sharing one SQLite store (not a data directory). */
  async function workers(model: FakeModel) {
    const shared = await mkdtemp(join(tmpdir(), "dispatch-question-"));
    cleanups.push(() => rm(shared, { recursive: true, force: true }));
    return async (name: string): Promise<TestDispatch> => {
      const t = await startTestDispatch({
        DISPATCH_DATA_DIR: join(shared, name),
        DATABASE_URL: `sqlite:${join(shared, "dispatch.db")}`,
        DISPATCH_ADMIN_API_KEY: ADMIN_KEY,
        DISPATCH_MAX_CONCURRENT_RUNS: "1",
        DISPATCH_POLL_INTERVAL_MS: "100",
        OPENAI_COMPATIBLE_BASE_URL: model.baseUrl("openai"),
      });
      cleanups.push(() => t.stop());
      return t;
    };
  }

  it("waits without a slot, survives a restart, and continues the same run with the answer", async () => {
    const model = await startFakeModel([
      {
        text: "Drafting the notes first.",
        calls: [{ name: "write_file", input: { path: "draft.md", content: "Written before asking.\n" } }],
      },
      { calls: [{ name: "ask_user", input: { question: "Which file?" } }] },
      // The second run, started while the first waits:
      { calls: [{ name: "ask_user", input: { question: "Which branch?" } }] },
      // The first run, answered, on the second worker:
      { calls: [{ name: "shell", input: { command: "cat draft.md" } }] },
      { text: "Added the notes to README.md." },
    ]);
    cleanups.push(() => model.close());
    const start = await workers(model);

    const first = await start("first");
    const asking = await first.api("POST", "/api/v1/agent/runs", {
      prompt: "Add the notes to the right file",
      config: { model_id: MODEL },
    });
    expect(asking.status, asking.text).toBe(200);
    const runId = asking.body.run_id as string;
    const waiting = await waitForState(first, runId, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR"], 30_000);
    expect(waiting.state, JSON.stringify(waiting.status_message)).toBe("BLOCKED");
    expect(waiting.status_message).toMatchObject({ reason: "awaiting_input", message: "Which file?" });

    // Waiting holds no slot: with one, a second run starts, asks and waits too.
    const second = await first.api("POST", "/api/v1/agent/runs", {
      prompt: "Push it",
      config: { model_id: MODEL },
    });
    const alsoWaiting = await waitForState(first, second.body.run_id, ["BLOCKED", "FAILED", "ERROR"], 30_000);
    expect(alsoWaiting.status_message).toMatchObject({ reason: "awaiting_input", message: "Which branch?" });
    // (The executor lets go of a run once its execution has wound down, just after the state changed.)
    await waitFor(() => first.dispatch.executor!.activeRuns === 0, { what: "no run holding a slot" });
    expect(model.agentRequests()).toHaveLength(3);
    // Asking ended the turn: the model was not called again, the agent did nothing more.
    const beforeAnswer = await events(first, runId);
    const blockedAt = beforeAnswer.findIndex((e) => e.type === "state" && e.data.state === "BLOCKED");
    expect(beforeAnswer.slice(blockedAt + 1).filter((e) => e.type !== "log")).toEqual([]);

    await first.stop();
    const next = await start("second");
    expect((await next.api("GET", `/api/v1/agent/runs/${runId}`)).body.state).toBe("BLOCKED");
    const answered = await next.api("POST", `/api/v1/agent/runs/${runId}/followups`, {
      message: "README.md",
    });
    expect(answered.status, answered.text).toBe(200);
    expect(answered.body.outcome).toBe("live_session");
    const done = await waitForState(next, runId, ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"], 60_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");

    // The model's next request has its question, the call's result and then the answer, as the user's message.
    const afterAnswer = model.agentRequests()[3]!.body as Json;
    const messages = afterAnswer.messages as Json[];
    expect(messages.at(-1)).toEqual({ role: "user", content: "README.md" });
    const asked = messages.at(-3);
    expect(asked.role).toBe("assistant");
    expect(asked.tool_calls).toHaveLength(1);
    expect(asked.tool_calls[0].function).toEqual({
      name: "ask_user",
      arguments: JSON.stringify({ question: "Which file?" }),
    });
    expect(messages.at(-2)).toMatchObject({
      role: "tool",
      tool_call_id: asked.tool_calls[0].id,
      content: expect.stringContaining("the answer, which follows as the user's next message"),
    });
    expect(JSON.stringify(messages)).toContain("Add the notes to the right file");

    // One run, one execution: it waited in place, and the workspace came back from its checkpoint.
    const transcript = await events(next, runId);
    expect(transcript.filter((e) => e.type === "state").map((e) => e.data.state)).toEqual([
      "QUEUED",
      "INPROGRESS",
      "BLOCKED",
      "INPROGRESS",
      "SUCCEEDED",
    ]);
    const cat = transcript.findLast((e) => e.type === "tool_result" && e.data.tool === "shell");
    expect(cat?.data.output).toBe("Written before asking.\n");
    expect(done.status_message?.reason).toBeUndefined();
    expect((await next.api("GET", `/api/v1/agent/runs/${second.body.run_id}`)).body.state).toBe("BLOCKED");
  }, 120_000);

  it("takes a follow-up sent while the agent asks as the answer, without waiting", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const model = await startFakeModel([
      { calls: [{ name: "ask_user", input: { question: "Which file?" } }], gate },
      { text: "Used README.md." },
    ]);
    cleanups.push(() => model.close());
    const t = await (await workers(model))("only");
    const created = await t.api("POST", "/api/v1/agent/runs", {
      prompt: "Add the notes",
      config: { model_id: MODEL },
    });
    const runId = created.body.run_id as string;
    await waitFor(() => model.agentRequests().length === 1, { what: "the agent's first model call" });
    const sent = await t.api("POST", `/api/v1/agent/runs/${runId}/followups`, { message: "README.md" });
    expect(sent.status, sent.text).toBe(200);
    release();

    const done = await waitForState(t, runId, ["SUCCEEDED", "BLOCKED", "FAILED", "ERROR"], 30_000);
    expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
    const transcript = await events(t, runId);
    expect(transcript.filter((e) => e.type === "state").map((e) => e.data.state)).not.toContain("BLOCKED");
    // The answer reached the model once, after its question.
    const messages = (model.agentRequests()[1]!.body as Json).messages as Json[];
    expect(messages.at(-1)).toEqual({ role: "user", content: "README.md" });
    expect(messages.at(-2)).toMatchObject({ role: "tool" });
    expect(messages.filter((m) => m.content === "README.md")).toHaveLength(1);
  }, 60_000);
});

async function events(t: TestDispatch, runId: string): Promise<Json[]> {
  const res = await t.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`);
  return res.body.events as Json[];
}

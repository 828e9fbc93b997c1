import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findBwrap } from "../../src/sandbox/bwrap-sandbox.ts";
import { waitFor } from "../support/dispatch.ts";
import {
  type FakeModel,
  type Provider,
  type ScriptedTurn,
  startFakeModel,
} from "../support/fake-model/server.ts";
import { type HarnessDispatch, processesOf, requestText, startHarnessDispatch, testKey } from "./support.ts";

/** Plan mode's read-only workspace is bubblewrap's: without it, that scenario cannot be checked here. */
const bwrapMissing = !("bwrap" in (await findBwrap(undefined)));

type ToolCall = NonNullable<ScriptedTurn["calls"]>[number];
// biome-ignore lint/suspicious/noExplicitAny: transcript events are asserted field by field
type EventData = Record<string, any>;

/** What the shared scenarios need to know of one external agent (its file under test/harnesses/). */
export interface ExternalAgent {
  harness: "claude" | "codex" | "gemini";
  /** The CLI's name as a process shows it (a cancelled run's processes are looked for by it). */
  process: string;
  /** Whose wire format the agent speaks to its model, through Dispatch's gateway. */
  provider: Provider;
  keyVariable: "ANTHROPIC_API_KEY" | "OPENAI_API_KEY" | "GEMINI_API_KEY";
  baseUrlVariable: "ANTHROPIC_BASE_URL" | "OPENAI_BASE_URL" | "GEMINI_BASE_URL";
  /** The model its runs name, when the agent needs one named to act as with a real model. */
  modelId?: string;
  /** A model of another provider: a run of this agent naming it is refused. */
  otherProvidersModel: string;
  /** What the CLI's session ids look like, where the test knows (any id otherwise). */
  sessionId?: RegExp;
  /** The folder the CLI would keep its state in, were it in the workspace. */
  stateFolder: string;
  /** The tool call that writes `content` to a file of the workspace (`path()` is its absolute path). */
  write(path: () => string, content: string): ToolCall;
  /** The tool call that runs a shell command. */
  shell(command: string): ToolCall;
  /** Checks the transcript's tool calls (and their results) of a run that made the write, then the shell call. */
  expectWriteThenShell(calls: EventData[], results: EventData[], file: string, command: string): void;
  /** Checks that a request relayed by the gateway carried Dispatch's key, as this provider takes it. */
  expectKey(headers: Record<string, unknown>, key: string): void;
}

/** What an agent's own tests share with the common scenarios: its fake provider, its Dispatch, its key. */
export interface AgentTest {
  fake: FakeModel;
  d: HarnessDispatch;
  key: string;
  /** The agent's turns still to answer (the fake takes them off the front). */
  turns: ScriptedTurn[];
  /** Dispatch's variables for this agent's provider (to start another Dispatch on the same fake). */
  env(): Record<string, string>;
  /** Scripts the next agent turns. */
  script(...next: ScriptedTurn[]): void;
  /** Creates a run of this agent (its model named; in plan mode when asked) and returns its id. */
  create(prompt: string, mode?: "plan"): Promise<string>;
}

/** A turn's gate: the fake holds the answer until the test opens it. */
export function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/**
 * The scenarios every external agent must pass, for real: the installed CLI in the run's bubblewrap
 * sandbox, against the loopback fake model server, reached only through Dispatch's model gateway. Nothing
 * is skipped: without the CLI these tests fail. `specific` declares the agent's own tests in the same
 * describe block, on the same fake and Dispatch.
 */
export function describeExternalAgent(agent: ExternalAgent, specific: (t: AgentTest) => void = () => {}) {
  const key = testKey(agent.provider);
  const turns: ScriptedTurn[] = [];
  // Started in beforeAll; the tests read them through `t` when they run.
  let fake: FakeModel;
  let d: HarnessDispatch;
  const t: AgentTest = {
    get fake() {
      return fake;
    },
    get d() {
      return d;
    },
    key,
    turns,
    env: () => ({ [agent.keyVariable]: key, [agent.baseUrlVariable]: fake.baseUrl(agent.provider) }),
    script: (...next) => {
      turns.push(...next);
    },
    create: async (prompt, mode) => {
      const res = await d.api("POST", "/api/v1/agent/runs", {
        prompt,
        ...(mode ? { mode } : {}),
        config: { harness: { type: agent.harness }, ...(agent.modelId ? { model_id: agent.modelId } : {}) },
      });
      expect(res.status, res.text).toBe(200);
      return res.body.run_id as string;
    },
  };

  describe(`${agent.harness} harness`, () => {
    beforeAll(async () => {
      fake = await startFakeModel(turns);
      d = await startHarnessDispatch(t.env());
    });

    afterAll(async () => {
      await d?.stop();
      await fake?.close();
      // No key in any log line of the whole file's runs.
      expect(d.logs.join("")).not.toContain(key);
    });

    it("edits a file and runs a command in the sandbox; the transcript and usage say so; the key stays in Dispatch", async () => {
      let runId = "";
      const before = fake.agentRequests().length;
      const command = `cat hello.txt && printenv ${agent.keyVariable}`;
      t.script(
        {
          text: "Creating hello.txt.",
          // The path is known once the run exists: answered then, in its workspace.
          calls: [agent.write(() => join(d.workspace(runId), "hello.txt"), `hello from ${agent.harness}\n`)],
          usage: { input_tokens: 1000, output_tokens: 50 },
        },
        { calls: [agent.shell(command)], usage: { input_tokens: 1100, output_tokens: 30 } },
        { text: "Wrote hello.txt and printed it.", usage: { input_tokens: 1200, output_tokens: 20 } },
      );
      runId = await t.create("Write hello.txt and show it");
      const run = await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"]);
      expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED");

      const workspace = d.workspace(runId);
      expect(readFileSync(join(workspace, "hello.txt"), "utf8")).toBe(`hello from ${agent.harness}\n`);
      const events = await d.events(runId);
      const of = (type: string) => events.filter((e) => e.type === type).map((e) => e.data as EventData);
      expect(of("message").map((m) => [m.role, m.text])).toEqual([
        ["user", "Write hello.txt and show it"],
        ["assistant", "Creating hello.txt."],
        ["assistant", "Wrote hello.txt and printed it."],
      ]);
      const calls = of("tool_call");
      const results = of("tool_result");
      agent.expectWriteThenShell(calls, results, join(workspace, "hello.txt"), command);
      expect(results.map((r) => r.call_id)).toEqual(calls.map((c) => c.call_id));
      expect(results[1]!.output).toContain(`hello from ${agent.harness}`);
      // The agent's own environment holds a placeholder, never Dispatch's key.
      expect(results[1]!.output).toContain("dispatch-model-gateway");

      // The agent's usage, summed over its three model calls, is the run's request_usage.
      expect(run.request_usage).toMatchObject({ input_tokens: 3300, output_tokens: 100 });
      expect(of("usage").reduce((n, u) => n + u.input_tokens, 0)).toBe(3300);

      // The fake got Dispatch's key from the gateway, and only that.
      const requests = fake.agentRequests().slice(before);
      expect(requests).toHaveLength(3);
      for (const r of requests) agent.expectKey(r.headers, key);
      expect(JSON.stringify(events)).not.toContain(key);
      expect(await d.agentAreaText(runId)).not.toContain(key);
      // The agent's state lives beside the workspace, not in it.
      expect(existsSync(join(workspace, agent.stateFolder))).toBe(false);
    });

    it("takes a follow-up sent while it works at its next turn, resuming the same session", async () => {
      const held = gate();
      const before = fake.agentRequests().length;
      t.script({ gate: held.promise, text: "First part done." }, { text: "Second part done." });
      const runId = await t.create("Do the first part");
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

    it("resumes the same session for a follow-up after the run finished", async () => {
      const before = fake.agentRequests().length;
      t.script({ text: "The capital is Paris." });
      const runId = await t.create("What is the capital of France?");
      expect((await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"])).state).toBe("SUCCEEDED");
      const sessionsFile = join(`${d.workspace(runId)}.agent`, "sessions.json");
      const sessions = JSON.parse(readFileSync(sessionsFile, "utf8"));
      expect(sessions[agent.harness]).toBeTruthy();
      if (agent.sessionId) expect(sessions[agent.harness]).toMatch(agent.sessionId);

      t.script({ text: "About two million people." });
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
      // The resumed session sends the earlier turns along: the agent kept its context.
      const resumed = requestText(fake.agentRequests()[before + 1]!.body);
      expect(resumed).toContain("What is the capital of France?");
      expect(resumed).toContain("The capital is Paris.");
      expect(resumed).toContain("How many live there?");
      expect(JSON.parse(readFileSync(sessionsFile, "utf8"))[agent.harness]).toBe(sessions[agent.harness]);
      const answers = (await d.events(runId)).filter(
        (e) => e.type === "message" && e.data.role === "assistant",
      );
      expect(answers.map((e) => e.data.text)).toEqual(["The capital is Paris.", "About two million people."]);
    });

    it.skipIf(bwrapMissing)(
      "in plan mode cannot write the workspace, and its plan waits; after Approve the same session writes",
      async () => {
        let runId = "";
        const before = fake.agentRequests().length;
        const file = () => join(d.workspace(runId), "hello.txt");
        const content = `hello from ${agent.harness}\n`;
        t.script(
          { calls: [agent.write(file, content)] },
          { text: "Plan: write hello.txt." },
          { calls: [agent.write(file, content)] },
          { text: "Wrote hello.txt." },
        );
        runId = await t.create("Write hello.txt", "plan");
        const planned = await d.state(runId, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR"]);
        expect(planned.state, JSON.stringify(planned.status_message)).toBe("BLOCKED");
        expect(planned.status_message).toMatchObject({ reason: "awaiting_approval" });
        // The agent was told to plan, and its write failed in the sandbox: the workspace is as it was.
        expect(requestText(fake.agentRequests()[before]!.body)).toContain(
          "PLAN MODE: do not change any file",
        );
        expect(existsSync(file())).toBe(false);
        const results = async () =>
          (await d.events(runId)).filter((e) => e.type === "tool_result").map((e) => e.data as EventData);
        const [refused] = await results();
        expect(JSON.stringify(refused)).toMatch(/read-only file system|EROFS/i);
        expect(refused).toMatchObject({ error: true });
        const plan = (await d.api("GET", `/api/v1/agent/runs/${runId}`)).body.artifacts.find(
          (a: EventData) => a.artifact_type === "PLAN",
        );
        expect(plan).toBeTruthy();

        const sessionsFile = join(`${d.workspace(runId)}.agent`, "sessions.json");
        const session = JSON.parse(readFileSync(sessionsFile, "utf8"))[agent.harness];
        const approved = await d.api("POST", `/api/v1/agent/runs/${runId}/approve`, { action: "approve" });
        expect(approved.status, approved.text).toBe(200);
        const done = await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"]);
        expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
        expect(readFileSync(file(), "utf8")).toBe(content);
        const after = await results();
        expect(after).toHaveLength(2);
        expect(after[1]!.error).toBeUndefined();
        // The turn after Approve resumed the planning session: it knows its plan.
        expect(requestText(fake.agentRequests()[before + 2]!.body)).toContain("Plan: write hello.txt.");
        expect(JSON.parse(readFileSync(sessionsFile, "utf8"))[agent.harness]).toBe(session);
      },
    );

    it("cancel mid-stream ends the agent and everything it started", async () => {
      const before = fake.agentRequests().length;
      t.script({ text: "Thinking about it at great length", stall: true });
      const runId = await t.create("Take your time");
      await waitFor(() => fake.agentRequests().length > before && fake.openStreams() > 0, {
        timeoutMs: 60_000,
        what: "the model stream to start",
      });
      const workspace = d.workspace(runId);
      expect(processesOf(workspace).some((p) => p.includes(agent.process))).toBe(true);
      const res = await d.api("POST", `/api/v1/agent/runs/${runId}/cancel`);
      expect(res.status, res.text).toBe(200);
      expect((await d.state(runId, ["CANCELLED", "SUCCEEDED", "FAILED"])).state).toBe("CANCELLED");
      await waitFor(() => processesOf(workspace).length === 0, { what: "no process of the run left" });
      await waitFor(() => fake.openStreams() === 0, { what: "the model stream to be closed" });
    });

    it("refuses a run at create when the provider's key is not configured, or for another provider's model", async () => {
      const bare = await startHarnessDispatch({});
      try {
        const res = await bare.api("POST", "/api/v1/agent/runs", {
          prompt: "hello",
          config: { harness: { type: agent.harness } },
        });
        expect(res.status, res.text).toBe(400);
        expect(res.text).toContain(agent.keyVariable);
      } finally {
        await bare.stop();
      }
      const res = await d.api("POST", "/api/v1/agent/runs", {
        prompt: "hello",
        config: { harness: { type: agent.harness }, model_id: agent.otherProvidersModel },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.text).toContain("config.model_id");
    });

    specific(t);
  });
}

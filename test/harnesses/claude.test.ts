import { expect, it } from "vitest";
import { waitFor } from "../support/dispatch.ts";
import { describeExternalAgent, gate } from "./external-agent-suite.ts";
import { processesOf, requestText, startHarnessDispatch } from "./support.ts";

/**
 * Claude Code (the installed @anthropic-ai/claude-code binary) as the `claude` harness, against the fake
 * model server's Anthropic Messages API: the shared scenarios (./external-agent-suite.ts), then what only
 * Claude Code is tested for here.
 */

describeExternalAgent(
  {
    harness: "claude",
    process: "claude",
    provider: "anthropic",
    keyVariable: "ANTHROPIC_API_KEY",
    baseUrlVariable: "ANTHROPIC_BASE_URL",
    otherProvidersModel: "openai/gpt-5",
    stateFolder: ".claude",
    sessionId: /^[0-9a-f-]{36}$/,
    write: (path, content) => ({ name: "Write", input: () => ({ file_path: path(), content }) }),
    shell: (command) => ({ name: "Bash", input: { command, description: "Show the file" } }),
    expectWriteThenShell(calls, _results, file, command) {
      expect(calls).toMatchObject([
        { tool: "Write", kind: "file_edit", path: file },
        { tool: "Bash", kind: "command", command },
      ]);
    },
    expectKey(headers, key) {
      expect(headers["x-api-key"]).toBe(key);
      expect(headers.authorization).toBeUndefined();
    },
  },
  (t) => {
    it("hands a live follow-up to the running agent, which takes it in at its next step", async () => {
      const { d, fake } = t;
      const held = gate();
      const before = fake.agentRequests().length;
      t.script(
        {
          gate: held.promise,
          calls: [{ name: "Bash", input: { command: "echo first", description: "first" } }],
        },
        { text: "Did both." },
      );
      const runId = await t.create("Say first");
      await waitFor(() => fake.agentRequests().length > before, {
        timeoutMs: 60_000,
        what: "the first model call",
      });
      const sent = await d.api("POST", `/api/v1/agent/runs/${runId}/followups`, {
        message: "Then say second",
      });
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

    it("asks the person with AskUserQuestion: the run waits awaiting_input, the answer resumes its session", async () => {
      const { d, fake } = t;
      const before = fake.agentRequests().length;
      const question = {
        question: "Which file should get the notes?",
        header: "File",
        multiSelect: false,
        options: [
          { label: "README.md", description: "The project's front page" },
          { label: "NOTES.md", description: "A new file" },
        ],
      };
      t.script(
        { calls: [{ name: "AskUserQuestion", input: { questions: [question] } }] },
        { text: "I asked which file." },
        // After the answer, in the resumed session:
        { text: "Added the notes to README.md." },
      );
      const runId = await t.create("Add the notes");
      const waiting = await d.state(runId, ["BLOCKED", "SUCCEEDED", "FAILED", "ERROR"]);
      expect(waiting.state, JSON.stringify(waiting.status_message)).toBe("BLOCKED");
      expect(waiting.status_message).toMatchObject({
        reason: "awaiting_input",
        message:
          "Which file should get the notes?\n- README.md: The project's front page\n- NOTES.md: A new file",
      });
      // Headless Claude Code offers the tool only because Dispatch answers its permission requests.
      const asked = fake.agentRequests().slice(before);
      expect((asked[0]!.body.tools as Array<{ name: string }>).map((tool) => tool.name)).toContain(
        "AskUserQuestion",
      );
      expect(requestText(asked[1]!.body)).toContain("the run waits for their answer");

      const answered = await d.api("POST", `/api/v1/agent/runs/${runId}/followups`, { message: "README.md" });
      expect(answered.status, answered.text).toBe(200);
      const done = await d.state(runId, ["SUCCEEDED", "FAILED", "ERROR"]);
      expect(done.state, JSON.stringify(done.status_message)).toBe("SUCCEEDED");
      // The same session went on: its question, the refusal that says the answer follows, then the answer.
      const resumed = fake.agentRequests().slice(before)[2]!.body as { messages: Array<{ role: string }> };
      const said = requestText(resumed);
      expect(said).toContain("Which file should get the notes?");
      expect(said.indexOf("the run waits for their answer")).toBeLessThan(said.lastIndexOf("README.md"));
      expect(resumed.messages.at(-1)!.role).toBe("user");
      expect(JSON.stringify(resumed.messages.at(-1))).toContain("README.md");
      const states = (await d.events(runId)).filter((e) => e.type === "state").map((e) => e.data.state);
      expect(states).toEqual(["QUEUED", "INPROGRESS", "BLOCKED", "INPROGRESS", "SUCCEEDED"]);
    });

    it("reaches nothing but its model endpoint: other provider paths are refused, other hosts unreachable", async () => {
      const { d, fake } = t;
      const before = fake.agentRequests().length;
      const probe = [
        `curl -s -o /dev/null -w 'models:%{http_code} ' "$ANTHROPIC_BASE_URL/v1/models"`,
        `curl -s -o /dev/null -w 'outside:%{http_code}' --max-time 5 http://1.1.1.1/ || echo 'outside:unreachable'`,
      ].join("; ");
      t.script(
        { calls: [{ name: "Bash", input: { command: probe, description: "Probe the network" } }] },
        { text: "Probed." },
      );
      const runId = await t.create("Probe the network");
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
      const limited = await startHarnessDispatch(t.env(), { maxSteps: 2, minuteMs: 1500 });
      try {
        const loop = { calls: [{ name: "Bash", input: { command: "echo again", description: "again" } }] };
        t.script(loop, loop, loop);
        const res = await limited.api("POST", "/api/v1/agent/runs", {
          prompt: "Loop",
          config: { harness: { type: "claude" } },
        });
        const stepped = await limited.state(res.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);
        expect(stepped.state, JSON.stringify(await limited.events(res.body.run_id))).toBe("FAILED");
        expect(stepped.status_message.message).toContain("step limit");
        // The third call was refused, so the third scripted turn is still waiting: take it back.
        t.turns.splice(0);

        t.script({ text: "Slow", stall: true });
        const slow = await limited.api("POST", "/api/v1/agent/runs", {
          prompt: "Be slow",
          config: { harness: { type: "claude" }, max_run_minutes: 1 },
        });
        const timed = await limited.state(slow.body.run_id, ["SUCCEEDED", "FAILED", "ERROR"]);
        expect(timed.state, JSON.stringify(await limited.events(slow.body.run_id))).toBe("FAILED");
        expect(timed.status_message.message).toContain("max_run_minutes");
        const workspace = limited.workspace(slow.body.run_id);
        await waitFor(() => processesOf(workspace).length === 0, { what: "no process of the run left" });
        expect(limited.logs.join("")).not.toContain(t.key);
      } finally {
        await limited.stop();
      }
    });
  },
);

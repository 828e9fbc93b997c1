import { readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { BuiltinHarness } from "../../../src/harnesses/builtin/builtin-harness.ts";
import { configModelResolver } from "../../../src/harnesses/builtin/models.ts";
import type { RunEvent } from "../../../src/model/run.ts";
import { EMPTY_MODELS_CONFIG } from "../../../src/models-config.ts";
import { harnessContext, scriptedModel, type Turn, userTexts } from "./support.ts";

const harnessWith = (turns: Turn[], opts: Partial<ConstructorParameters<typeof BuiltinHarness>[0]> = {}) => {
  const mock = scriptedModel(turns);
  const harness = new BuiltinHarness({
    resolveModel: () => ({ id: "mock/mock-model", model: mock.model }),
    ...opts,
  });
  return { harness, calls: mock.calls };
};
const ofType = (events: RunEvent[], type: string) => events.filter((e) => e.type === type).map((e) => e.data);

describe("builtin harness (harness level, real PlainSandbox)", () => {
  it("runs a multi-step tool loop that edits a file, with transcript events and usage", async () => {
    const { harness, calls } = harnessWith([
      {
        text: "I'll create the file.",
        calls: [{ tool: "write_file", input: { path: "src/app.txt", content: "hello world\n" } }],
      },
      {
        calls: [
          { tool: "edit_file", input: { path: "src/app.txt", old_string: "world", new_string: "dispatch" } },
        ],
      },
      {
        calls: [{ tool: "shell", input: { command: "cat src/app.txt; exit 3" } }],
        usage: { input: 30, output: 7 },
      },
      { text: "Done: greeting updated." },
    ]);
    const t = await harnessContext(["Update the greeting"], { config: { base_prompt: "Be terse." } });
    try {
      const outcome = await harness.run(t.ctx);
      expect(outcome).toEqual({
        status: "succeeded",
        usage: { input_tokens: 60, output_tokens: 22, total_tokens: 82 },
      });
      expect(await readFile(join(t.workspace, "src/app.txt"), "utf8")).toBe("hello dispatch\n");
      expect(ofType(t.events, "tool_call").map((d) => d.tool)).toEqual(["write_file", "edit_file", "shell"]);
      const results = ofType(t.events, "tool_result");
      expect(results[1]).toMatchObject({ tool: "edit_file", output: expect.stringContaining("replaced 1") });
      expect(results[2]).toMatchObject({ tool: "shell", exit_code: 3, output: "hello dispatch\n" });
      expect(ofType(t.events, "tool_call")[2]).toMatchObject({ command: "cat src/app.txt; exit 3" });
      const assistant = ofType(t.events, "message").filter((d) => d.role === "assistant");
      expect(assistant.map((d) => d.text)).toEqual(["I'll create the file.", "Done: greeting updated."]);
      expect(ofType(t.events, "usage")).toHaveLength(4);
      // The system prompt is the base prompt plus the default; tool results reach the model.
      const system = calls[0]!.prompt.find((m) => m.role === "system");
      expect(String(system?.content)).toMatch(/^Be terse\.\n\nYou are a coding agent/);
      expect(JSON.stringify(calls[3]!.prompt)).toContain("[exit code 3]");
      expect(calls[0]!.tools?.map((tool) => tool.name).sort()).toEqual([
        "ask_user",
        "edit_file",
        "list_files",
        "read_file",
        "search_files",
        "shell",
        "update_plan",
        "write_file",
      ]);
    } finally {
      await t.cleanup();
    }
  });

  it("reports tool errors to the model: edit not found / not unique, paths outside the workspace", async () => {
    const { harness, calls } = harnessWith([
      {
        calls: [
          { tool: "edit_file", input: { path: "a.txt", old_string: "zzz", new_string: "y" } },
          { tool: "edit_file", input: { path: "a.txt", old_string: "x", new_string: "y" } },
          { tool: "read_file", input: { path: "../outside.txt" } },
          { tool: "write_file", input: { path: "link/evil.txt", content: "no" } },
          { tool: "read_file", input: { path: "/etc/passwd" } },
        ],
      },
      {
        calls: [
          { tool: "list_files", input: { pattern: "**/*.md" } },
          { tool: "search_files", input: { pattern: "needle", glob: "**/*.md" } },
          { tool: "read_file", input: { path: "docs/b.md", offset: 2, limit: 1 } },
        ],
      },
      { text: "ok" },
    ]);
    const t = await harnessContext(["go"]);
    try {
      await writeFile(join(t.workspace, "a.txt"), "x and x\n");
      await symlink("/tmp", join(t.workspace, "link"));
      await writeFile(join(t.workspace, "readme.txt"), "needle but not md\n");
      const { mkdir } = await import("node:fs/promises");
      await mkdir(join(t.workspace, "docs"));
      await writeFile(join(t.workspace, "docs/b.md"), "line one\nthe needle here\nline three\n");
      expect((await harness.run(t.ctx)).status).toBe("succeeded");
      // Tools of one step run concurrently: order results by their calls.
      const byCall = new Map(ofType(t.events, "tool_result").map((d) => [d.call_id, d]));
      const results = ofType(t.events, "tool_call").map((d) => byCall.get(d.call_id)!);
      const out = results.map((d) => d.output as string);
      expect(out[0]).toMatch(/^error: old_string was not found in a\.txt/);
      expect(out[1]).toMatch(/^error: old_string occurs 2 times/);
      expect(out[2]).toMatch(/^error: .*outside the workspace/);
      expect(out[3]).toMatch(/^error: .*outside the workspace/);
      expect(out[4]).toMatch(/^error: .*outside the workspace/);
      expect(await readFile(join(t.workspace, "a.txt"), "utf8")).toBe("x and x\n");
      expect(out[5]).toBe("docs/b.md");
      expect(out[6]).toBe("docs/b.md:2: the needle here");
      expect(out[7]).toContain("2\tthe needle here");
      expect(out[7]).toContain("[showing lines 2-2 of 3; read on with offset 3]");
      expect(results[0]).toMatchObject({ error: true });
      expect(JSON.stringify(calls[1]!.prompt)).toContain("old_string occurs 2 times");
    } finally {
      await t.cleanup();
    }
  });

  it("caps shell output and says so to the model", async () => {
    const { harness, calls } = harnessWith(
      [{ calls: [{ tool: "shell", input: { command: "seq 1 100000" } }] }, { text: "ok" }],
      { toolLimits: { outputChars: 1000 } },
    );
    const t = await harnessContext(["go"]);
    try {
      await harness.run(t.ctx);
      const result = ofType(t.events, "tool_result")[0]!;
      expect(result.truncated).toBe(true);
      expect(String(result.output)).toContain("[output truncated");
      expect(String(result.output)).toContain("100000");
      expect(JSON.stringify(calls[1]!.prompt)).toContain("output truncated");
    } finally {
      await t.cleanup();
    }
  });

  it("fails at the step limit with a clear message", async () => {
    const loop: Turn = { calls: [{ tool: "shell", input: { command: "true" } }] };
    const { harness } = harnessWith([loop, loop, loop], { maxSteps: 3 });
    const t = await harnessContext(["loop forever"]);
    try {
      const outcome = await harness.run(t.ctx);
      expect(outcome).toMatchObject({ status: "failed", errorCode: "step_limit" });
      expect(outcome.status === "failed" && outcome.message).toContain(
        "stopped after 3 steps (the step limit)",
      );
      expect(outcome.usage).toEqual({ input_tokens: 30, output_tokens: 15, total_tokens: 45 });
    } finally {
      await t.cleanup();
    }
  });

  it("fails at max_run_minutes, killing the running tool", async () => {
    const { harness } = harnessWith(
      [{ calls: [{ tool: "shell", input: { command: "echo $$ > pid; sleep 30" } }] }],
      {
        minuteMs: 400,
      },
    );
    const t = await harnessContext(["slow"], { config: { max_run_minutes: 1 } });
    try {
      const outcome = await harness.run(t.ctx);
      expect(outcome).toMatchObject({ status: "failed", errorCode: "time_limit" });
      expect(outcome.status === "failed" && outcome.message).toContain("max_run_minutes is 1 minute");
      const pid = Number(await readFile(join(t.workspace, "pid"), "utf8"));
      expect(() => process.kill(-pid, 0)).toThrow();
    } finally {
      await t.cleanup();
    }
  });

  it("rebuilds the conversation from the transcript for a follow-up execution", async () => {
    const first = harnessWith([
      { text: "Looking.", calls: [{ tool: "shell", input: { command: "echo hi" } }] },
      { text: "It says hi." },
    ]);
    const t = await harnessContext(["What does echo say?"]);
    try {
      // What the executor writes: the prompt, then the run; later a follow-up to the finished run.
      await t.ctx.emit("message", { role: "user", text: "What does echo say?" });
      await first.harness.run(t.ctx);
      await t.ctx.emit("followup", { message: "Now say bye", outcome: "handoff_execution" });
      const second = harnessWith([{ text: "bye" }]);
      const outcome = await second.harness.run({ ...t.ctx, input: ["Now say bye"] });
      expect(outcome.status).toBe("succeeded");
      // Usage accumulates across executions from the transcript's usage events.
      expect(outcome.usage).toEqual({ input_tokens: 30, output_tokens: 15, total_tokens: 45 });
      const prompt = second.calls[0]!.prompt.filter((m) => m.role !== "system");
      expect(prompt.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user"]);
      expect(userTexts(second.calls[0]!)).toEqual(["What does echo say?", "Now say bye"]);
      expect(JSON.stringify(prompt[2])).toContain("hi\\n");
    } finally {
      await t.cleanup();
    }
  });

  it("delivers follow-ups taken at a step boundary as user messages in the next model call", async () => {
    const { harness, calls } = harnessWith([
      { calls: [{ tool: "shell", input: { command: "true" } }] },
      { text: "Switching to Python as asked." },
    ]);
    const t = await harnessContext(["Write it in Go"], { followups: [["Actually, use Python"]] });
    try {
      expect((await harness.run(t.ctx)).status).toBe("succeeded");
      expect(userTexts(calls[0]!)).toEqual(["Write it in Go"]);
      expect(userTexts(calls[1]!)).toEqual(["Write it in Go", "Actually, use Python"]);
    } finally {
      await t.cleanup();
    }
  });
});

describe("model configuration", () => {
  const resolve = configModelResolver({
    ...EMPTY_MODELS_CONFIG,
    aliases: { fast: "anthropic/claude-haiku-4-5", local: "openai-compatible/qwen" },
  });
  it("fails at once, saying what to configure", async () => {
    const cases: Array<[string | undefined, RegExp]> = [
      ["foo/bar", /unknown model provider "foo".*anthropic\/<model>.*configured aliases: fast, local/],
      ["gpt-5", /neither provider\/model .* nor a configured alias/],
      ["anthropic/claude-sonnet-4-5", /set ANTHROPIC_API_KEY/],
      ["fast", /model "anthropic\/claude-haiku-4-5" needs an Anthropic API key/],
      ["openai/gpt-5", /set OPENAI_API_KEY/],
      ["local", /set OPENAI_COMPATIBLE_BASE_URL \(or models\.openai_compatible\.base_url/],
      [undefined, /No model configured.*DISPATCH_DEFAULT_MODEL/],
    ];
    for (const [id, message] of cases) {
      const harness = new BuiltinHarness({ resolveModel: resolve });
      const t = await harnessContext(["x"], { config: { model_id: id as string } });
      if (id === undefined) delete t.ctx.run.agentConfig.model_id;
      // At once: nothing is tried (no request leaves the process, no step starts) before the error.
      const requests = vi.spyOn(globalThis, "fetch");
      try {
        const outcome = await harness.run(t.ctx);
        expect(outcome.status).toBe("failed");
        expect(outcome.status === "failed" && outcome.message).toMatch(message);
        expect(requests).not.toHaveBeenCalled();
        expect(t.events.map((e) => e.type)).toEqual(["error"]);
        expect(t.events.find((e) => e.type === "error")?.data.message).toMatch(message);
      } finally {
        requests.mockRestore();
        await t.cleanup();
      }
    }
  });

  it("builds provider models when keys are configured", async () => {
    const ok = configModelResolver({
      ...EMPTY_MODELS_CONFIG,
      defaultModel: "fast",
      aliases: { fast: "anthropic/claude-haiku-4-5" },
      anthropic: { apiKey: "k" },
      openai: { apiKey: "k" },
      openaiCompatible: { baseUrl: "http://127.0.0.1:1/v1" },
    });
    expect((await ok(undefined)).id).toBe("anthropic/claude-haiku-4-5");
    expect((await ok("openai/gpt-5")).model.provider).toMatch(/^openai/);
    expect((await ok("openai-compatible/qwen2.5-coder")).model.modelId).toBe("qwen2.5-coder");
  });
});

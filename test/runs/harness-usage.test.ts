import { describe, expect, it } from "vitest";
import type { RunEvent, RunRecord } from "../../src/model/run.ts";
import { harnessUsage } from "../../src/runs/harness-usage.ts";

/** harness-usage.ts: what a Claude Code or Codex run's usage says, and what it leaves out (never a 0). */
const run = (harness: string, models?: RunRecord["requestUsage"]["models"]) =>
  ({
    id: "r1",
    execution: 2,
    updatedAt: "2026-01-01T00:00:00.000Z",
    agentConfig: { harness: { type: harness } },
    requestUsage: { input_tokens: 0, output_tokens: 0, total_tokens: 0, ...(models ? { models } : {}) },
  }) as unknown as RunRecord;

const events: RunEvent[] = [
  { seq: 3, at: "2026-01-01T00:00:01.000Z", type: "tool_call", data: { tool: "Bash" } },
  { seq: 4, at: "2026-01-01T00:00:02.000Z", type: "usage", data: { input_tokens: 10 } },
  { seq: 5, at: "2026-01-01T00:00:03.000Z", type: "tool_call", data: { tool: "Bash" } },
  { seq: 6, at: "2026-01-01T00:00:04.000Z", type: "tool_call", data: { tool: "Read" } },
  { seq: 7, at: "2026-01-01T00:00:05.000Z", type: "usage", data: { input_tokens: 10 } },
];
const models = {
  "anthropic/claude-sonnet-4-5": { input_tokens: 1000, cached_input_tokens: 400, output_tokens: 50 },
};

describe("harness usage", () => {
  it("Claude Code: native categories (cache reads apart), tools by name, partial tokens, no invented cache writes", () => {
    const usage = harnessUsage(run("claude", models), events, Date.parse("2026-01-01T00:00:15.000Z"));
    expect(usage).toEqual({
      run_id: "r1",
      conversation_id: "r1",
      available: true,
      age_seconds: 10,
      usage: {
        harness: "CLAUDE_CODE",
        metricsVersion: 1,
        executionId: 2,
        captureSequence: 7,
        capturedAt: "2026-01-01T00:00:05.000Z",
        snapshot: {
          coverage: { tokenStatus: "partial", toolStatus: "known" },
          payload: {
            usage: { input_tokens: 600, cache_read_input_tokens: 400, output_tokens: 50 },
            attribution: [
              {
                model: "anthropic/claude-sonnet-4-5",
                usage: { input_tokens: 600, cache_read_input_tokens: 400, output_tokens: 50 },
              },
            ],
            toolCalls: { byName: { Bash: 2, Read: 1 }, total: 3 },
          },
        },
      },
    });
  });

  it("Codex: cached input inside input_tokens, with a total", () => {
    const usage = harnessUsage(
      run("codex", { "openai/gpt-5": { input_tokens: 90, cached_input_tokens: 30, output_tokens: 10 } }),
      events,
    );
    expect(usage).toMatchObject({ usage: { harness: "CODEX" } });
    expect("usage" in usage && usage.usage.snapshot.payload.usage).toEqual({
      input_tokens: 90,
      cached_input_tokens: 30,
      output_tokens: 10,
      total_tokens: 100,
    });
  });

  it("is unavailable for other harnesses, and before the agent's first model call", () => {
    expect(harnessUsage(run("builtin", models), events)).toEqual({
      run_id: "r1",
      conversation_id: "r1",
      available: false,
    });
    expect(harnessUsage(run("claude"), events).available).toBe(false);
  });
});

import type { RunEvent, RunRecord } from "../model/run.ts";

/**
 * The Warp Platform API's harness usage of a Claude Code or Codex run (GET /agent/runs/{id}/harness-usage,
 * docs/api.md): the cumulative tokens per model, as Dispatch's model gateway counted the agent's calls
 * (request_usage's per-model breakdown), and its tool calls by name, from the transcript. What Dispatch does
 * not know is left out and said so (`partial`), never reported as 0: the gateway counts cache reads but
 * not cache writes apart (they are input), nor Codex's reasoning tokens. Any other run, or one whose agent
 * has made no model call yet, is `available: false`.
 */

const HARNESSES: Record<string, "CLAUDE_CODE" | "CODEX"> = { claude: "CLAUDE_CODE", codex: "CODEX" };

export function harnessUsage(run: RunRecord, events: readonly RunEvent[], now = Date.now()) {
  const base = { run_id: run.id, conversation_id: run.id };
  const harness = HARNESSES[run.agentConfig.harness?.type ?? ""];
  const models = Object.entries(run.requestUsage.models ?? {});
  if (!harness || models.length === 0) return { ...base, available: false };

  const byName: Record<string, number> = {};
  let last: RunEvent | undefined;
  for (const e of events) {
    if (e.type === "tool_call") {
      const name = String(e.data.tool ?? "tool");
      byName[name] = (byName[name] ?? 0) + 1;
    }
    if (e.type === "usage") last = e;
  }
  const toolCalls = { byName, total: Object.values(byName).reduce((a, b) => a + b, 0) };
  const usageOf = (m: { input_tokens: number; cached_input_tokens: number; output_tokens: number }) =>
    harness === "CLAUDE_CODE"
      ? // Claude's native categories: cache reads are not part of input_tokens.
        {
          input_tokens: m.input_tokens - m.cached_input_tokens,
          cache_read_input_tokens: m.cached_input_tokens,
          output_tokens: m.output_tokens,
        }
      : // Codex's: cached input is part of input_tokens.
        {
          input_tokens: m.input_tokens,
          cached_input_tokens: m.cached_input_tokens,
          output_tokens: m.output_tokens,
          total_tokens: m.input_tokens + m.output_tokens,
        };
  const total = models.reduce(
    (sum, [, m]) => ({
      input_tokens: sum.input_tokens + m.input_tokens,
      cached_input_tokens: sum.cached_input_tokens + m.cached_input_tokens,
      output_tokens: sum.output_tokens + m.output_tokens,
    }),
    { input_tokens: 0, cached_input_tokens: 0, output_tokens: 0 },
  );
  const capturedAt = last?.at ?? run.updatedAt;
  return {
    ...base,
    available: true,
    age_seconds: Math.max(0, Math.floor((now - Date.parse(capturedAt)) / 1000)),
    usage: {
      harness,
      metricsVersion: 1,
      executionId: run.execution,
      captureSequence: last?.seq ?? 0,
      capturedAt,
      snapshot: {
        coverage: { tokenStatus: "partial", toolStatus: "known" },
        payload: {
          usage: usageOf(total),
          attribution: models.map(([model, m]) => ({ model, usage: usageOf(m) })),
          toolCalls,
        },
      },
    },
  };
}

import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LanguageModelV4CallOptions, LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { MockLanguageModelV4 } from "ai/test";
import type { HarnessContext } from "../../../src/harnesses/harness.ts";
import { createLogger } from "../../../src/log.ts";
import type { AgentConfig, RunEvent, RunEventType, RunRecord } from "../../../src/model/run.ts";
import { PlainSandbox } from "../../../src/sandbox/plain-sandbox.ts";
import type { Sandbox } from "../../../src/sandbox/sandbox.ts";

/** One model turn of a scripted mock: text and/or tool calls, then a finish with usage. */
export interface Turn {
  text?: string;
  calls?: Array<{ tool: string; input: Record<string, unknown> }>;
  usage?: { input: number; output: number };
  /** Default: "tool-calls" when there are calls, else "stop". */
  finish?: "stop" | "tool-calls" | "length";
}

let callCounter = 0;

export function streamParts(turn: Turn): LanguageModelV4StreamPart[] {
  const parts: LanguageModelV4StreamPart[] = [{ type: "stream-start", warnings: [] }];
  if (turn.text) {
    parts.push({ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: turn.text });
    parts.push({ type: "text-end", id: "t" });
  }
  for (const call of turn.calls ?? []) {
    parts.push({
      type: "tool-call",
      toolCallId: `call_${++callCounter}`,
      toolName: call.tool,
      input: JSON.stringify(call.input),
    });
  }
  const unified = turn.finish ?? (turn.calls?.length ? "tool-calls" : "stop");
  parts.push({
    type: "finish",
    finishReason: { unified, raw: unified },
    usage: {
      inputTokens: {
        total: turn.usage?.input ?? 10,
        noCache: undefined,
        cacheRead: undefined,
        cacheWrite: undefined,
      },
      outputTokens: { total: turn.usage?.output ?? 5, text: undefined, reasoning: undefined },
    },
  });
  return parts;
}

/**
 * A MockLanguageModelV4 that plays `turns` in order (one per model call) and records every call's prompt.
 * `gate` (optional) lets a test hold a turn until it says so.
 */
export function scriptedModel(turns: Array<Turn | (() => Turn | Promise<Turn>)>) {
  const calls: LanguageModelV4CallOptions[] = [];
  let i = 0;
  const model = new MockLanguageModelV4({
    provider: "mock",
    modelId: "mock-model",
    doStream: async (options) => {
      calls.push(options);
      const next = turns[i++];
      if (!next) throw new Error(`the mock model was called ${i} times but has only ${turns.length} turns`);
      const turn = typeof next === "function" ? await next() : next;
      const parts = streamParts(turn);
      return {
        stream: new ReadableStream<LanguageModelV4StreamPart>({
          start(controller) {
            for (const p of parts) controller.enqueue(p);
            controller.close();
          },
        }),
      };
    },
  });
  return { model, calls };
}

/** The text of every user message in a model call's prompt. */
export function userTexts(call: LanguageModelV4CallOptions): string[] {
  return call.prompt
    .filter((m) => m.role === "user")
    .map((m) =>
      (m.content as Array<{ type: string; text?: string }>)
        .filter((p) => p.type === "text")
        .map((p) => p.text)
        .join(""),
    );
}

/**
 * A harness context over a real sandbox (a PlainSandbox unless `sandbox` builds another) in a temporary
 * workspace, with an in-memory transcript.
 */
export async function harnessContext(
  input: string[],
  opts: {
    config?: AgentConfig;
    followups?: string[][];
    signal?: AbortSignal;
    events?: RunEvent[];
    sandbox?: (workspace: string, runId: string) => Sandbox;
  } = {},
) {
  const root = await mkdtemp(join(tmpdir(), "dispatch-builtin-"));
  const workspace = join(root, "ws");
  await mkdir(workspace);
  const events: RunEvent[] = opts.events ?? [];
  const followups = [...(opts.followups ?? [])];
  const run = {
    id: "run-test",
    execution: 1,
    agentConfig: { model_id: "mock/mock-model", harness: { type: "builtin" }, ...opts.config },
  } as unknown as RunRecord;
  const ctx: HarnessContext = {
    run,
    workspace,
    sandbox: opts.sandbox ? opts.sandbox(workspace, run.id) : new PlainSandbox(workspace, run.id),
    input,
    signal: opts.signal ?? new AbortController().signal,
    emit: async (type: RunEventType, data: Record<string, unknown>) => {
      events.push({ seq: events.length + 1, at: new Date().toISOString(), type, data });
    },
    takeFollowups: async () => followups.shift() ?? [],
    transcript: async () => [...events],
    log: createLogger("silent"),
  };
  return { ctx, events, workspace, cleanup: () => rm(root, { recursive: true, force: true }) };
}

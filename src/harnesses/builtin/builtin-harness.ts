import { randomBytes } from "node:crypto";
import {
  experimental_createSteering,
  isStepCount,
  type LanguageModelUsage,
  streamText,
  type ToolSet,
} from "ai";
import type { TokenCount } from "../../model/pricing.ts";
import type { RequestUsage } from "../../model/run.ts";
import type { Harness, HarnessContext, HarnessOutcome } from "../harness.ts";
import { PLAN_INSTRUCTION, planModeTools, planTurnSandbox } from "../plan-mode.ts";
import { historyFromTranscript, usageFromTranscript } from "./history.ts";
import { connectMcpServers, type McpConnection, McpStartError } from "./mcp.ts";
import { ModelCallSpans, tracedTools } from "./model-call-spans.ts";
import { ModelConfigError, type ModelResolver, type ResolvedModel } from "./models.ts";
import { AskedQuestions } from "./tools/ask-user.ts";
import { createTools } from "./tools/create-tools.ts";
import type { ToolLimits } from "./tools/tool-context.ts";
import type { ToolOutput } from "./tools/tool-output.ts";
import { noteEvent, TurnImages } from "./turn-images.ts";

export interface BuiltinHarnessOptions {
  /** model_id → model; built from server configuration, injected in tests. */
  resolveModel: ModelResolver;
  /** Model calls per execution before the run fails (default 100). */
  maxSteps?: number;
  /** Wall-clock limit when the run sets no max_run_minutes (default 30). */
  defaultMaxRunMinutes?: number;
  /** Length of a "minute" for max_run_minutes: tests shrink it. */
  minuteMs?: number;
  toolLimits?: Partial<ToolLimits>;
  mcpStartTimeoutMs?: number;
  /** `url` MCP servers runs may use (`mcp.allowed_urls`); none when absent. */
  mcpAllowedUrls?: readonly string[];
  /** Retries of a failed model call (rate limits, 5xx); default 2. */
  maxRetries?: number;
}

export const DEFAULT_MAX_STEPS = 100;
export const DEFAULT_MAX_RUN_MINUTES = 30;

const DEFAULT_SYSTEM = `You are a coding agent working in a sandboxed workspace: a directory that holds the \
task's files (the current directory of every command). Use the tools to inspect and change it: shell runs a \
command (no network), read_file / write_file / edit_file work on files, list_files and search_files find \
them, update_plan keeps the plan people follow the run by, ask_user asks the person a question and waits \
for the answer (only when you cannot go on well without it). Paths are relative to the workspace; nothing outside it is reachable. Work step by step, check your \
changes (run the tests or the code when there are any), and finish with a short summary of what you did \
and anything left undone.`;

/**
 * The builtin agent: a tool loop on the Vercel AI SDK (`streamText` with tools, a step limit and a
 * wall-clock limit). It writes every assistant message, tool call and tool result to the transcript,
 * steers with follow-ups taken at each step boundary, records token usage, and stops (model call and tool
 * processes) when the run's signal aborts.
 */
export class BuiltinHarness implements Harness {
  readonly type = "builtin";
  private readonly opts: BuiltinHarnessOptions;

  constructor(opts: BuiltinHarnessOptions) {
    this.opts = opts;
  }

  async run(ctx: HarnessContext): Promise<HarnessOutcome> {
    const config = ctx.run.agentConfig;
    const events = (await ctx.transcript?.()) ?? [];
    const priorUsage = usageFromTranscript(events);

    let resolved: ResolvedModel;
    try {
      resolved = await this.opts.resolveModel(config.model_id);
    } catch (err) {
      const code = err instanceof ModelConfigError ? err.code : "model_not_configured";
      const message = err instanceof Error ? err.message : String(err);
      await ctx.emit("error", { message, error_code: code });
      return { status: "failed", message, errorCode: code, usage: priorUsage };
    }

    const minutes = config.max_run_minutes ?? this.opts.defaultMaxRunMinutes ?? DEFAULT_MAX_RUN_MINUTES;
    const timeLimit = new AbortController();
    const timer = setTimeout(() => timeLimit.abort("time_limit"), minutes * (this.opts.minuteMs ?? 60_000));
    const signal = AbortSignal.any([ctx.signal, timeLimit.signal]);
    const usage = { ...priorUsage };
    const timedOut = (): HarnessOutcome => ({
      status: "failed",
      message: `The agent ran out of time: max_run_minutes is ${minutes} minute${minutes === 1 ? "" : "s"}; raise config.max_run_minutes or split the task`,
      errorCode: "time_limit",
      usage,
    });

    // Plan mode: every command, file tool and MCP server of this turn sees the workspace read-only.
    const sandbox = await planTurnSandbox(ctx);
    let mcp: McpConnection | undefined;
    try {
      try {
        mcp = await connectMcpServers(config.mcp_servers, {
          sandbox,
          allowedUrls: this.opts.mcpAllowedUrls ?? [],
          signal,
          ...(this.opts.mcpStartTimeoutMs ? { startTimeoutMs: this.opts.mcpStartTimeoutMs } : {}),
        });
      } catch (err) {
        if (ctx.signal.aborted) return { status: "failed", message: "aborted", errorCode: "aborted", usage };
        if (timeLimit.signal.aborted) return timedOut();
        const message = err instanceof Error ? err.message : String(err);
        await ctx.emit("error", {
          message,
          error_code: "mcp_server_failed",
          ...(err instanceof McpStartError ? { server: err.server } : {}),
        });
        return { status: "failed", message, errorCode: "mcp_server_failed", usage };
      }
      const inflight = new Set<Promise<unknown>>();
      const questions = new AskedQuestions();
      const own = createTools({
        sandbox,
        signal,
        questions,
        ...(this.opts.toolLimits ? { limits: this.opts.toolLimits } : {}),
      });
      const tools = tracked(
        tracedTools({ ...(ctx.mode === "plan" ? planModeTools(own) : own), ...mcp.tools }),
        inflight,
      );
      const images = new TurnImages({ vision: resolved.vision === true, modelId: resolved.id });
      images.update((await ctx.attachments?.()) ?? [], events);
      const history = historyFromTranscript(
        events,
        // On a new worker the input is on the transcript already; the agent is told it moved.
        ctx.resume ? [ctx.resume.note] : ctx.input,
        images,
      );
      for (const note of images.takeNotes()) await ctx.emit("log", noteEvent(note, resolved.id));
      try {
        return await this.loop(ctx, resolved, tools, signal, usage, history, images, questions, {
          timedOut: () => (timeLimit.signal.aborted && !ctx.signal.aborted ? timedOut() : undefined),
        });
      } finally {
        // An aborted stream ends before its tools do: wait until their processes are gone (they got the
        // same signal, so this is bounded by the sandbox's kill grace).
        await Promise.allSettled([...inflight]);
      }
    } finally {
      clearTimeout(timer);
      await mcp?.close();
    }
  }

  private async loop(
    ctx: HarnessContext,
    resolved: ResolvedModel,
    tools: ToolSet,
    signal: AbortSignal,
    usage: RequestUsage,
    messages: ReturnType<typeof historyFromTranscript>,
    images: TurnImages,
    questions: AskedQuestions,
    limits: { timedOut: () => HarnessOutcome | undefined },
  ): Promise<HarnessOutcome> {
    const log = ctx.log.child({ component: "builtin-harness" });
    const maxSteps = this.opts.maxSteps ?? DEFAULT_MAX_STEPS;
    const callId = randomBytes(4).toString("hex");
    const steering = experimental_createSteering();
    let stepsDone = 0;

    const base = ctx.run.agentConfig.base_prompt?.trim();
    const system = ctx.mode === "plan" ? `${DEFAULT_SYSTEM}\n\n${PLAN_INSTRUCTION}` : DEFAULT_SYSTEM;
    const result = streamText({
      model: resolved.model,
      instructions: base ? `${base}\n\n${system}` : system,
      messages,
      tools,
      // A question ends the turn at the end of its step: the run waits for the answer.
      stopWhen: [isStepCount(maxSteps), () => questions.any],
      abortSignal: signal,
      maxRetries: this.opts.maxRetries ?? 2,
      experimental_steering: steering,
      onStepEnd: async (ended) => {
        stepsDone++;
        // Charged here, before the SDK starts the next model call (it awaits this callback), so a run that
        // passed its cost limit is stopped (its signal aborts) before spending more. The stream below may
        // read this step's end only after that call has started.
        ctx.cost?.charge(resolved.id, pricedTokens(ended.usage));
        // Step boundary: follow-ups that arrived meanwhile reach the model in the next step. At the last
        // step, or after a question, they stay waiting instead, so the executor hands them to a new turn
        // (after a question, as its answer).
        if (stepsDone >= maxSteps || signal.aborted || questions.any) return;
        const taken = await ctx.takeFollowups();
        // A follow-up may have come with images: they join its message (read only when one arrived).
        if (taken.length > 0 && ctx.attachments) {
          images.update(await ctx.attachments(), (await ctx.transcript?.()) ?? []);
        }
        for (const message of taken) {
          const content = images.byText(message);
          steering
            .steer(typeof content === "string" ? content : { role: "user", content })
            .catch((err: unknown) => log.warn({ err }, "steering a follow-up failed"));
        }
        for (const note of images.takeNotes()) await ctx.emit("log", noteEvent(note, resolved.id));
      },
    });

    const spans = new ModelCallSpans(resolved.id);
    let step = 0;
    let text = "";
    let lastText = "";
    let finishReason: string | undefined;
    let failure: unknown;
    let aborted = false;
    const stepId = () => `${callId}:${step}`;
    const flushText = async () => {
      if (text.trim() !== "") {
        await ctx.emit("message", { role: "assistant", text, step: stepId() });
        lastText = text;
      }
      text = "";
    };

    for await (const part of result.fullStream) {
      switch (part.type) {
        case "start-step":
          text = "";
          lastText = "";
          spans.stepStarted();
          break;
        case "text-delta":
          text += part.text;
          spans.text(part.text);
          break;
        case "tool-call": {
          await flushText();
          const input = part.input as Record<string, unknown> | undefined;
          await ctx.emit("tool_call", {
            tool: part.toolName,
            input: input ?? {},
            call_id: part.toolCallId,
            step: stepId(),
            ...(part.toolName === "shell" && typeof input?.command === "string"
              ? { command: input.command }
              : {}),
          });
          break;
        }
        case "tool-result": {
          const output = part.output as ToolOutput;
          await ctx.emit("tool_result", {
            tool: part.toolName,
            call_id: part.toolCallId,
            step: stepId(),
            ...(typeof output === "object" && output !== null ? output : { output: String(output) }),
          });
          break;
        }
        case "tool-error":
          await ctx.emit("tool_result", {
            tool: part.toolName,
            call_id: part.toolCallId,
            step: stepId(),
            output: `error: ${part.error instanceof Error ? part.error.message : String(part.error)}`,
            error: true,
          });
          break;
        case "finish-step": {
          await flushText();
          finishReason = part.finishReason;
          const used = tokens(part.usage);
          usage.input_tokens += used.input_tokens;
          usage.output_tokens += used.output_tokens;
          usage.total_tokens += used.total_tokens;
          // Charged in onStepEnd; the transcript's usage event says what the step cost.
          const cost = ctx.cost?.price(resolved.id, pricedTokens(part.usage));
          await ctx.emit("usage", {
            ...used,
            model_id: resolved.id,
            ...(cost !== undefined ? { cost_usd: cost } : {}),
            step: stepId(),
          });
          spans.stepFinished(used, part.finishReason, cost);
          step++;
          break;
        }
        case "error":
          failure = part.error;
          spans.failed(part.error);
          break;
        case "abort":
          aborted = true;
          break;
      }
    }
    await flushText();
    spans.end();

    if (aborted || signal.aborted) {
      return limits.timedOut() ?? { status: "failed", message: "aborted", errorCode: "aborted", usage };
    }
    if (failure !== undefined) {
      const message = `The model call failed (${resolved.id}): ${describeError(failure)}`;
      await ctx.emit("error", { message, error_code: "model_error" });
      return { status: "failed", message, errorCode: "model_error", usage };
    }
    if (questions.any) {
      return {
        status: "succeeded",
        usage,
        waitFor: { reason: "awaiting_input", message: questions.message },
      };
    }
    if (finishReason === "tool-calls" && step >= maxSteps) {
      const message = `The agent stopped after ${maxSteps} steps (the step limit) without a final answer; send a follow-up to let it continue`;
      await ctx.emit("error", { message, error_code: "step_limit" });
      return { status: "failed", message, errorCode: "step_limit", usage };
    }
    if (finishReason === "length" && lastText === "") {
      const message = `The model's answer was cut off at its output token limit (${resolved.id})`;
      await ctx.emit("error", { message, error_code: "model_output_limit" });
      return { status: "failed", message, errorCode: "model_output_limit", usage };
    }
    return { status: "succeeded", usage };
  }
}

/** The same tools, with every running execution kept in `inflight` until it settles. */
function tracked(tools: ToolSet, inflight: Set<Promise<unknown>>): ToolSet {
  const out: ToolSet = {};
  for (const [name, t] of Object.entries(tools)) {
    const execute = t.execute;
    if (!execute) {
      out[name] = t;
      continue;
    }
    out[name] = {
      ...t,
      execute: (input: unknown, options: Parameters<typeof execute>[1]) => {
        const running = Promise.resolve(execute(input, options) as PromiseLike<unknown>);
        inflight.add(running);
        void running.then(
          () => inflight.delete(running),
          () => inflight.delete(running),
        );
        return running;
      },
    } as ToolSet[string];
  }
  return out;
}

/** A step's tokens as the price table counts them (cache reads priced apart). */
function pricedTokens(u: LanguageModelUsage | undefined): TokenCount {
  const cached = u?.inputTokenDetails?.cacheReadTokens;
  return { ...tokens(u), ...(cached !== undefined ? { cached_input_tokens: cached } : {}) };
}

function tokens(u: LanguageModelUsage | undefined): RequestUsage {
  const input = u?.inputTokens ?? 0;
  const output = u?.outputTokens ?? 0;
  return { input_tokens: input, output_tokens: output, total_tokens: u?.totalTokens ?? input + output };
}

function describeError(err: unknown): string {
  if (err instanceof Error) {
    const status = (err as { statusCode?: number }).statusCode;
    const cause = (err as { cause?: unknown }).cause;
    let text = err.message;
    if (status) text = `HTTP ${status}: ${text}`;
    if (cause instanceof Error && !text.includes(cause.message)) text += ` (${cause.message})`;
    return text.length > 1000 ? `${text.slice(0, 1000)}…` : text;
  }
  return String(err);
}

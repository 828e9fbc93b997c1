import type { ToolSet } from "ai";
import {
  contentAttribute,
  failed,
  inSpan,
  type Span,
  SpanKind,
  startSpan,
  tracing,
} from "../../telemetry/spans.ts";

/**
 * The builtin agent's spans (docs/runtime.md, "Traces"), named and attributed as OpenTelemetry's GenAI
 * semantic conventions say: one `chat <model>` span per model call (a step) with its tokens and cost,
 * one `execute_tool <tool>` span per tool call. Prompts, outputs and tool arguments are left out unless
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
 */
export class ModelCallSpans {
  private readonly provider: string;
  private readonly model: string;
  private step: Span | undefined;
  private output = "";

  /** `modelId`: `provider/model` as resolved (aliases followed). */
  constructor(modelId: string) {
    const slash = modelId.indexOf("/");
    this.provider = modelId.slice(0, slash);
    this.model = modelId.slice(slash + 1);
  }

  stepStarted(): void {
    if (!tracing.enabled) return;
    this.end();
    this.output = "";
    this.step = startSpan(
      `chat ${this.model}`,
      {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": this.provider,
        "gen_ai.request.model": this.model,
      },
      SpanKind.CLIENT,
    );
  }

  text(delta: string): void {
    if (this.step && tracing.captureContent) this.output += delta;
  }

  stepFinished(
    used: { input_tokens: number; output_tokens: number },
    finishReason: string,
    costUsd?: number,
  ): void {
    const span = this.step;
    if (!span) return;
    span.setAttributes({
      "gen_ai.usage.input_tokens": used.input_tokens,
      "gen_ai.usage.output_tokens": used.output_tokens,
      "gen_ai.response.finish_reasons": [finishReason],
      ...(costUsd !== undefined ? { "dispatch.cost_usd": costUsd } : {}),
      ...(tracing.captureContent && this.output
        ? {
            "gen_ai.output.messages": JSON.stringify([
              { role: "assistant", parts: [{ type: "text", content: contentAttribute(this.output) }] },
            ]),
          }
        : {}),
    });
    this.end();
  }

  /** The model call failed: its span says why. */
  failed(err: unknown): void {
    if (this.step) failed(this.step, err);
    this.end();
  }

  /** Ends a step left open (the call was aborted). */
  end(): void {
    this.step?.end();
    this.step = undefined;
  }
}

/** The same tools, each call in an `execute_tool <name>` span. */
export function tracedTools(tools: ToolSet): ToolSet {
  if (!tracing.enabled) return tools;
  const out: ToolSet = {};
  for (const [name, t] of Object.entries(tools)) {
    const execute = t.execute;
    if (!execute) {
      out[name] = t;
      continue;
    }
    out[name] = {
      ...t,
      execute: (input: unknown, options: Parameters<typeof execute>[1]) =>
        inSpan(
          `execute_tool ${name}`,
          {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": options.toolCallId,
            ...(tracing.captureContent
              ? { "gen_ai.tool.call.arguments": contentAttribute(JSON.stringify(input)) }
              : {}),
          },
          async () => (await execute(input, options)) as unknown,
          (result, span) => {
            if (tracing.captureContent) {
              span.setAttribute("gen_ai.tool.call.result", contentAttribute(JSON.stringify(result)));
            }
          },
        ),
    } as ToolSet[string];
  }
  return out;
}

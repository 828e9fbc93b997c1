import type { TokenCount } from "../../model/pricing.ts";

/** The wire dialects whose responses the model gateway reads usage from. */
export type UsageDialect = "anthropic" | "openai" | "gemini";

/** One model call as the provider answered it: the model that served it and what it billed. */
export interface ObservedCall extends TokenCount {
  /** The provider's model name (`claude-sonnet-4-5-20250929`), when the response or path says it. */
  model: string | undefined;
}

/** More than this of a non-streamed answer (or of one event line) is not read for usage. */
const MAX_BUFFER = 16 * 2 ** 20;

/**
 * Reads the token usage out of one provider response as it streams by (the model gateway relays it
 * unchanged): Anthropic Messages (message_start and message_delta usage), OpenAI Responses and Chat
 * Completions (`usage` of the final response object) and the Gemini API (`usageMetadata`, cumulative per
 * chunk); event streams and single JSON answers alike. The last value of each count wins, since every one
 * of these reports running totals. Its counts follow the providers' billing: input includes cached input.
 */
export class ResponseUsage {
  private readonly dialect: UsageDialect;
  private readonly stream: boolean;
  private buffer = "";
  private overflow = false;
  private model: string | undefined;
  private readonly counts: Record<string, number> = {};

  /** `path`: the request path (Gemini names the model there); `contentType` of the response. */
  constructor(dialect: UsageDialect, path: string, contentType: string | undefined) {
    this.dialect = dialect;
    this.stream = /text\/event-stream/i.test(contentType ?? "");
    this.model = /\/models\/([^/:]+):/.exec(decodeURIComponent(path))?.[1];
  }

  push(chunk: string): void {
    if (this.overflow) return;
    this.buffer += chunk;
    if (this.stream) {
      const lines = this.buffer.split("\n");
      this.buffer = lines.pop() ?? "";
      for (const line of lines) this.line(line);
    }
    if (this.buffer.length > MAX_BUFFER) {
      this.overflow = true;
      this.buffer = "";
    }
  }

  /** The call's usage once the response is over (or cut off); undefined when it reported none. */
  end(): ObservedCall | undefined {
    if (this.stream) this.line(this.buffer);
    else if (!this.overflow) this.json(this.buffer);
    this.buffer = "";
    return this.result();
  }

  private line(line: string): void {
    const text = line.trim();
    if (text.startsWith("data:")) this.json(text.slice(5));
  }

  private json(text: string): void {
    if (!text.trim()) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return; // `[DONE]`, a partial line of a cut-off stream: nothing to count
    }
    for (const item of Array.isArray(value) ? value : [value]) this.visit(item);
  }

  private visit(value: unknown): void {
    if (!isObject(value)) return;
    // Anthropic's first event wraps the message; OpenAI Responses' events wrap the response object.
    if (isObject(value.message)) this.visit(value.message);
    if (isObject(value.response)) this.visit(value.response);
    if (typeof value.model === "string") this.model = value.model;
    if (typeof value.modelVersion === "string") this.model = value.modelVersion;
    if (isObject(value.usage)) this.take(value.usage);
    if (isObject(value.usageMetadata)) this.take(value.usageMetadata);
  }

  private take(usage: Record<string, unknown>): void {
    for (const [key, v] of Object.entries(usage)) {
      if (typeof v === "number" && Number.isFinite(v)) this.counts[key] = v;
      if (isObject(v)) {
        for (const [inner, n] of Object.entries(v)) {
          if (typeof n === "number" && Number.isFinite(n)) this.counts[`${key}.${inner}`] = n;
        }
      }
    }
  }

  private result(): ObservedCall | undefined {
    const c = (key: string) => this.counts[key] ?? 0;
    if (Object.keys(this.counts).length === 0) return undefined;
    switch (this.dialect) {
      case "anthropic":
        // input_tokens leaves out what was written to and read from the prompt cache.
        return {
          model: this.model,
          input_tokens: c("input_tokens") + c("cache_creation_input_tokens") + c("cache_read_input_tokens"),
          cached_input_tokens: c("cache_read_input_tokens"),
          output_tokens: c("output_tokens"),
        };
      case "openai":
        return {
          model: this.model,
          input_tokens: this.counts.input_tokens ?? c("prompt_tokens"),
          cached_input_tokens:
            this.counts["input_tokens_details.cached_tokens"] ?? c("prompt_tokens_details.cached_tokens"),
          output_tokens: this.counts.output_tokens ?? c("completion_tokens"),
        };
      case "gemini":
        // Thinking tokens are billed as output; tool-use prompt tokens as input.
        return {
          model: this.model,
          input_tokens: c("promptTokenCount") + c("toolUsePromptTokenCount"),
          cached_input_tokens: c("cachedContentTokenCount"),
          output_tokens: c("candidatesTokenCount") + c("thoughtsTokenCount"),
        };
    }
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

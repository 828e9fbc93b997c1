import type { ModelUsage, RequestUsage } from "../model/run.ts";

/** The one usage category Dispatch has: every model call is the agent's own work. */
const CATEGORY = "primary_agent";

const cents = (usd: number) => Math.round(usd * 100 * 1_000_000) / 1_000_000;

/**
 * How a model's calls were reached, in the Warp Platform API's words: a local OpenAI-compatible endpoint
 * is a `custom_endpoint`; every other provider is reached with the operator's own key (`byok`).
 */
function usageTypeOf(modelId: string): "byok" | "custom_endpoint" {
  return modelId.startsWith("openai-compatible/") ? "custom_endpoint" : "byok";
}

/**
 * `request_usage` on the wire (docs/api.md): the token totals and `inference_cost` (USD) Dispatch has
 * always shown, with the Warp Platform API's breakdown: `model_token_usage` per model, and
 * `usage_by_category` in cents when the cost of every model the run called is known. Only the builtin
 * harness's runs have it: an external agent may run provider-side tools (web search) whose cost the model
 * gateway does not see, and a breakdown that leaves them out would be wrong, not partial.
 */
export function wireRequestUsage(usage: RequestUsage, harnessKey: string | undefined) {
  // The optional keys are added one by one, in the wire's order, only when present (as in toRunItem):
  // a conditional spread made and copied a temporary object for each, on every run of every list page.
  const { models, ...wire }: RequestUsage & WireUsageExtras = usage;
  if (wire.inference_cost !== undefined) wire.inference_cost_usd = wire.inference_cost;
  if (!models) return wire;
  const entries = Object.entries(models);
  if (entries.length === 0) return wire;
  wire.model_token_usage = entries.map(([modelId, m]) => ({
    model_id: modelId,
    total_tokens: m.input_tokens + m.output_tokens,
    usage_type: usageTypeOf(modelId),
    tokens_by_category: { [CATEGORY]: m.input_tokens + m.output_tokens },
  }));
  if (harnessKey === "builtin" && entries.every(([, m]) => m.cost)) {
    wire.usage_by_category = { [CATEGORY]: byCategory(entries) };
  }
  return wire;
}

/** What the wire adds to the stored usage (wireRequestUsage). */
interface WireUsageExtras {
  inference_cost_usd?: number;
  model_token_usage?: Array<{
    model_id: string;
    total_tokens: number;
    usage_type: "byok" | "custom_endpoint";
    tokens_by_category: Record<string, number>;
  }>;
  usage_by_category?: Record<string, ReturnType<typeof byCategory>>;
}

function byCategory(entries: Array<[string, ModelUsage]>) {
  const byType: Record<"byok" | "custom_endpoint", Record<string, unknown>> = {
    byok: {},
    custom_endpoint: {},
  };
  for (const [modelId, m] of entries) {
    const cost = m.cost!;
    byType[usageTypeOf(modelId)][modelId] = {
      // Prompt-cache writes are counted (and priced) as plain input (model/pricing.ts).
      token_count: {
        input: m.input_tokens - m.cached_input_tokens,
        input_cache_read: m.cached_input_tokens,
        input_cache_write: 0,
        output: m.output_tokens,
      },
      cost_in_cents: {
        input_cost_in_cents: cents(cost.input),
        input_cache_read_cost_in_cents: cents(cost.cached_input),
        input_cache_write_cost_in_cents: 0,
        output_cost_in_cents: cents(cost.output),
      },
      // The builtin harness has no web search tool.
      web_search_count: 0,
      web_search_cost_in_cents: 0,
    };
  }
  return {
    // Dispatch charges nothing of its own.
    platform_usage_in_cents: 0,
    ...(Object.keys(byType.byok).length ? { byok_inference_usage: byType.byok } : {}),
    ...(Object.keys(byType.custom_endpoint).length
      ? { custom_endpoint_inference_usage: byType.custom_endpoint }
      : {}),
  };
}

/**
 * What a run's model calls cost, in US dollars: a price per million tokens for each model Dispatch knows
 * (`provider/model`, as config.model_id names it), with defaults for the providers Dispatch reaches and the
 * operator's `prices:` of dispatch.config.yaml on top. A model without a price has no cost: Dispatch never
 * guesses one, and a run that used such a model has no `inference_cost`.
 */

/** USD per million tokens. `cached_input_per_mtok`: input read from the provider's prompt cache. */
export interface ModelPrice {
  input_per_mtok: number;
  output_per_mtok: number;
  cached_input_per_mtok?: number;
}

export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** One model call's tokens. `input_tokens` counts every input token, cached ones included. */
export interface TokenCount {
  input_tokens: number;
  output_tokens: number;
  /** Of `input_tokens`, those read from the prompt cache (priced at `cached_input_per_mtok`). */
  cached_input_tokens?: number;
}

const price = (input: number, output: number, cached?: number): ModelPrice => ({
  input_per_mtok: input,
  output_per_mtok: output,
  ...(cached !== undefined ? { cached_input_per_mtok: cached } : {}),
});

/**
 * Defaults only: the providers' public list prices as of 2026 (anthropic.com/pricing,
 * openai.com/api/pricing, ai.google.dev/gemini-api/docs/pricing), standard tier, no batch or regional
 * discounts. Operators with other prices (a negotiated rate, a proxy) set `prices:` in dispatch.config.yaml.
 * Limits of what is counted: Anthropic's prompt-cache writes are priced as plain input (they list at 1.25×
 * input) and Gemini 2.5 Pro's prices are its ≤200k-token-prompt tier.
 */
export const DEFAULT_PRICES: PriceTable = {
  // Anthropic: cache reads at 0.1× input.
  "anthropic/claude-opus-4-5": price(5, 25, 0.5),
  "anthropic/claude-opus-4-1": price(15, 75, 1.5),
  "anthropic/claude-opus-4": price(15, 75, 1.5),
  "anthropic/claude-sonnet-4-5": price(3, 15, 0.3),
  "anthropic/claude-sonnet-4": price(3, 15, 0.3),
  "anthropic/claude-3-7-sonnet": price(3, 15, 0.3),
  "anthropic/claude-haiku-4-5": price(1, 5, 0.1),
  "anthropic/claude-3-5-haiku": price(0.8, 4, 0.08),
  // OpenAI: cached input as listed per model.
  "openai/gpt-5": price(1.25, 10, 0.125),
  "openai/gpt-5-codex": price(1.25, 10, 0.125),
  "openai/gpt-5-mini": price(0.25, 2, 0.025),
  "openai/gpt-5-nano": price(0.05, 0.4, 0.005),
  "openai/gpt-4.1": price(2, 8, 0.5),
  "openai/gpt-4.1-mini": price(0.4, 1.6, 0.1),
  "openai/gpt-4o": price(2.5, 10, 1.25),
  "openai/gpt-4o-mini": price(0.15, 0.6, 0.075),
  "openai/o3": price(2, 8, 0.5),
  "openai/o4-mini": price(1.1, 4.4, 0.275),
  // Google (the Gemini API, `gemini/<model>`): context-cache reads as listed.
  "gemini/gemini-2.5-pro": price(1.25, 10, 0.125),
  "gemini/gemini-2.5-flash": price(0.3, 2.5, 0.03),
  "gemini/gemini-2.5-flash-lite": price(0.1, 0.4, 0.01),
};

/** The defaults with the operator's prices on top (theirs win, model by model). */
export function priceTable(configured: Record<string, ModelPrice> = {}): PriceTable {
  return { ...DEFAULT_PRICES, ...configured };
}

/**
 * The price of `modelId` (`provider/model`): the id as written, else without a dated snapshot suffix
 * (`claude-sonnet-4-5-20250929`, `gpt-5-2025-08-07`: the same model at the same price). `google/` and
 * `gemini/` name the same provider. Undefined when the table has no price for it.
 */
export function priceOf(table: PriceTable, modelId: string | undefined): ModelPrice | undefined {
  if (!modelId) return undefined;
  const id = modelId.replace(/^google\//, "gemini/");
  for (const candidate of [id, withoutSnapshot(id)]) {
    if (Object.hasOwn(table, candidate)) return table[candidate];
  }
  return undefined;
}

/** A model name without its dated snapshot suffix: `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`. */
export function withoutSnapshot(model: string): string {
  return model.replace(/-(\d{8}|\d{4}-\d{2}-\d{2})$/, "");
}

/** What one call's tokens cost at `p`, in USD, by kind of token. */
function costPartsAt(p: ModelPrice, tokens: TokenCount): CostParts {
  const cached = cachedOf(tokens);
  return {
    input: ((tokens.input_tokens - cached) * p.input_per_mtok) / 1_000_000,
    cached_input: (cached * (p.cached_input_per_mtok ?? p.input_per_mtok)) / 1_000_000,
    output: (tokens.output_tokens * p.output_per_mtok) / 1_000_000,
  };
}

/** What one call's tokens cost at `p`, in USD. */
function costAt(p: ModelPrice, tokens: TokenCount): number {
  const parts = costPartsAt(p, tokens);
  return parts.input + parts.cached_input + parts.output;
}

/** Of a call's input tokens, those read from the prompt cache (never more than its input). */
export function cachedOf(tokens: TokenCount): number {
  return Math.min(Math.max(0, tokens.cached_input_tokens ?? 0), tokens.input_tokens);
}

/** A cost in USD by kind of token: non-cached input, cached input, output. */
export interface CostParts {
  input: number;
  cached_input: number;
  output: number;
}

/** What `tokens` of `modelId` cost by kind of token, in USD; undefined when the model has no price. */
export function costPartsOf(
  table: PriceTable,
  modelId: string | undefined,
  tokens: TokenCount,
): CostParts | undefined {
  const p = priceOf(table, modelId);
  return p ? costPartsAt(p, tokens) : undefined;
}

/** What `tokens` of `modelId` cost, in USD; undefined when the model has no price. */
export function costOf(
  table: PriceTable,
  modelId: string | undefined,
  tokens: TokenCount,
): number | undefined {
  const p = priceOf(table, modelId);
  return p ? costAt(p, tokens) : undefined;
}

/** A cost kept to a micro-dollar, so that sums of many small calls do not show float noise. */
export function roundCost(usd: number): number {
  return Math.round(usd * 1_000_000) / 1_000_000;
}

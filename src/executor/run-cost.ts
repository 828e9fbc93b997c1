import { canonicalModelId } from "../harnesses/builtin/models.ts";
import type { CostMeter } from "../harnesses/harness.ts";
import { usdText } from "../model/budget.ts";
import { EXTERNAL_MODEL_PROVIDERS } from "../model/harness-wire.ts";
import {
  cachedOf,
  costOf,
  costPartsOf,
  type PriceTable,
  priceOf,
  roundCost,
  type TokenCount,
} from "../model/pricing.ts";
import type { AgentConfig, ModelUsage, RequestUsage, StatusMessage } from "../model/run.ts";
import type { ModelsConfig } from "../models-config.ts";

const UNNAMED_MODEL = "(unnamed model)";

/**
 * The limit a run's cost is held to: what the run itself may cost under the tightest of its limits
 * (budget-gate.ts), and that limit's words.
 */
export interface CostLimit {
  usd: number;
  /** "its cost limit (config.max_cost_usd)", "the monthly budget of Ada", … */
  name: string;
}

export interface RunCostOptions {
  prices: PriceTable;
  limit: CostLimit | undefined;
  /** The run's usage before this execution (request_usage: cumulative over its executions). */
  before: RequestUsage;
  /** Called once, when the run's cost first passes its limit. */
  onLimitReached(total: number): void;
  /**
   * Called once, when the run under a limit calls (or asks to call) a model without a price: nothing
   * could hold its calls to the limit, so the run ends with `status`.
   */
  onUnpricedUnderLimit(status: StatusMessage): void;
  /** Called once per model without a price when the run has no limit (its calls make its cost unknown). */
  onUnpriced(modelId: string): void;
  /** Called after each priced call with the run's cost so far. */
  onCharge?(total: number): void;
}

/**
 * One run's cost across its executions: what earlier executions cost (their recorded inference_cost) plus
 * each model call of this one, priced as it is made. Unknown as soon as any call used a model without a
 * price, or an earlier execution's cost was unknown: the run then shows no inference_cost, never a guess.
 * Under a cost limit a model without a price counts as over it: the run is stopped rather than left to
 * spend what nobody counts.
 */
export class RunCost implements CostMeter {
  private total: number;
  private known: boolean;
  private charged = false;
  private over = false;
  private readonly unpriced = new Set<string>();
  private readonly opts: RunCostOptions;
  /** Each model's tokens and cost over the run's executions (request_usage's per-model breakdown). */
  private readonly models: Record<string, ModelUsage>;

  constructor(opts: RunCostOptions) {
    this.opts = opts;
    this.models = structuredClone(opts.before.models ?? {});
    const earlier = opts.before.inference_cost;
    this.total = earlier ?? 0;
    // Tokens without a cost were used by an unpriced model (or before costs were recorded).
    this.known = earlier !== undefined || opts.before.total_tokens === 0;
  }

  admit(modelId: string | undefined): string | undefined {
    const { limit } = this.opts;
    if (!limit || priceOf(this.opts.prices, modelId)) return undefined;
    const status = unpricedModel(modelId, limit);
    this.unpricedUnderLimit(status);
    return status.message;
  }

  price(modelId: string | undefined, tokens: TokenCount): number | undefined {
    if (tokens.input_tokens === 0 && tokens.output_tokens === 0) return 0;
    const cost = costOf(this.opts.prices, modelId, tokens);
    return cost === undefined ? undefined : roundCost(cost);
  }

  charge(modelId: string | undefined, tokens: TokenCount): number | undefined {
    if (tokens.input_tokens === 0 && tokens.output_tokens === 0) return 0;
    const parts = costPartsOf(this.opts.prices, modelId, tokens); // unrounded: the run's total adds these
    this.count(modelId ?? UNNAMED_MODEL, tokens, parts);
    const cost = parts && parts.input + parts.cached_input + parts.output;
    const { limit } = this.opts;
    if (cost === undefined) {
      this.known = false;
      if (limit) {
        this.unpricedUnderLimit(unpricedModel(modelId, limit));
        return undefined;
      }
      const name = modelId ?? UNNAMED_MODEL;
      if (!this.unpriced.has(name)) {
        this.unpriced.add(name);
        this.opts.onUnpriced(name);
      }
      return undefined;
    }
    this.charged = true;
    this.total += cost;
    this.opts.onCharge?.(this.total);
    if (limit && this.total > limit.usd && !this.over) {
      this.over = true;
      this.opts.onLimitReached(this.total);
    }
    return roundCost(cost);
  }

  /** Adds one call to its model's part of the run's usage. */
  private count(modelId: string, tokens: TokenCount, parts: ReturnType<typeof costPartsOf>): void {
    const model = this.models[modelId] ?? { input_tokens: 0, cached_input_tokens: 0, output_tokens: 0 };
    this.models[modelId] = model;
    model.input_tokens += tokens.input_tokens;
    model.cached_input_tokens += cachedOf(tokens);
    model.output_tokens += tokens.output_tokens;
    if (!parts || model.unpriced) {
      delete model.cost;
      model.unpriced = true;
      return;
    }
    const cost = model.cost ?? { input: 0, cached_input: 0, output: 0 };
    model.cost = {
      input: cost.input + parts.input,
      cached_input: cost.cached_input + parts.cached_input,
      output: cost.output + parts.output,
    };
  }

  private unpricedUnderLimit(status: StatusMessage): void {
    if (this.over) return;
    this.over = true;
    this.opts.onUnpricedUnderLimit(status);
  }

  /** The run's cost so far in USD, or undefined when it is not known. */
  get usd(): number | undefined {
    if (!this.known) return undefined;
    if (!this.charged && this.opts.before.inference_cost === undefined) return undefined;
    return roundCost(this.total);
  }

  /** Whether the run has already spent its limit (no turn of the agent then starts). */
  get spent(): boolean {
    return this.opts.limit !== undefined && this.total >= this.opts.limit.usd;
  }

  /** `usage` with the run's inference_cost (absent when not known) and its per-model breakdown. */
  withCost(usage: RequestUsage): RequestUsage {
    const { inference_cost: _stale, models: _counted, ...tokens } = usage;
    const usd = this.usd;
    const models = Object.keys(this.models).length ? { models: structuredClone(this.models) } : {};
    return usd === undefined ? { ...tokens, ...models } : { ...tokens, inference_cost: usd, ...models };
  }

  /** What was spent so far, for the message of a run stopped at its limit. */
  get spentUsd(): number {
    return this.total;
  }
}

/**
 * The model a run's config calls that has no price (`provider/model`), or undefined: every model it calls
 * has one, or it calls none (the scripted harness), or its model cannot be resolved (the run fails for
 * that reason at execution). An external agent's bare model name is its provider's.
 */
export function unpricedModelOf(
  config: AgentConfig,
  prices: PriceTable,
  models: ModelsConfig,
): string | undefined {
  const harness = config.harness?.type;
  const provider = harness ? EXTERNAL_MODEL_PROVIDERS[harness] : undefined;
  let id: string;
  if (provider) {
    if (!config.model_id) return undefined;
    id = config.model_id.includes("/") ? config.model_id : `${provider}/${config.model_id}`;
  } else if (harness === "builtin") {
    try {
      id = canonicalModelId(config.model_id, models);
    } catch {
      return undefined;
    }
  } else {
    return undefined;
  }
  return priceOf(prices, id) ? undefined : id;
}

/**
 * How a run with a cost limit that called (or asked to call) a model without a price ends: FAILED, reason
 * cost_limit, since nothing could hold that model's calls to the limit.
 */
export function unpricedModel(modelId: string | undefined, limit: CostLimit): StatusMessage {
  return {
    message: `Stopped: model ${modelId ?? UNNAMED_MODEL} has no price on this server, so its calls cannot be counted against ${limit.name} (${usdText(limit.usd)} for this run); use a model with a price, or ask the operator to add one under prices in dispatch.config.yaml`,
    error_code: "cost_limit",
    retryable: false,
  };
}

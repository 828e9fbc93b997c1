import type { Logger } from "pino";
import { canonicalModelId } from "../harnesses/builtin/models.ts";
import type { CostMeter } from "../harnesses/harness.ts";
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
import type { AgentConfig, ModelUsage, RequestUsage, RunRecord, StatusMessage } from "../model/run.ts";
import type { ModelsConfig } from "../models-config.ts";

const UNNAMED_MODEL = "(unnamed model)";

/** Where a run's cost limit comes from: the run's `config.max_cost_usd` or the server's default. */
export interface CostLimit {
  usd: number;
  source: "run" | "server";
}

export interface RunCostOptions {
  prices: PriceTable;
  limit: CostLimit | undefined;
  /** The run's usage before this execution (request_usage: cumulative over its executions). */
  before: RequestUsage;
  /**
   * Called once, when the run first goes over its limit: its cost passed it, or it called (or asked to
   * call) a model without a price. `status` is how the run ends.
   */
  onOverLimit(status: StatusMessage, total: number): void;
  /** Called once per model without a price when the run has no limit (its calls make its cost unknown). */
  onUnpriced(modelId: string): void;
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
    this.overLimit(status);
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
        this.overLimit(unpricedModel(modelId, limit));
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
    if (limit && this.total > limit.usd) this.overLimit(costLimitReached(this.total, limit));
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

  private overLimit(status: StatusMessage): void {
    if (this.over) return;
    this.over = true;
    this.opts.onOverLimit(status, this.total);
  }

  /** The run's cost so far in USD, or undefined when it is not known. */
  get usd(): number | undefined {
    if (!this.known) return undefined;
    if (!this.charged && this.opts.before.inference_cost === undefined) return undefined;
    return roundCost(this.total);
  }

  /** Whether the run has already spent its limit (a follow-up execution then does not start). */
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

/** The limit that applies to a run: its own, else the server's default; none when neither is set. */
export function costLimitOf(
  runLimit: number | undefined,
  serverDefault: number | undefined,
): CostLimit | undefined {
  if (runLimit !== undefined) return { usd: runLimit, source: "run" };
  if (serverDefault !== undefined) return { usd: serverDefault, source: "server" };
  return undefined;
}

/**
 * How a run with a cost limit that called (or asked to call) a model without a price ends: FAILED, reason
 * cost_limit, since nothing could hold that model's calls to the limit.
 */
export function unpricedModel(modelId: string | undefined, limit: CostLimit): StatusMessage {
  const which =
    limit.source === "run" ? "its cost limit" : "the server's default cost limit (DISPATCH_MAX_COST_USD)";
  return {
    message: `Stopped: model ${modelId ?? UNNAMED_MODEL} has no price on this server, so its calls cannot be counted against ${which} of ${usdText(limit.usd)}; use a model with a price, or ask the operator to add one under prices in dispatch.config.yaml`,
    error_code: "cost_limit",
    retryable: false,
  };
}

/** How a run stopped at its cost limit ends: FAILED, reason cost_limit (Oz `budget_exceeded`). */
export function costLimitReached(spentUsd: number, limit: CostLimit): StatusMessage {
  const raise =
    limit.source === "run"
      ? "to go on, start a new run with a higher config.max_cost_usd"
      : "to go on, start a new run with config.max_cost_usd set higher, or ask the operator to raise DISPATCH_MAX_COST_USD";
  const which =
    limit.source === "run" ? "its cost limit" : "the server's default cost limit (DISPATCH_MAX_COST_USD)";
  return {
    message: `Stopped: this run has cost ${usdText(spentUsd)}, over ${which} of ${usdText(limit.usd)}; ${raise}`,
    error_code: "cost_limit",
    retryable: false,
  };
}

/** Dollars with enough digits that a small cost or limit is not shown as $0.00. */
function usdText(usd: number): string {
  if (usd >= 0.01 || usd === 0) return `$${usd.toFixed(2)}`;
  return `$${Number(usd.toPrecision(2))}`;
}

/**
 * The run's cost meter: prices each model call the harness reports, and stops the execution as soon as the
 * run's cost passes its limit (config.max_cost_usd, else the server default), or a run under a limit calls
 * a model without a price. Undefined when the server keeps no prices.
 */
export function meterRunCost(opts: {
  run: Pick<RunRecord, "agentConfig" | "requestUsage">;
  prices?: PriceTable;
  defaultMaxCostUsd?: number;
  signal: AbortSignal;
  log: Logger;
  emit(type: "error" | "log", data: Record<string, unknown>): Promise<void>;
  /** Called once, with the status message the run ends with. */
  onOverLimit(status: StatusMessage): void;
}): RunCost | undefined {
  const { prices, log } = opts;
  if (!prices) return undefined;
  return new RunCost({
    prices,
    limit: costLimitOf(opts.run.agentConfig.max_cost_usd, opts.defaultMaxCostUsd),
    before: opts.run.requestUsage,
    onOverLimit: (status, total) => {
      if (opts.signal.aborted) return;
      log.warn({ costUsd: total, reason: status.message }, "run over its cost limit; stopping it");
      void opts
        .emit("error", { message: status.message, error_code: "cost_limit" })
        .catch((err) => log.warn({ err }, "recording the cost limit in the transcript failed"));
      opts.onOverLimit(status);
    },
    onUnpriced: (modelId) => {
      // A run without a limit: a local model without a price is normal, its cost is only not shown.
      const message = `No price is known for model ${modelId}, so this run's cost is not shown; the operator can add it under prices in dispatch.config.yaml`;
      void opts
        .emit("log", { level: "info", phase: "cost", message })
        .catch((err) => log.warn({ err }, "recording an unpriced model failed"));
    },
  });
}

import { costOf, type PriceTable, roundCost, type TokenCount } from "../model/pricing.ts";
import type { RequestUsage, StatusMessage } from "../model/run.ts";

/** What a harness tells about each model call it made, as soon as it knows the call's tokens. */
export interface CostMeter {
  /**
   * Adds one model call (`modelId` as `provider/model`) to the run's cost and returns what the call cost
   * in USD (undefined: the model has no price). When the run goes over its cost limit, the execution is
   * stopped (its signal aborts) right away.
   */
  charge(modelId: string | undefined, tokens: TokenCount): number | undefined;
  /** What one model call costs in USD, without adding it to the run (undefined: no price). */
  price(modelId: string | undefined, tokens: TokenCount): number | undefined;
}

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
  /** Called once, when the run's cost first passes its limit. */
  onOverLimit(total: number, limit: CostLimit): void;
  /** Called once per model without a price (its calls make the run's cost unknown). */
  onUnpriced(modelId: string): void;
}

/**
 * One run's cost across its executions: what earlier executions cost (their recorded inference_cost) plus
 * each model call of this one, priced as it is made. Unknown as soon as any call used a model without a
 * price, or an earlier execution's cost was unknown: the run then shows no inference_cost, never a guess.
 */
export class RunCost implements CostMeter {
  private total: number;
  private known: boolean;
  private charged = false;
  private over = false;
  private readonly unpriced = new Set<string>();
  private readonly opts: RunCostOptions;

  constructor(opts: RunCostOptions) {
    this.opts = opts;
    const earlier = opts.before.inference_cost;
    this.total = earlier ?? 0;
    // Tokens without a cost were used by an unpriced model (or before costs were recorded).
    this.known = earlier !== undefined || opts.before.total_tokens === 0;
  }

  price(modelId: string | undefined, tokens: TokenCount): number | undefined {
    if (tokens.input_tokens === 0 && tokens.output_tokens === 0) return 0;
    const cost = costOf(this.opts.prices, modelId, tokens);
    return cost === undefined ? undefined : roundCost(cost);
  }

  charge(modelId: string | undefined, tokens: TokenCount): number | undefined {
    if (tokens.input_tokens === 0 && tokens.output_tokens === 0) return 0;
    const cost = costOf(this.opts.prices, modelId, tokens); // unrounded: the run's total adds these
    if (cost === undefined) {
      this.known = false;
      const name = modelId ?? "(unnamed model)";
      if (!this.unpriced.has(name)) {
        this.unpriced.add(name);
        this.opts.onUnpriced(name);
      }
      return undefined;
    }
    this.charged = true;
    this.total += cost;
    const { limit } = this.opts;
    if (limit && !this.over && this.total > limit.usd) {
      this.over = true;
      this.opts.onOverLimit(this.total, limit);
    }
    return roundCost(cost);
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

  /** `usage` with the run's inference_cost (absent when not known). */
  withCost(usage: RequestUsage): RequestUsage {
    const { inference_cost: _stale, ...tokens } = usage;
    const usd = this.usd;
    return usd === undefined ? tokens : { ...tokens, inference_cost: usd };
  }

  /** What was spent so far, for the message of a run stopped at its limit. */
  get spentUsd(): number {
    return this.total;
  }
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

import type { Logger } from "pino";
import type { AttachmentContent } from "../model/attachment.ts";
import { wireHarnessOf } from "../model/harness-wire.ts";
import type { TokenCount } from "../model/pricing.ts";
import type { AgentConfig, RequestUsage, RunEvent, RunEventType, RunRecord } from "../model/run.ts";
import type { RunMode } from "../model/run-mode.ts";
import type { Sandbox } from "../sandbox/sandbox.ts";

/**
 * What runs an agent. The executor owns the run's lifecycle (lease, state, follow-up bookkeeping); a
 * harness only turns input messages into transcript events and an outcome, inside the run's workspace.
 */
export interface Harness {
  readonly type: string;
  run(ctx: HarnessContext): Promise<HarnessOutcome>;
  /**
   * Why this harness cannot run a run with `config` on this server (e.g. "Set ANTHROPIC_API_KEY…"), or
   * undefined when it can. Asked at create, so that the caller hears it then instead of from a failed run.
   */
  availability?(config: AgentConfig): string | undefined;
}

export interface HarnessContext {
  run: RunRecord;
  /** The run's own directory; the agent works here and nowhere else. */
  workspace: string;
  /** Runs the agent's commands (and resolves its file paths) confined to the workspace. */
  sandbox: Sandbox;
  /** What the agent receives for this turn: the prompt on a run's first execution, then follow-ups. */
  input: string[];
  /**
   * Set when this execution continues on a new worker after its old one shut down or was lost
   * (docs/architecture.md, "Runs survive their worker"): `input` is then what the execution had been given
   * before the move, the transcript holds what the agent did with it, and the harness continues from there
   * (its session, its conversation, or the commands not yet done), telling the agent `note`.
   */
  resume?: { reason: NonNullable<RunRecord["resuming"]>; note: string };
  /** `plan`: answer with a plan and change no file (run-mode.ts); `normal` when absent. */
  mode?: RunMode;
  /** Aborted when the run is cancelled, loses its lease or the worker shuts down. */
  signal: AbortSignal;
  /** Appends a transcript event. */
  emit(type: RunEventType, data: Record<string, unknown>): Promise<void>;
  /** Follow-ups that arrived while running; call at every step boundary to steer the agent. */
  takeFollowups(): Promise<string[]>;
  /**
   * The run's whole transcript so far (every execution), oldest first: lets a harness rebuild the
   * conversation for a follow-up execution. Optional so that hand-built contexts in tests need not supply it.
   */
  transcript?(): Promise<RunEvent[]>;
  /**
   * The run's image attachments with their bytes, oldest first (`followupId` null: came with the create),
   * read afresh at each call so follow-ups' images are included. Never written to the workspace. Optional
   * so that hand-built contexts in tests need not supply it.
   */
  attachments?(): Promise<AttachmentContent[]>;
  /**
   * Where the harness reports each model call's tokens as soon as it knows them: prices the run and stops
   * it at its cost limit (the executor's run-cost.ts). Absent when the server keeps no prices (and in hand-built tests).
   */
  cost?: CostMeter;
  log: Logger;
}

export type HarnessOutcome =
  | {
      status: "succeeded";
      usage?: RequestUsage /** The status message (delivery: "PR #12 opened: …"). */;
      message?: string;
      /**
       * The agent's turn ended waiting for a person (an answer to its question, or more budget when the
       * executor stopped it at its limit): the run is BLOCKED with
       * this reason and message (model/run-gates.ts) and continues with the answer, a follow-up.
       */
      waitFor?: { reason: "awaiting_input" | "awaiting_budget"; message: string };
    }
  | { status: "failed"; message: string; errorCode?: string; usage?: RequestUsage };

export class HarnessRegistry {
  private readonly harnesses = new Map<string, Harness>();

  register(harness: Harness): this {
    this.harnesses.set(harness.type, harness);
    return this;
  }

  get(type: string): Harness | undefined {
    return this.harnesses.get(type);
  }

  types(): string[] {
    return [...this.harnesses.keys()];
  }

  /** Why the harness `type` cannot run `config` here (not registered, or its own refusal); undefined when it can. */
  refusal(type: string, config: AgentConfig): string | undefined {
    const harness = this.harnesses.get(type);
    if (!harness) {
      const available = this.types().map((key) => JSON.stringify(wireHarnessOf(key)));
      return `config.harness: harness "${type}" is not available on this server; available: ${available.join(", ")}`;
    }
    return harness.availability?.(config);
  }
}

/** What a harness tells about each model call it made, as soon as it knows the call's tokens. */
export interface CostMeter {
  /**
   * Asked before a model call is made (`modelId` as `provider/model`): why it may not be, or undefined.
   * Under a cost limit a model without a price may not be called, since its calls could not be counted:
   * asking for one stops the execution as over its limit.
   */
  admit(modelId: string | undefined): string | undefined;
  /**
   * Adds one model call (`modelId` as `provider/model`) to the run's cost and returns what the call cost
   * in USD (undefined: the model has no price). When the run goes over its cost limit (or, under a limit,
   * called a model without a price), the execution is stopped (its signal aborts) right away.
   */
  charge(modelId: string | undefined, tokens: TokenCount): number | undefined;
  /** What one model call costs in USD, without adding it to the run (undefined: no price). */
  price(modelId: string | undefined, tokens: TokenCount): number | undefined;
}

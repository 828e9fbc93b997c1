import type { Logger } from "pino";
import type { RequestUsage, RunEvent, RunEventType, RunRecord } from "../model/run.ts";
import type { Sandbox } from "./sandbox.ts";

/**
 * What runs an agent. The executor owns the run's lifecycle (lease, state, follow-up bookkeeping); a
 * harness only turns input messages into transcript events and an outcome, inside the run's workspace.
 */
export interface Harness {
  readonly type: string;
  run(ctx: HarnessContext): Promise<HarnessOutcome>;
}

export interface HarnessContext {
  run: RunRecord;
  /** The run's own directory; the agent works here and nowhere else. */
  workspace: string;
  /** Runs the agent's commands (and resolves its file paths) confined to the workspace. */
  sandbox: Sandbox;
  /** What the agent receives for this turn: the prompt on a run's first execution, then follow-ups. */
  input: string[];
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
  log: Logger;
}

export type HarnessOutcome =
  | {
      status: "succeeded";
      usage?: RequestUsage /** The status message (delivery: "PR #12 opened: …"). */;
      message?: string;
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
}

import type { RunBudget } from "./budget.ts";
import type { PrincipalType } from "./identity.ts";
import type { DeliveryMode } from "./repository.ts";
import type { RunMode } from "./run-mode.ts";
import type { RunState } from "./run-state.ts";
import type { RunSchedule } from "./schedule.ts";

export interface Creator {
  type: PrincipalType;
  uid: string;
  display_name: string;
  email?: string;
}

export interface StatusMessage {
  message: string;
  /**
   * Dispatch's reason (`time_limit`, `command_failed`, `worker_lost`, …). The wire shows it as
   * `status_message.reason`, with Oz's `error_code` derived from it (status-reason.ts).
   */
  error_code?: string;
  retryable?: boolean;
}

export interface McpServerConfig {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  url?: string;
  headers?: Record<string, string>;
}

export interface AgentConfig {
  name?: string;
  model_id?: string;
  base_prompt?: string;
  environment_id?: string;
  skill_spec?: string;
  mcp_servers?: Record<string, McpServerConfig>;
  harness?: { type: string };
  idle_timeout_minutes?: number;
  max_run_minutes?: number;
  /** Dispatch extension: the most the run's model calls may cost, in USD, over all its executions. */
  max_cost_usd?: number;
  /** Dispatch extension (docs/delivery.md): `owner/repo` or a git URL the run works in and delivers to. */
  repository?: string;
  /** The branch the work is based on; the repository's default branch when not given (recorded once known). */
  base_branch?: string;
  /** The branch Dispatch pushes to: `dispatch/…`, or the head branch of the pull request a run works on. */
  branch?: string;
  delivery?: DeliveryMode;
}

export interface Artifact {
  artifact_type: string;
  created_at: string;
  data: Record<string, unknown>;
}

export interface RequestUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  inference_cost?: number;
  /** Per model (`provider/model`), as the run's cost meter counted its calls; absent for older runs. */
  models?: Record<string, ModelUsage>;
}

/** One model's part of a run's usage, over all its executions. */
export interface ModelUsage {
  /** Every input token, cached ones included. */
  input_tokens: number;
  /** Of input_tokens, those read from the provider's prompt cache. */
  cached_input_tokens: number;
  output_tokens: number;
  /** What its calls cost in USD, by kind of token; absent when one of its calls had no price. */
  cost?: { input: number; cached_input: number; output: number };
  /** Set once a call of it had no price: its cost is not known, even if a later call has one. */
  unpriced?: true;
}

/** A run as the store keeps it. Timestamps are RFC 3339 UTC strings with milliseconds. */
export interface RunRecord {
  id: string;
  teamId: string;
  title: string;
  prompt: string;
  state: RunState;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Milliseconds spent in executions that have ended. */
  runTimeMs: number;
  /** Start of the execution under way, if any. */
  executionStartedAt: string | null;
  /** 1 for the first execution; each follow-up handoff adds one. */
  execution: number;
  sessionId: string;
  triggerUrl: string | null;
  source: string;
  creator: Creator;
  agentConfig: AgentConfig;
  agentSkill: { name: string; description?: string; full_path: string } | null;
  statusMessage: StatusMessage | null;
  artifacts: Artifact[];
  requestUsage: RequestUsage;
  metadata: Record<string, string>;
  workerId: string | null;
  leaseExpiresAt: string | null;
  /** Whether the current execution's agent has started (decides recovery after a lost lease). */
  agentStarted: boolean;
  requeueCount: number;
  /**
   * When the run last made progress: its latest transcript event (every state change appends one, so this
   * is never before its latest state change). Appending an event leaves updatedAt alone. model/stall.ts.
   */
  lastEventAt?: string;
  /** The run that spawned this one (Oz's `parent_run_id`, same team); `ancestor_run_id` lists by it. */
  parentRunId?: string | null;
  /** How many times the run was interrupted (its agent's turn stopped); absent when never. */
  interrupts?: number;
  /** The top of the run's tree of parents (Oz's `root_run_id`); absent or null for a run without a parent. */
  rootRunId?: string | null;
  /** How the run's first execution answers (run-mode.ts); a follow-up handoff carries its own mode. */
  mode?: RunMode;
  /** The schedule that fired the run; absent or null for a run asked for directly. */
  schedule?: RunSchedule | null;
  /**
   * Why the run, still INPROGRESS, waits for a worker to resume it (its worker shut down and handed it back,
   * or was lost): set until a worker claims it, and on the record that claim returns. Absent otherwise.
   */
  resuming?: ResumeReason;
  /** How many times the current execution was resumed after its worker was lost; absent when never. */
  resumes?: number;
  /** What the run keeps of its budget (model/budget.ts); absent for a run that never had a limit. */
  budget?: RunBudget;
}

/**
 * Why a run waits for a worker to continue it: its worker was stopped (a deploy) or lost (its lease
 * expired), or the person it waited for answered.
 */
export type ResumeReason = "shutdown" | "worker_lost" | "answered";

export interface FollowupRecord {
  id: string;
  runId: string;
  message: string;
  mode: string;
  outcome: FollowupOutcome;
  createdAt: string;
  deliveredAt: string | null;
  /** The execution that received it, once delivered. */
  deliveredExecution: number | null;
}

/**
 * Where a follow-up went: appended to a QUEUED run's prompt, given to the running agent, queued until the
 * agent of an INPROGRESS run starts (its workspace is still being prepared), or a new execution.
 */
export type FollowupOutcome = "queued_prompt" | "live_session" | "queue_pending" | "handoff_execution";

export const EVENT_TYPES = [
  "state",
  "message",
  "tool_call",
  "tool_result",
  "followup",
  "artifact",
  "usage",
  "error",
  "log",
] as const;
export type RunEventType = (typeof EVENT_TYPES)[number];

export interface RunEvent {
  seq: number;
  at: string;
  type: RunEventType;
  data: Record<string, unknown>;
}

export function nowIso(): string {
  return new Date().toISOString();
}

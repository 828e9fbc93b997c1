import type { RunBudget } from "../model/budget.ts";
import { withoutSecrets } from "../model/config-secrets.ts";
import { wireHarnessOf } from "../model/harness-wire.ts";
import type { AgentConfig, Artifact, Creator, RunRecord } from "../model/run.ts";
import type { RunState } from "../model/run-state.ts";
import { wireStatusMessage } from "../model/status-reason.ts";
import { wireRequestUsage } from "./request-usage-wire.ts";

export interface RunItemOptions {
  /** Cut the prompt (and submitted_prompt) to this many characters (list items). */
  promptLimit?: number;
  /** Follow-ups added to the prompt before the run started (RunService.queuedPrompts): submitted_prompt. */
  queuedPrompts?: readonly string[];
}

/** The RunItem of the API (docs/api.md, openapi.json), as GET responses carry it, in its key order. */
export interface RunItem {
  run_id: string;
  task_id: string;
  title: string;
  prompt: string;
  submitted_prompt?: string;
  state: RunState;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  run_time: string;
  session_id: string;
  session_link: string;
  trigger_url?: string;
  source: string;
  creator: Creator;
  executor: Creator;
  agent_config: ReturnType<typeof wireAgentConfig>;
  agent_skill?: NonNullable<RunRecord["agentSkill"]>;
  status_message?: ReturnType<typeof wireStatusMessage>;
  artifacts: Artifact[];
  request_usage: ReturnType<typeof wireRequestUsage>;
  is_run_type_cancellable: boolean;
  is_sandbox_running: boolean;
  schedule?: { schedule_id: string; schedule_name: string; cron_schedule: string; fire_time: string };
  scope: { type: "Team"; uid: string };
  metadata: Record<string, string>;
  conversation_id: string;
  parent_run_id?: string;
  root_run_id: string;
  execution_location: "REMOTE";
  budget?: ReturnType<typeof wireBudget>;
}

/**
 * The RunItem of `run`. Built key by key in the wire's order, optional keys only when present: an object
 * literal with conditional spreads made a temporary object per optional key, about half of this
 * function's cost on every GET of a run and every run of a list page.
 */
export function toRunItem(run: RunRecord, publicUrl: string, opts: RunItemOptions = {}): RunItem {
  const limit = opts.promptLimit;
  const prompt = cut(run.prompt, limit);
  const item = { run_id: run.id, task_id: run.id, title: run.title, prompt } as RunItem;
  const queued = opts.queuedPrompts;
  if (queued) {
    // Most runs had no follow-up before they started: their submitted prompt is the prompt, already cut.
    item.submitted_prompt =
      queued.length === 0 ? prompt : cut([run.prompt, ...queued].filter((p) => p !== "").join("\n\n"), limit);
  }
  item.state = run.state;
  item.created_at = run.createdAt;
  item.updated_at = run.updatedAt;
  item.started_at = run.startedAt;
  item.finished_at = run.finishedAt;
  item.run_time = isoDuration(runTimeMs(run));
  item.session_id = run.sessionId;
  item.session_link = `${publicUrl}/sessions/${run.sessionId}`;
  if (run.triggerUrl) item.trigger_url = run.triggerUrl;
  item.source = run.source;
  item.creator = run.creator;
  // Dispatch runs the agent for its creator: the executor is the creator (the list's `executor` filter).
  item.executor = run.creator;
  item.agent_config = wireAgentConfig(run.agentConfig);
  if (run.agentSkill) item.agent_skill = run.agentSkill;
  if (run.statusMessage) item.status_message = wireStatusMessage(run.statusMessage);
  item.artifacts = wireArtifacts(run);
  item.request_usage = wireRequestUsage(run.requestUsage, run.agentConfig.harness?.type);
  // Every Dispatch run can be cancelled through the API while it is QUEUED or INPROGRESS.
  item.is_run_type_cancellable = true;
  item.is_sandbox_running = run.state === "INPROGRESS";
  if (run.schedule) {
    item.schedule = {
      schedule_id: run.schedule.scheduleId,
      schedule_name: run.schedule.scheduleName,
      cron_schedule: run.schedule.cronSchedule,
      fire_time: run.schedule.fireTime,
    };
  }
  item.scope = { type: "Team", uid: run.teamId };
  item.metadata = run.metadata;
  // A run is its own conversation: follow-ups (or a create with this conversation_id) continue it.
  item.conversation_id = run.id;
  if (run.parentRunId) item.parent_run_id = run.parentRunId;
  item.root_run_id = run.rootRunId ?? run.id;
  item.execution_location = "REMOTE";
  if (run.budget) item.budget = wireBudget(run.budget);
  return item;
}

/** `text` cut to `limit` characters (UTF-16 code units, as String.slice counts), when there is a limit. */
function cut(text: string, limit: number | undefined): string {
  return limit !== undefined && text.length > limit ? text.slice(0, limit) : text;
}

/** A run's budget on the wire: the pending answer is the executor's business. */
function wireBudget(budget: RunBudget) {
  const { answer: _answer, over_usd: _over, ...shown } = budget;
  return shown;
}

/**
 * The run's artifacts on the wire: as recorded, pull requests with the Warp Platform API's `status`:
 * `merged` or `closed` once the GitHub surface saw it happen (the thread ended), else `unknown` (whether
 * it is still open, or a draft, is GitHub's to say).
 */
function wireArtifacts(run: RunRecord): Artifact[] {
  return run.artifacts.map((a) => {
    if (a.artifact_type !== "PULL_REQUEST") return a;
    const ended = a.data.state === "merged" || a.data.state === "closed" ? a.data.state : undefined;
    return { ...a, data: { ...a.data, status: ended ?? "unknown" } };
  });
}

/**
 * The stored config in its wire form: the harness registry key as Oz's `{type, name}` (harness-wire.ts),
 * and the MCP servers' secret values redacted (config-secrets.ts).
 */
function wireAgentConfig(config: AgentConfig) {
  const { harness, ...rest } = withoutSecrets(config);
  return harness ? { ...rest, harness: wireHarnessOf(harness.type) } : rest;
}

/** Time spent in all executions so far, including the one under way. */
export function runTimeMs(run: RunRecord, now = Date.now()): number {
  const current = run.executionStartedAt ? Math.max(0, now - Date.parse(run.executionStartedAt)) : 0;
  return run.runTimeMs + current;
}

/** ISO-8601 duration: 150500 ms → "PT2M30.5S". */
export function isoDuration(ms: number): string {
  const totalSeconds = Math.floor(ms / 1000);
  const h = Math.floor(totalSeconds / 3600);
  const m = Math.floor((totalSeconds % 3600) / 60);
  const s = totalSeconds % 60;
  const frac = ms % 1000;
  let out = "PT";
  if (h) out += `${h}H`;
  if (m) out += `${m}M`;
  if (s || frac || (!h && !m))
    out += frac ? `${s}.${String(frac).padStart(3, "0").replace(/0+$/, "")}S` : `${s}S`;
  return out;
}

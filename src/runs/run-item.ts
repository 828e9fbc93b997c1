import type { RunBudget } from "../model/budget.ts";
import { withoutSecrets } from "../model/config-secrets.ts";
import { wireHarnessOf } from "../model/harness-wire.ts";
import type { AgentConfig, Artifact, RunRecord } from "../model/run.ts";
import { wireStatusMessage } from "../model/status-reason.ts";
import { wireRequestUsage } from "./request-usage-wire.ts";

export interface RunItemOptions {
  /** Cut the prompt (and submitted_prompt) to this many characters (list items). */
  promptLimit?: number;
  /** Follow-ups added to the prompt before the run started (RunService.queuedPrompts): submitted_prompt. */
  queuedPrompts?: readonly string[];
}

/** The RunItem of the API (docs/api.md, openapi.json), as GET responses carry it. */
export function toRunItem(run: RunRecord, publicUrl: string, opts: RunItemOptions = {}) {
  const cut = (text: string) =>
    opts.promptLimit !== undefined && text.length > opts.promptLimit ? text.slice(0, opts.promptLimit) : text;
  const prompt = cut(run.prompt);
  return {
    run_id: run.id,
    task_id: run.id,
    title: run.title,
    prompt,
    ...(opts.queuedPrompts
      ? { submitted_prompt: cut([run.prompt, ...opts.queuedPrompts].filter((p) => p !== "").join("\n\n")) }
      : {}),
    state: run.state,
    created_at: run.createdAt,
    updated_at: run.updatedAt,
    started_at: run.startedAt,
    finished_at: run.finishedAt,
    run_time: isoDuration(runTimeMs(run)),
    session_id: run.sessionId,
    session_link: `${publicUrl}/sessions/${run.sessionId}`,
    ...(run.triggerUrl ? { trigger_url: run.triggerUrl } : {}),
    source: run.source,
    creator: run.creator,
    // Dispatch runs the agent for its creator: the executor is the creator (the list's `executor` filter).
    executor: run.creator,
    agent_config: wireAgentConfig(run.agentConfig),
    ...(run.agentSkill ? { agent_skill: run.agentSkill } : {}),
    ...(run.statusMessage ? { status_message: wireStatusMessage(run.statusMessage) } : {}),
    artifacts: wireArtifacts(run),
    request_usage: wireRequestUsage(run.requestUsage, run.agentConfig.harness?.type),
    // Every Dispatch run can be cancelled through the API while it is QUEUED or INPROGRESS.
    is_run_type_cancellable: true,
    is_sandbox_running: run.state === "INPROGRESS",
    ...(run.schedule
      ? {
          schedule: {
            schedule_id: run.schedule.scheduleId,
            schedule_name: run.schedule.scheduleName,
            cron_schedule: run.schedule.cronSchedule,
            fire_time: run.schedule.fireTime,
          },
        }
      : {}),
    scope: { type: "Team" as const, uid: run.teamId },
    metadata: run.metadata,
    // A run is its own conversation: follow-ups (or a create with this conversation_id) continue it.
    conversation_id: run.id,
    ...(run.parentRunId ? { parent_run_id: run.parentRunId } : {}),
    root_run_id: run.rootRunId ?? run.id,
    execution_location: "REMOTE" as const,
    ...(run.budget ? { budget: wireBudget(run.budget) } : {}),
  };
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

export type RunItem = ReturnType<typeof toRunItem>;

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

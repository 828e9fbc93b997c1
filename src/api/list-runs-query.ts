import type { z } from "zod";
import { RUN_STATES, type RunState } from "../model/run-state.ts";
import type { ListInput } from "../runs/run-service.ts";
import { gatherBracketed } from "./parse.ts";
import type { ListRunsQuerySchema, TASK_STATUSES } from "./schemas/runs.ts";

/**
 * GET /api/v1/agent/runs's query, read once for the API and for the dashboard (whose URL takes the same
 * filters under the same names).
 */

/** The SDKs' `metadata[key]=value` filters gathered into one `metadata` object (see gatherBracketed). */
export function gatherMetadata(query: unknown): unknown {
  return gatherBracketed(query, "metadata");
}

/**
 * What RunService.list takes for a parsed query. `states` is absent when no state was asked for; a state
 * the API knows from Oz but Dispatch never records is dropped, so it matches nothing.
 */
export function listInputOf(q: z.infer<typeof ListRunsQuerySchema>, defaultLimit: number): ListInput {
  const requested = q.state === undefined ? undefined : ([] as string[]).concat(q.state);
  const states = requested?.filter((s): s is RunState => (RUN_STATES as readonly string[]).includes(s));
  const input: ListInput = {
    limit: q.limit ?? defaultLimit,
    sortBy: q.sort_by ?? "updated_at",
    sortOrder: q.sort_order ?? "desc",
    ...(q.cursor ? { cursor: q.cursor } : {}),
    ...(states ? { states } : {}),
    ...defined({
      name: q.name ?? q.config_name,
      modelId: q.model_id,
      creator: q.creator,
      source: q.source,
      environmentId: q.environment_id,
      skillSpec: q.skill_spec ?? q.skill,
      metadata: q.metadata,
      artifactType: q.artifact_type,
      scheduleId: q.schedule_id,
      ancestorRunId: q.ancestor_run_id,
      executor: q.executor,
      executionLocation: q.execution_location,
      createdAfter: q.created_after,
      createdBefore: q.created_before,
      updatedAfter: q.updated_after,
      q: q.q,
      qRef: q.q === undefined ? undefined : runReferenceOf(q.q),
      taskStatus:
        q.task_status === undefined ? undefined : taskStatusOf(([] as TaskStatus[]).concat(q.task_status)),
    }),
  };
  return input;
}

type TaskStatus = (typeof TASK_STATUSES)[number];

/**
 * The Warp Platform API's task_status in Dispatch's states: `running` is the run or any run below it
 * QUEUED or INPROGRESS; the others are the run's own state (`failed` is FAILED or ERROR; `blocked` is
 * BLOCKED: waiting for a person).
 */
function taskStatusOf(statuses: TaskStatus[]): NonNullable<ListInput["taskStatus"]> {
  const states: Record<TaskStatus, RunState[]> = {
    running: ["QUEUED", "INPROGRESS"],
    failed: ["FAILED", "ERROR"],
    blocked: ["BLOCKED"],
    cancelled: ["CANCELLED"],
    complete: ["SUCCEEDED"],
  };
  return {
    states: [...new Set(statuses.flatMap((s) => states[s]))],
    orActiveBelow: statuses.includes("running"),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The run `q` names when it is a run's id or one of its URLs (the run page `…/runs/{id}`, the session
 * link `…/sessions/{session_id}`, API paths `…/agent/runs/{id}`); undefined for any other text.
 */
export function runReferenceOf(q: string): { runId?: string; sessionId?: string } | undefined {
  const text = q.trim();
  if (UUID.test(text)) return { runId: text.toLowerCase() };
  let path: string;
  try {
    path = new URL(text).pathname;
  } catch {
    return undefined;
  }
  const run = /\/runs\/([0-9a-fA-F-]{36})(?:\/|$)/.exec(path);
  if (run && UUID.test(run[1]!)) return { runId: run[1]!.toLowerCase() };
  const session = /\/sessions\/([A-Za-z0-9_-]{16,64})\/?$/.exec(path);
  return session ? { sessionId: session[1]! } : undefined;
}

function defined<T extends Record<string, unknown>>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

import type { z } from "zod";
import { RUN_STATES, type RunState } from "../model/run-state.ts";
import type { ListInput } from "../runs/run-service.ts";
import { ApiError } from "./problem.ts";
import type { ListRunsQuerySchema } from "./schemas/runs.ts";

/**
 * GET /api/v1/agent/runs's query, read once for the API and for the dashboard (whose URL takes the same
 * filters under the same names).
 */

/**
 * The SDKs send a metadata filter as `metadata[key]=value`, which the query parser keeps as a flat
 * name: those become one `metadata` object, so the schema checks them together (and still names
 * any other parameter it does not know).
 */
export function gatherMetadata(query: unknown): unknown {
  if (query === null || typeof query !== "object") return query;
  const rest: Record<string, unknown> = {};
  let metadata: Record<string, unknown> | undefined;
  for (const [name, value] of Object.entries(query)) {
    const key = /^metadata\[(.*)\]$/s.exec(name)?.[1];
    if (key === undefined) {
      rest[name] = value;
    } else {
      metadata ??= {};
      metadata[key] = value;
    }
  }
  if (metadata && rest.metadata !== undefined) {
    throw new ApiError("invalid_request", "metadata: give filters as metadata[key]=value");
  }
  return metadata ? { ...rest, metadata } : rest;
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
    }),
  };
  return input;
}

function defined<T extends Record<string, unknown>>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

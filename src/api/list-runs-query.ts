import type { z } from "zod";
import { RUN_STATES, type RunState } from "../model/run-state.ts";
import type { ListInput } from "../runs/run-service.ts";
import { gatherBracketed } from "./parse.ts";
import type { ListRunsQuerySchema } from "./schemas/runs.ts";

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
    }),
  };
  return input;
}

function defined<T extends Record<string, unknown>>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

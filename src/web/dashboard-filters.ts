import { ListRunsQuerySchema } from "../api/schemas.ts";
import { RUN_STATES, type RunState } from "../model/run-state.ts";
import type { ListInput } from "../runs/run-service.ts";
import { escapeHtml } from "./html.ts";

/** Runs per page unless the query says `limit`; at most PAGE_RUNS_MAX, so that a page stays under 100 KB. */
export const PAGE_RUNS = 25;
export const PAGE_RUNS_MAX = 100;

/** The query of a dashboard URL, read as GET /api/v1/agent/runs reads it. */
export interface DashboardFilters {
  /** The query as given, without empty fields (links that keep the filters are built from it). */
  raw: Record<string, string | string[]>;
  /** What RunService.list takes. */
  input: ListInput & { cursor?: string };
  states: RunState[];
  /**
   * Whether anything narrows the list beyond paging and order: then a run that changes can only be shown
   * on the first page once the server says it matches (GET /dashboard/rows).
   */
  filtered: boolean;
}

/** Keys that page or order the list without narrowing it. */
const PAGING = new Set(["limit", "cursor", "sort_by", "sort_order"]);

/**
 * The dashboard's filters are the list API's, under the same names (`metadata[key]=value` too), with the
 * same refusals: a filter the API would refuse is a 400 here rather than ignored.
 */
export function parseFilters(query: unknown): DashboardFilters | { problem: string } {
  const raw = nonEmpty(query);
  const { metadata, rest } = gatherMetadata(raw);
  const parsed = ListRunsQuerySchema.safeParse(metadata ? { ...rest, metadata } : rest);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const problem =
      issue?.code === "unrecognized_keys"
        ? `unknown filter ${issue.keys.join(", ")}`
        : `${issue?.path.join(".") || "query"}: ${issue?.message ?? "invalid"}`;
    return { problem };
  }
  const q = parsed.data;
  if (q.limit !== undefined && q.limit > PAGE_RUNS_MAX) {
    return { problem: `limit: at most ${PAGE_RUNS_MAX} runs a page here (the API lists up to 500)` };
  }
  const states = (q.state === undefined ? [] : ([] as string[]).concat(q.state)).filter((s): s is RunState =>
    (RUN_STATES as readonly string[]).includes(s),
  );
  const input: DashboardFilters["input"] = {
    limit: q.limit ?? PAGE_RUNS,
    sortBy: q.sort_by ?? "updated_at",
    sortOrder: q.sort_order ?? "desc",
    ...(q.cursor ? { cursor: q.cursor } : {}),
    // A state the API knows from Oz but Dispatch never records matches nothing, as on the API.
    ...(q.state !== undefined ? { states } : {}),
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
  return { raw, input, states, filtered: Object.keys(raw).some((key) => !PAGING.has(key)) };
}

/** The query without empty fields: an empty search box or "any state" means no filter. */
function nonEmpty(query: unknown): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    const values = ([] as unknown[])
      .concat(value)
      .filter((v): v is string => typeof v === "string" && v.trim() !== "");
    if (values.length === 1) out[key] = values[0]!;
    else if (values.length > 1) out[key] = values;
  }
  return out;
}

/** `metadata[key]=value` fields gathered into one object, as the list route does. */
function gatherMetadata(raw: Record<string, string | string[]>) {
  let metadata: Record<string, string | string[]> | undefined;
  const rest: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries(raw)) {
    const m = /^metadata\[(.+)\]$/.exec(key);
    if (!m) rest[key] = value;
    else {
      metadata ??= {};
      metadata[m[1]!] = value;
    }
  }
  return { metadata, rest };
}

function defined<T extends Record<string, unknown>>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** `?…` for a link that keeps the filters, with `changes` applied (undefined removes a parameter). */
export function linkWith(
  raw: Record<string, string | string[]>,
  changes: Record<string, string | undefined>,
): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(raw)) {
    if (key in changes) continue;
    for (const v of ([] as string[]).concat(value)) params.append(key, v);
  }
  for (const [key, value] of Object.entries(changes)) if (value !== undefined) params.append(key, value);
  const text = params.toString();
  return escapeHtml(text ? `/?${text}` : "/");
}

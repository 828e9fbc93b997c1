import { gatherMetadata, listInputOf } from "../api/list-runs-query.ts";
import { ApiError } from "../api/problem.ts";
import { ListRunsQuerySchema } from "../api/schemas/runs.ts";
import type { RunState } from "../model/run-state.ts";
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
  let gathered: unknown;
  try {
    gathered = gatherMetadata(raw);
  } catch (err) {
    if (err instanceof ApiError) return { problem: err.message };
    throw err;
  }
  const parsed = ListRunsQuerySchema.safeParse(gathered);
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
  const input = listInputOf(q, PAGE_RUNS);
  return {
    raw,
    input,
    states: input.states ?? [],
    filtered: Object.keys(raw).some((key) => !PAGING.has(key)),
  };
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

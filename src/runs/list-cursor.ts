import { RunError } from "../model/errors.ts";
import type { RunRecord } from "../model/run.ts";
import type { SortBy, SortOrder } from "../store/store.ts";

/**
 * The list API's keyset cursor: the sort it was issued for and the sort value and id of the last run of a
 * page, opaque to clients (base64url JSON). A cursor from another sort, or one this API did not issue, is
 * refused in words that say what to do.
 */
interface Cursor {
  s: SortBy;
  o: SortOrder;
  /** Null only under `agent` sorting, after a run without an agent name. */
  v: string | null;
  i: string;
}

function sortValue(sortBy: SortBy, run: RunRecord): string | null {
  switch (sortBy) {
    case "title":
      return run.title;
    case "created_at":
      return run.createdAt;
    case "agent":
      return run.agentConfig.name ?? null;
    default:
      return run.updatedAt;
  }
}

export function encodeCursor(sortBy: SortBy, sortOrder: SortOrder, last: RunRecord): string {
  const value = sortValue(sortBy, last);
  const cursor: Cursor = { s: sortBy, o: sortOrder, v: value, i: last.id };
  return Buffer.from(JSON.stringify(cursor)).toString("base64url");
}

export function decodeCursor(
  raw: string,
  sortBy: SortBy,
  sortOrder: SortOrder,
): { value: string | null; id: string } {
  let cursor: Partial<Cursor>;
  try {
    cursor = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
  } catch {
    throw new RunError(
      "invalid_request",
      "cursor: not a cursor returned by this API; start again without it",
    );
  }
  const nullable = cursor?.s === "agent" && cursor.v === null;
  if ((typeof cursor?.v !== "string" && !nullable) || typeof cursor?.i !== "string") {
    throw new RunError(
      "invalid_request",
      "cursor: not a cursor returned by this API; start again without it",
    );
  }
  if (cursor.s !== sortBy || cursor.o !== sortOrder) {
    throw new RunError(
      "invalid_request",
      `cursor: it was issued for sort_by=${cursor.s}&sort_order=${cursor.o}; repeat the first request's sorting with it`,
    );
  }
  return { value: cursor.v ?? null, id: cursor.i };
}

import type { z } from "zod";
import { ApiError } from "./problem.ts";
import { describeIssues } from "./schemas/common.ts";

/** A JSON object body checked against `schema`; 400 naming the field otherwise. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new ApiError("invalid_request", "body: expected a JSON object");
  }
  return parseWith(schema, body);
}

/**
 * A query string checked against `schema`. Strict schemas name an unknown parameter, so a typo is a
 * 400 rather than a filter silently ignored.
 */
export function parseQuery<S extends z.ZodType>(schema: S, query: unknown): z.output<S> {
  const result = schema.safeParse(query ?? {});
  if (!result.success) {
    const unknown = result.error.issues.flatMap((i) => (i.code === "unrecognized_keys" ? i.keys : []));
    if (unknown.length > 0) {
      throw new ApiError(
        "invalid_request",
        `unknown query parameter${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}; see /api/v1/openapi.json for the ones this route takes`,
      );
    }
    throw new ApiError("invalid_request", describeIssues(result.error));
  }
  return result.data;
}

function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ApiError("invalid_request", describeIssues(result.error));
  return result.data;
}

/**
 * The SDKs send an object parameter as `name[key]=value` (OpenAPI's deepObject style), which the query
 * parser keeps as flat names: those become one `name` object, so the schema checks them together (and
 * still names any other parameter it does not know).
 */
export function gatherBracketed(query: unknown, name: string): unknown {
  if (query === null || typeof query !== "object") return query;
  const rest: Record<string, unknown> = {};
  let gathered: Record<string, unknown> | undefined;
  const prefix = `${name}[`;
  for (const [param, value] of Object.entries(query)) {
    if (param.startsWith(prefix) && param.endsWith("]")) {
      gathered ??= {};
      gathered[param.slice(prefix.length, -1)] = value;
    } else {
      rest[param] = value;
    }
  }
  if (gathered && rest[name] !== undefined) {
    throw new ApiError("invalid_request", `${name}: give filters as ${name}[key]=value`);
  }
  return gathered ? { ...rest, [name]: gathered } : rest;
}

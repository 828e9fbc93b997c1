import { createHash } from "node:crypto";
import { RunError } from "../model/errors.ts";
import type { IdempotencyClaim } from "../store/store.ts";

/** How long an Idempotency-Key is remembered (docs/api.md: 24 hours). */
const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * What the store checks and records for a request sent with an Idempotency-Key: the key of that
 * principal, and a hash of the endpoint and its body (canonical JSON, so key order does not matter), so
 * that a retry replays the first answer and the same key with another request is refused.
 */
export function idempotencyClaim(opts: {
  principalId: string;
  key: string;
  endpoint: string;
  /** The request as parsed JSON. */
  body: unknown;
  respond: (value: unknown) => unknown;
}): IdempotencyClaim {
  return {
    principalId: opts.principalId,
    key: opts.key,
    requestHash: createHash("sha256")
      .update(`${opts.endpoint}\n${canonicalJson(opts.body ?? null)}`)
      .digest("hex"),
    respond: opts.respond,
    notBefore: new Date(Date.now() - IDEMPOTENCY_WINDOW_MS).toISOString(),
  };
}

/** JSON with object keys sorted: equal requests hash equal whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** 422: the key came with another request before. */
export function keyReused(): RunError {
  return new RunError(
    "idempotency_key_reused",
    "this Idempotency-Key was already used with a different request; use a new key for a new request",
  );
}

/** The claim of a request sent with an Idempotency-Key (RequestContext.idempotencyKey); none sent: undefined. */
export function requestClaim(
  ctx: { caller: { principal: { id: string } }; idempotencyKey?: string; rawBody?: unknown },
  endpoint: string,
  respond: (value: unknown) => unknown = (value) => value,
): IdempotencyClaim | undefined {
  if (!ctx.idempotencyKey) return undefined;
  return idempotencyClaim({
    principalId: ctx.caller.principal.id,
    key: ctx.idempotencyKey,
    endpoint,
    body: ctx.rawBody,
    respond,
  });
}

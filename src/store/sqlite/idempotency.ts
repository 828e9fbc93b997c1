import { iso } from "../rows.ts";
import type { IdempotencyClaim, IdempotencyRecall } from "../store.ts";
import type { Database } from "./database.ts";
import type { Row } from "./rows.ts";

/** Remembered responses of requests sent with an Idempotency-Key. */

export function checkIdempotency(
  db: Database,
  idem: IdempotencyClaim,
): { kind: "replayed"; response: unknown } | { kind: "key_reused" } | undefined {
  const row = db
    .sql("SELECT request_hash, response, created_at FROM idempotency_keys WHERE principal_id = ? AND key = ?")
    .get(idem.principalId, idem.key) as Row | undefined;
  if (!row) return undefined;
  if (String(row.created_at) < idem.notBefore) {
    db.sql("DELETE FROM idempotency_keys WHERE principal_id = ? AND key = ?").run(idem.principalId, idem.key);
    return undefined;
  }
  if (row.request_hash !== idem.requestHash) return { kind: "key_reused" };
  return { kind: "replayed", response: JSON.parse(String(row.response)) };
}

export function rememberResponse(db: Database, idem: IdempotencyClaim, value: unknown): unknown {
  const response = idem.respond(value);
  db.sql(
    "INSERT INTO idempotency_keys (principal_id, key, request_hash, response, created_at) VALUES (?, ?, ?, ?, ?)",
  ).run(idem.principalId, idem.key, idem.requestHash, JSON.stringify(response), iso(Date.now()));
  return response;
}

export async function recallIdempotency(db: Database, idem: IdempotencyClaim): Promise<IdempotencyRecall> {
  return db.tx(() => checkIdempotency(db, idem));
}

export async function rememberIdempotency(
  db: Database,
  idem: IdempotencyClaim,
  value: unknown,
): Promise<unknown> {
  return db.grouped(() => rememberResponse(db, idem, value));
}

export async function pruneIdempotencyKeys(db: Database, olderThan: string): Promise<number> {
  return Number(db.sql("DELETE FROM idempotency_keys WHERE created_at < ?").run(olderThan).changes);
}

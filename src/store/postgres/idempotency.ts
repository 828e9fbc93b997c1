import { iso } from "../rows.ts";
import type { IdempotencyClaim, IdempotencyRecall } from "../store.ts";
import type { Database, Tx } from "./database.ts";

/** Remembered responses of requests sent with an Idempotency-Key. */

/**
 * The remembered outcome of the key, if any. Requests with one key are serialised by a transaction-level
 * advisory lock on it (released at commit): a concurrent retry waits and then replays what the first one
 * stored, rather than running the request a second time.
 */
export async function checkIdempotency(
  tx: Tx,
  idem: IdempotencyClaim,
): Promise<{ kind: "replayed"; response: unknown } | { kind: "key_reused" } | undefined> {
  await tx.row("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
    `idempotency\n${idem.principalId}\n${idem.key}`,
  ]);
  const row = await tx.row(
    "SELECT request_hash, response, created_at FROM idempotency_keys WHERE principal_id = $1 AND key = $2",
    [idem.principalId, idem.key],
  );
  if (!row) return undefined;
  if (String(row.created_at) < idem.notBefore) {
    await tx.changes("DELETE FROM idempotency_keys WHERE principal_id = $1 AND key = $2", [
      idem.principalId,
      idem.key,
    ]);
    return undefined;
  }
  if (row.request_hash !== idem.requestHash) return { kind: "key_reused" };
  return { kind: "replayed", response: JSON.parse(String(row.response)) };
}

export async function rememberResponse(tx: Tx, idem: IdempotencyClaim, value: unknown): Promise<unknown> {
  const response = idem.respond(value);
  await tx.changes(
    "INSERT INTO idempotency_keys (principal_id, key, request_hash, response, created_at) VALUES ($1, $2, $3, $4, $5)",
    [idem.principalId, idem.key, idem.requestHash, JSON.stringify(response), iso(Date.now())],
  );
  return response;
}

export async function recallIdempotency(db: Database, idem: IdempotencyClaim): Promise<IdempotencyRecall> {
  return db.tx((tx) => checkIdempotency(tx, idem));
}

export async function rememberIdempotency(
  db: Database,
  idem: IdempotencyClaim,
  value: unknown,
): Promise<unknown> {
  return db.tx((tx) => rememberResponse(tx, idem, value));
}

export async function pruneIdempotencyKeys(db: Database, olderThan: string): Promise<number> {
  return db.changes("DELETE FROM idempotency_keys WHERE created_at < $1", [olderThan]);
}

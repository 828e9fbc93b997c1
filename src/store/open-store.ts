import { SqliteStore } from "./sqlite/sqlite-store.ts";
import type { Store } from "./store.ts";

/** Where the store lives: DATABASE_URL=postgres://… selects PostgreSQL, anything else the SQLite file. */
export interface StoreLocation {
  postgresUrl?: string | undefined;
  sqlitePath: string;
  sqliteBusyTimeoutMs?: number;
}

/**
 * The configured backend, not yet migrated. `onError` hears of connections PostgreSQL dropped (it reconnects).
 * The PostgreSQL store (pg and its statements) is loaded only when it is the one configured.
 */
export async function openStore(where: StoreLocation, onError?: (err: unknown) => void): Promise<Store> {
  if (where.postgresUrl) {
    const { PostgresStore } = await import("./postgres/postgres-store.ts");
    return new PostgresStore(where.postgresUrl, onError ? { onError } : {});
  }
  return new SqliteStore(
    where.sqlitePath,
    where.sqliteBusyTimeoutMs === undefined ? {} : { busyTimeoutMs: where.sqliteBusyTimeoutMs },
  );
}

/** The store's location for logs: a PostgreSQL URL without its user and password. */
export function describeStore(where: StoreLocation): string {
  if (!where.postgresUrl) return `sqlite:${where.sqlitePath}`;
  const url = new URL(where.postgresUrl);
  return `${url.protocol}//${url.host}${url.pathname}`;
}

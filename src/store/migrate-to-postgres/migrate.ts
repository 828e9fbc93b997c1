import { existsSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { migrate as migratePostgres, Database as PostgresDatabase } from "../postgres/database.ts";
import { runSearchText } from "../postgres/run-create.ts";
import { migrate as migrateSqlite, Database as SqliteDatabase } from "../sqlite/database.ts";
import { type CopyPlan, MigrationRefused, planCopy, quoteSqlite, type TablePlan } from "./plan.ts";

/**
 * `dispatch migrate-to-postgres`: copies a SQLite database into a new PostgreSQL database, ids, timestamps
 * and event sequence numbers unchanged, so that the same API keys, links and cursors keep working.
 *
 * Both databases are first brought to this Dispatch's schema (each store's own migrate; PostgreSQL's under
 * its advisory lock). The whole copy is then ONE PostgreSQL transaction: the tables are locked, must be
 * empty, are filled page by page (keyset pages read from one SQLite read transaction, a consistent
 * snapshot; never a whole table in memory), identity columns are set past the copied ids, and every
 * table's count is compared with SQLite's before COMMIT. A failure or a count that differs rolls it all
 * back, so the target is either a complete copy or still empty and the command can simply be run again.
 */

export interface TableCount {
  table: string;
  /** Rows in SQLite; null for a table PostgreSQL derives from copied rows. */
  sqlite: number | null;
  /** Rows the copy inserted. */
  copied: number;
  /** Rows in PostgreSQL once copied, counted inside the transaction before it commits. */
  postgres: number;
  /** What the PostgreSQL count must be. */
  expected: number;
}

export interface MigrationResult {
  tables: TableCount[];
  notCopied: CopyPlan["notCopied"];
  derived: CopyPlan["derived"];
  /** True when every count matched and the copy committed; false when it was rolled back. */
  committed: boolean;
}

export interface MigrationOptions {
  sqlitePath: string;
  postgresUrl: string;
  /** Rows per page and INSERT (tables holding bytes use fewer). */
  batchSize?: number;
  /** Hears of each table as its copy starts. */
  onTable?: (table: string, rows: number) => void;
}

export const DEFAULT_BATCH_SIZE = 500;
/** Rows per page of tables with BLOB columns (an attachment is up to 5 MB, a patch up to a few MiB). */
const BLOB_BATCH_SIZE = 8;
/** PostgreSQL's limit of parameters in one statement. */
const MAX_PARAMETERS = 65_535;
/** How long to wait for the tables while something else uses the database, before giving up. */
const LOCK_TIMEOUT = "10s";

export async function migrateToPostgres(opts: MigrationOptions): Promise<MigrationResult> {
  // Opening a path that does not exist would create an empty database and "copy" nothing.
  if (!existsSync(opts.sqlitePath)) {
    throw new MigrationRefused(`There is no SQLite database at ${opts.sqlitePath} (check --from).`);
  }
  refuseUnlessDispatchDatabase(opts.sqlitePath);
  const source = new SqliteDatabase(opts.sqlitePath);
  const target = new PostgresDatabase(opts.postgresUrl, { poolSize: 2 });
  try {
    await migratePostgres(target);
    migrateSqlite(source);
    return await target.session(async (client) => {
      const plan = await planCopy(source, client);
      // One read transaction: every table is read from the same snapshot, even if something writes meanwhile.
      source.handle.exec("BEGIN");
      try {
        return await copyAll(source, client, plan, opts);
      } finally {
        source.handle.exec("COMMIT");
      }
    });
  } finally {
    source.close();
    await target.close();
  }
}

/** Looked at read-only first: migrating the file would turn any SQLite file into a Dispatch schema. */
function refuseUnlessDispatchDatabase(path: string): void {
  const probe = new DatabaseSync(path, { readOnly: true });
  try {
    if (!probe.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'schema_migrations'").get()) {
      throw new MigrationRefused(`${path} is not a Dispatch database (check --from).`);
    }
  } catch (err) {
    if (err instanceof MigrationRefused) throw err;
    throw new MigrationRefused(`${path} is not a readable SQLite database (${(err as Error).message}).`);
  } finally {
    probe.close();
  }
}

async function copyAll(
  source: SqliteDatabase,
  client: pg.PoolClient,
  plan: CopyPlan,
  opts: MigrationOptions,
): Promise<MigrationResult> {
  const all = [...plan.tables.map((t) => t.table), ...plan.derived.map((d) => d.table)];
  await client.query("BEGIN");
  let committed = false;
  try {
    await client.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
    try {
      // EXCLUSIVE: others may still read, but nobody writes until the copy commits or rolls back.
      await client.query(`LOCK TABLE ${all.map((t) => pg.escapeIdentifier(t)).join(", ")} IN EXCLUSIVE MODE`);
    } catch (err) {
      if ((err as { code?: string }).code === "55P03") {
        throw new MigrationRefused(
          "The PostgreSQL tables are in use (is a Dispatch running on this database?); stop it and try again.",
        );
      }
      throw err;
    }
    await refuseUnlessEmpty(client, all);

    const counts: TableCount[] = [];
    let copiedRuns = 0;
    for (const table of plan.tables) {
      const rows = Number(
        (
          source.handle.prepare(`SELECT count(*) AS n FROM ${quoteSqlite(table.table)}`).get() as {
            n: number;
          }
        ).n,
      );
      opts.onTable?.(table.table, rows);
      const copied = await copyTable(source, client, table, opts.batchSize ?? DEFAULT_BATCH_SIZE).catch(
        (err: unknown) => {
          // Which table failed is what the user needs; the rows themselves are never shown (keys, tokens).
          throw new Error(`copying ${table.table}: ${err instanceof Error ? err.message : String(err)}`, {
            cause: err,
          });
        },
      );
      if (table.table === "runs") copiedRuns = copied.searchText;
      counts.push({
        table: table.table,
        sqlite: rows,
        copied: copied.rows,
        postgres: await countRows(client, table.table),
        expected: rows,
      });
    }
    for (const derived of plan.derived) {
      const from = counts.find((c) => c.table === derived.from);
      counts.push({
        table: derived.table,
        sqlite: null,
        copied: copiedRuns,
        postgres: await countRows(client, derived.table),
        expected: from?.sqlite ?? 0,
      });
    }
    await resetIdentities(client, all);

    if (counts.every((c) => c.postgres === c.expected && c.copied === c.expected)) {
      await client.query("COMMIT");
      committed = true;
    } else {
      await client.query("ROLLBACK");
    }
    return { tables: counts, notCopied: plan.notCopied, derived: plan.derived, committed };
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  }
}

/** The copy goes into a new database only: merging two Dispatch histories is not what it does. */
async function refuseUnlessEmpty(client: pg.PoolClient, tables: string[]): Promise<void> {
  const filled: string[] = [];
  for (const table of tables) {
    const { rows } = await client.query(`SELECT EXISTS (SELECT 1 FROM ${pg.escapeIdentifier(table)}) AS any`);
    if (rows[0]?.any) filled.push(table);
  }
  if (filled.length > 0) {
    throw new MigrationRefused(
      `The PostgreSQL database is not empty (${filled.join(", ")} already hold rows): migrate-to-postgres ` +
        "copies into a new database only. Point --to at an empty database (CREATE DATABASE …); nothing was copied.",
    );
  }
}

/** Copies one table page by page, in primary-key order; runs also get their run_search_text rows. */
async function copyTable(
  source: SqliteDatabase,
  client: pg.PoolClient,
  table: TablePlan,
  batchSize: number,
): Promise<{ rows: number; searchText: number }> {
  const pageSize = Math.max(
    1,
    Math.min(table.hasBlobs ? BLOB_BATCH_SIZE : batchSize, Math.floor(MAX_PARAMETERS / table.columns.length)),
  );
  const keyInSelect = table.key.filter((k) => !table.columns.includes(k));
  const select = [...table.columns, ...keyInSelect].map(quoteSqlite).join(", ");
  const keyList = table.key.map(quoteSqlite).join(", ");
  const first = source.handle.prepare(
    `SELECT ${select} FROM ${quoteSqlite(table.table)} ORDER BY ${keyList} LIMIT ?`,
  );
  const next = source.handle.prepare(
    `SELECT ${select} FROM ${quoteSqlite(table.table)} WHERE (${keyList}) > (${table.key.map(() => "?").join(", ")})
      ORDER BY ${keyList} LIMIT ?`,
  );
  const insert = `INSERT INTO ${pg.escapeIdentifier(table.table)} (${table.columns.map((c) => pg.escapeIdentifier(c)).join(", ")}) OVERRIDING SYSTEM VALUE VALUES `;

  let copied = 0;
  let searchText = 0;
  let after: unknown[] | undefined;
  for (;;) {
    const page = (
      after ? next.all(...(after as Array<string | number>), pageSize) : first.all(pageSize)
    ) as Array<Record<string, unknown>>;
    if (page.length === 0) break;
    copied += await insertRows(
      client,
      insert,
      page.map((row) => table.columns.map((c) => toPostgres(row[c]))),
    );
    if (table.table === "runs") searchText += await insertSearchText(client, page);
    const last = page.at(-1)!;
    after = table.key.map((k) => last[k]);
    if (page.length < pageSize) break;
  }
  return { rows: copied, searchText };
}

async function insertRows(client: pg.PoolClient, insert: string, rows: unknown[][]): Promise<number> {
  const values: unknown[] = [];
  const tuples = rows.map((row) => {
    const placeholders = row.map((value) => {
      values.push(value);
      return `$${values.length}`;
    });
    return `(${placeholders.join(", ")})`;
  });
  return (await client.query(insert + tuples.join(", "), values)).rowCount ?? 0;
}

async function insertSearchText(
  client: pg.PoolClient,
  runs: Array<Record<string, unknown>>,
): Promise<number> {
  return insertRows(
    client,
    "INSERT INTO run_search_text (run_id, title, prompt) VALUES ",
    runs.map((run) => {
      const folded = runSearchText({ title: String(run.title), prompt: String(run.prompt) });
      return [run.id, folded.title, folded.prompt];
    }),
  );
}

/** SQLite's values as `pg` sends them: a BLOB (Uint8Array) as a Buffer (bytea); the rest as they are. */
function toPostgres(value: unknown): unknown {
  if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
  return value;
}

async function countRows(client: pg.PoolClient, table: string): Promise<number> {
  const { rows } = await client.query(`SELECT count(*) AS n FROM ${pg.escapeIdentifier(table)}`);
  return Number(rows[0].n);
}

/**
 * Rows were inserted with their ids (OVERRIDING SYSTEM VALUE), which does not advance the identity
 * sequences: each is set to the largest copied id, so the next row PostgreSQL numbers comes after it.
 */
async function resetIdentities(client: pg.PoolClient, tables: string[]): Promise<void> {
  const { rows } = await client.query(
    `SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = ANY($1::text[])
        AND (is_identity = 'YES' OR column_default LIKE 'nextval(%')`,
    [tables],
  );
  for (const r of rows as Array<{ table_name: string; column_name: string }>) {
    const table = pg.escapeIdentifier(r.table_name);
    const column = pg.escapeIdentifier(r.column_name);
    // Empty table: the next id is 1, as in a new database.
    await client.query(
      `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(max(${column}), 1), max(${column}) IS NOT NULL)
         FROM ${table}`,
      [table, r.column_name],
    );
  }
}

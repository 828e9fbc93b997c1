import type pg from "pg";
import type { Database as SqliteDatabase } from "../sqlite/database.ts";

/**
 * What `dispatch migrate-to-postgres` copies, read from the two schemas themselves rather than from a list
 * kept by hand: every table of the SQLite database that carries state, in an order where each table comes
 * after the tables its foreign keys name, with its columns and the key it is paged by. A table a later
 * migration adds is copied without a change here; one the copy cannot take (missing in PostgreSQL, or with
 * a column PostgreSQL lacks) stops the migration before anything is written.
 */

export interface TablePlan {
  table: string;
  /** The SQLite columns, all of which PostgreSQL has. */
  columns: string[];
  /** The primary key's columns, in key order: pages are read in this order (keyset pagination). */
  key: string[];
  /** Whether a row holds bytes (a BLOB column): such tables are read a few rows at a time. */
  hasBlobs: boolean;
}

export interface CopyPlan {
  tables: TablePlan[];
  /** SQLite tables not copied, each with why. */
  notCopied: Array<{ table: string; why: string }>;
  /** PostgreSQL tables that hold state derived from the copied rows rather than copied (and with which). */
  derived: Array<{ table: string; from: string; why: string }>;
}

/** Raised when the migration will not start (or stops) for a reason the user can act on. */
export class MigrationRefused extends Error {}

/** Tables of the SQLite database that are deliberately left behind. */
const NOT_COPIED: Record<string, string> = {
  schema_migrations:
    "each store records its own schema version; the PostgreSQL database was migrated to the same version",
  sqlite_sequence:
    "SQLite's AUTOINCREMENT counters; PostgreSQL's identity columns are set past the copied ids instead",
  sqlite_stat1: "SQLite's query planner statistics; PostgreSQL keeps its own",
  sqlite_stat4: "SQLite's query planner statistics; PostgreSQL keeps its own",
};

/** PostgreSQL-only tables filled from copied rows, as the PostgreSQL store fills them. */
export const DERIVED = [
  {
    table: "run_search_text",
    from: "runs",
    why: "each copied run's title and prompt folded for `q`, as the PostgreSQL store writes at create",
  },
];

export async function planCopy(source: SqliteDatabase, target: pg.ClientBase): Promise<CopyPlan> {
  await sameSchemaVersion(source, target);
  const targetColumns = await columnsOfTarget(target);
  const sourceTables = (
    source.handle
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY rowid")
      .all() as Array<{
      name: string;
    }>
  ).map((r) => r.name);

  const tables: TablePlan[] = [];
  const notCopied: CopyPlan["notCopied"] = [];
  const problems: string[] = [];
  for (const table of sourceTables) {
    const why =
      NOT_COPIED[table] ?? (table.startsWith("sqlite_") ? "SQLite's internal bookkeeping" : undefined);
    if (why) {
      notCopied.push({ table, why });
      continue;
    }
    const info = source.handle.prepare(`PRAGMA table_info(${quoteSqlite(table)})`).all() as Array<{
      name: string;
      type: string;
      pk: number;
    }>;
    const into = targetColumns.get(table);
    if (!into) {
      problems.push(`table ${table} does not exist in PostgreSQL`);
      continue;
    }
    const missing = info.filter((c) => !into.has(c.name)).map((c) => c.name);
    if (missing.length > 0) {
      problems.push(`PostgreSQL's ${table} lacks the column(s) ${missing.join(", ")}`);
      continue;
    }
    const key = info
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name);
    // Every Dispatch table has a primary key; a table without one is paged by its rowid.
    tables.push({
      table,
      columns: info.map((c) => c.name),
      key: key.length > 0 ? key : ["rowid"],
      hasBlobs: info.some((c) => c.type.toUpperCase() === "BLOB"),
    });
  }
  if (problems.length > 0) {
    throw new MigrationRefused(
      `The SQLite database has state the PostgreSQL schema cannot hold (${problems.join("; ")}). ` +
        "Is the SQLite database from a newer Dispatch than this one? Run migrate-to-postgres of that version.",
    );
  }
  const known = new Set([...sourceTables, "schema_migrations", ...DERIVED.map((d) => d.table)]);
  const extra = [...targetColumns.keys()].filter((t) => !known.has(t));
  if (extra.length > 0) {
    throw new MigrationRefused(
      `PostgreSQL has table(s) the SQLite database lacks (${extra.join(", ")}), although both are at the same schema version; nothing was copied.`,
    );
  }
  return { tables: await dependencyOrder(tables, target), notCopied, derived: DERIVED };
}

/**
 * Both databases must be at the same migration (each was just migrated by this Dispatch): otherwise a
 * column could mean different things on the two sides.
 */
async function sameSchemaVersion(source: SqliteDatabase, target: pg.ClientBase): Promise<void> {
  const sqlite = (
    source.handle.prepare("SELECT version FROM schema_migrations ORDER BY version").all() as Array<{
      version: number;
    }>
  ).map((r) => Number(r.version));
  const postgres = (await target.query("SELECT version FROM schema_migrations ORDER BY version")).rows.map(
    (r: { version: number }) => Number(r.version),
  );
  if (sqlite.join(",") !== postgres.join(",")) {
    throw new MigrationRefused(
      `The databases are at different schema versions (SQLite: ${sqlite.at(-1) ?? "none"}, PostgreSQL: ${
        postgres.at(-1) ?? "none"
      }): the SQLite database was written by another Dispatch version. Run migrate-to-postgres of that version.`,
    );
  }
}

async function columnsOfTarget(target: pg.ClientBase): Promise<Map<string, Set<string>>> {
  const { rows } = await target.query(
    `SELECT c.table_name, c.column_name FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'`,
  );
  const columns = new Map<string, Set<string>>();
  for (const r of rows as Array<{ table_name: string; column_name: string }>) {
    const set = columns.get(r.table_name) ?? new Set<string>();
    set.add(r.column_name);
    columns.set(r.table_name, set);
  }
  return columns;
}

/**
 * The tables ordered so that each comes after every table its PostgreSQL foreign keys reference (the
 * target's constraints are the ones the inserts must satisfy); otherwise in SQLite's creation order,
 * which is the migrations' order.
 */
async function dependencyOrder(tables: TablePlan[], target: pg.ClientBase): Promise<TablePlan[]> {
  const { rows } = await target.query(
    `SELECT child.relname AS child, parent.relname AS parent
       FROM pg_constraint c
       JOIN pg_class child ON child.oid = c.conrelid
       JOIN pg_class parent ON parent.oid = c.confrelid
       JOIN pg_namespace n ON n.oid = child.relnamespace
      WHERE c.contype = 'f' AND n.nspname = current_schema()`,
  );
  const parents = new Map<string, Set<string>>();
  for (const r of rows as Array<{ child: string; parent: string }>) {
    if (r.child === r.parent) continue;
    const set = parents.get(r.child) ?? new Set<string>();
    set.add(r.parent);
    parents.set(r.child, set);
  }
  const ordered: TablePlan[] = [];
  const placed = new Set<string>();
  const copied = new Set(tables.map((t) => t.table));
  const visit = (plan: TablePlan, path: string[]) => {
    if (placed.has(plan.table)) return;
    if (path.includes(plan.table)) {
      throw new MigrationRefused(`The foreign keys form a cycle (${[...path, plan.table].join(" → ")}).`);
    }
    for (const parent of parents.get(plan.table) ?? []) {
      if (!copied.has(parent)) continue;
      visit(tables.find((t) => t.table === parent)!, [...path, plan.table]);
    }
    placed.add(plan.table);
    ordered.push(plan);
  };
  for (const plan of tables) visit(plan, []);
  return ordered;
}

export function quoteSqlite(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}

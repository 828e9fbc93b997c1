import { parseArgs } from "node:util";
import { isPostgresUrl, loadConfig } from "../config.ts";
import {
  DEFAULT_BATCH_SIZE,
  type MigrationResult,
  migrateToPostgres,
} from "../store/migrate-to-postgres/migrate.ts";
import { MigrationRefused } from "../store/migrate-to-postgres/plan.ts";
import { describeStore } from "../store/open-store.ts";

const USAGE = `Usage:
  dispatch migrate-to-postgres [--from <path to dispatch.db>] [--to postgres://…] [--batch-size N]

Copies this machine's SQLite database into a new, empty PostgreSQL database: runs and their events,
follow-ups, keys, identities, bindings, settings, schedules, artifacts, attachments and the notifier's
state, ids and timestamps unchanged. Stop Dispatch first. --from defaults to the SQLite store of
DISPATCH_DATA_DIR (or DATABASE_URL=sqlite:<path>); --to to DATABASE_URL. The copy is one transaction:
it lands whole or not at all, and a database that already holds rows is refused.`;

export async function migrateToPostgresCommand(argv: string[]): Promise<number> {
  let values: { from?: string; to?: string; "batch-size"?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        from: { type: "string" },
        to: { type: "string" },
        "batch-size": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (err) {
    return usage((err as Error).message);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const batchSize = values["batch-size"] === undefined ? DEFAULT_BATCH_SIZE : Number(values["batch-size"]);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    return usage("--batch-size must be a whole number from 1 to 10000");
  }
  // The environment is read only for what the flags leave out.
  const config = values.from && values.to ? undefined : loadConfig();
  const sqlitePath = values.from ?? config!.databasePath;
  const postgresUrl = values.to ?? config!.postgresUrl;
  if (!postgresUrl) {
    return usage(
      "name the PostgreSQL database: --to postgres://user:password@host:5432/dispatch (or DATABASE_URL)",
    );
  }
  if (!isPostgresUrl(postgresUrl)) {
    return usage("--to must be a PostgreSQL URL: postgres://user:password@host:5432/dispatch");
  }
  // The URL as logs show it: never its password.
  const where = describeStore({ postgresUrl, sqlitePath });
  process.stderr.write(`Copying ${sqlitePath} into ${where}…\n`);
  let result: MigrationResult;
  try {
    result = await migrateToPostgres({
      sqlitePath,
      postgresUrl,
      batchSize,
      onTable: (table, rows) => process.stderr.write(`  ${table}: ${rows} row(s)\n`),
    });
  } catch (err) {
    if (err instanceof MigrationRefused) {
      process.stderr.write(`Refused: ${err.message}\n`);
      return 1;
    }
    // The copy is one transaction: whatever failed, nothing of it was committed.
    process.stderr.write(
      `Failed: ${err instanceof Error ? err.message : String(err)}. Nothing was committed to ${where}.\n`,
    );
    return 1;
  }
  process.stdout.write(report(result));
  if (!result.committed) {
    process.stderr.write(
      `The counts differ (marked ✗ above): the copy was rolled back and ${where} is still empty.\n`,
    );
    return 1;
  }
  process.stderr.write(
    `Done: every table's count matches. Start Dispatch with DATABASE_URL naming ${where}.\n`,
  );
  return 0;
}

/** The per-table counts, then what was left behind and why. Names and numbers only: no row is shown. */
function report(result: MigrationResult): string {
  const header = ["table", "sqlite", "postgres", ""];
  const rows = result.tables.map((t) => [
    t.table,
    t.sqlite === null ? "-" : String(t.sqlite),
    String(t.postgres),
    t.postgres === t.expected && t.copied === t.expected
      ? "ok"
      : `✗ expected ${t.expected}, copied ${t.copied}`,
  ]);
  const width = (i: number) => Math.max(...[header, ...rows].map((r) => r[i]!.length));
  const line = (r: string[]) =>
    `${r[0]!.padEnd(width(0))}  ${r[1]!.padStart(width(1))}  ${r[2]!.padStart(width(2))}  ${r[3]}`.trimEnd();
  const out = [line(header), ...rows.map(line)];
  for (const d of result.derived) out.push("", `${d.table}: derived from ${d.from} (${d.why}).`);
  if (result.notCopied.length > 0) {
    out.push("", "Not copied:");
    for (const n of result.notCopied) out.push(`  ${n.table}: ${n.why}`);
  }
  return `${out.join("\n")}\n`;
}

function usage(problem: string): number {
  process.stderr.write(`${problem}\n\n${USAGE}\n`);
  return 2;
}

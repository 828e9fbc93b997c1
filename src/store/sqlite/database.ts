import { closeSync, fdatasync, mkdirSync, openSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import type { StoreActivity } from "../activity.ts";
import { foldCase } from "../fold-case.ts";
import { type BareSignal, StoreSignals } from "../signals.ts";
import { WalCheckpointer } from "./wal-checkpointer.ts";

const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations/", import.meta.url));

/**
 * The connection every statement family works on: the node:sqlite handle with its pragmas, the cache of
 * prepared statements, group commit (`grouped`) and plain transactions (`tx`), and the signals published
 * once a change has committed.
 */
export class Database {
  readonly handle: DatabaseSync;
  readonly signals = new StoreSignals();
  readonly activity: StoreActivity = { commits: 0, statements: 0 };
  private readonly statements = new Map<string, StatementSync>();
  private changes: StatementSync | undefined;
  private readonly arrayStatements = new Map<string, StatementSync>();
  private pending: Array<{
    work: () => unknown;
    resolve: (value: unknown) => void;
    reject: (err: unknown) => void;
  }> = [];
  /** The write-ahead log, which `grouped` syncs off the event loop; undefined when not in WAL mode. */
  private readonly walPath: string | undefined;
  private walFd: number | undefined;
  private walSyncing = false;
  private closing = false;
  /** Checkpoints the log on a thread of its own; undefined when not in WAL mode. */
  readonly checkpointer: WalCheckpointer | undefined;
  /** The checkpointer is restarting the log: group commits wait (see WalCheckpointer). */
  private writesHeld = false;
  /** data_version as read in this event-loop turn; undefined once the turn is over. */
  private turnDataVersion: number | undefined;
  /** Group commits waiting for the next sync of the log (one sync answers all of them). */
  private awaitingWalSync: Array<(err: Error | null) => void> = [];
  /** What the transaction under way asked to signal once it is durable (signalOnCommit). */
  private signalsOnCommit = new Set<BareSignal>();

  constructor(path: string, opts: { busyTimeoutMs?: number } = {}) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.handle = new DatabaseSync(path);
    const mode = this.handle.prepare("PRAGMA journal_mode = WAL").get() as { journal_mode?: string };
    this.walPath = mode?.journal_mode === "wal" ? `${path}-wal` : undefined;
    if (this.walPath) {
      this.checkpointer = new WalCheckpointer(path, this.handle, {
        hold: () => {
          this.writesHeld = true;
        },
        release: () => {
          this.writesHeld = false;
          if (this.pending.length > 0) setImmediate(() => this.flush());
        },
      });
    }
    // FULL: a write is on disk, not only in the WAL buffer, before it is acknowledged. Group commits
    // (`grouped`) keep that promise with an fdatasync of the log on libuv's thread pool instead.
    this.handle.exec("PRAGMA synchronous = FULL");
    // node:sqlite waits synchronously: keep this short, another process holds the lock only briefly.
    this.handle.exec(`PRAGMA busy_timeout = ${Math.trunc(opts.busyTimeoutMs ?? 2000)}`);
    this.handle.exec("PRAGMA foreign_keys = ON");
    // Each write of a group commit runs in a savepoint, whose journal of the pages it changes outgrew the
    // 64 KiB SQLite keeps in memory and went to a temporary file: a pwrite per page, a tenth of a
    // create's CPU. Only a rollback to the savepoint reads it; crash recovery is the WAL's.
    this.handle.exec("PRAGMA temp_store = MEMORY");
    // Reads through a memory map skip a pread per page: run lookups are random over the whole table.
    this.handle.exec("PRAGMA mmap_size = 268435456");
    // SQLite's lower() folds ASCII only; statements match text with this instead.
    this.handle.function("fold_case", { deterministic: true }, (text) =>
      typeof text === "string" ? foldCase(text) : text,
    );
  }

  /**
   * SQLite's data_version: it changes whenever another connection (another process) commits to this
   * database, and never for this connection's own commits (nor for the checkpointer's, which commits
   * nothing). Read once per event-loop turn: each read is a statement with a WAL read transaction of its
   * own (two fcntl locks), a few percent of a GET's CPU when every request read it. So another process's
   * commit is seen from the next turn on, by every request that turn reads; the requests already read in
   * the turn it landed in were sent before it was seen anyway.
   */
  dataVersion(): number {
    if (this.turnDataVersion !== undefined) return this.turnDataVersion;
    const version = Number(
      (this.sql("PRAGMA data_version", { arrays: true }).get() as unknown as [number])[0],
    );
    this.turnDataVersion = version;
    setImmediate(() => {
      this.turnDataVersion = undefined;
    });
    return version;
  }

  /**
   * The prepared statement for `text`, prepared once and cached. With `arrays`, its rows come back as
   * arrays of values in column order: node:sqlite builds a row object property by property, which on a
   * wide table such as runs cost more than the query itself.
   *
   * A LIMIT takes its parameter as `LIMIT (SELECT ?)`, never `LIMIT ?`: SQLite reads a bare LIMIT
   * parameter while planning, which expires the cached statement whenever that parameter is bound, so
   * it was compiled again on every call (bench/README.md, "Sixth round: list").
   */
  sql(text: string, opts: { arrays?: boolean } = {}): StatementSync {
    this.activity.statements += 1;
    // A map of its own rather than a prefixed key: a key built per call is hashed per call, and the
    // texts of run reads are long.
    const statements = opts.arrays ? this.arrayStatements : this.statements;
    let stmt = statements.get(text);
    if (!stmt) {
      stmt = this.handle.prepare(text);
      if (opts.arrays) stmt.setReturnArrays(true);
      statements.set(text, stmt);
    }
    return stmt;
  }

  /**
   * Emits `name` once the transaction under way is durable, or at once outside a transaction: for what a
   * write deep inside a transaction caused and its caller does not know of (the webhook delivery an event
   * queued). A write rolled back to its savepoint may leave one behind: a signal is a hint.
   */
  signalOnCommit(name: BareSignal): void {
    if (this.handle.isTransaction) this.signalsOnCommit.add(name);
    else this.signals.emit(name);
  }

  /** The signals the transaction just committed asked for; forgets them. */
  private takeSignals(): BareSignal[] {
    if (this.signalsOnCommit.size === 0) return [];
    const names = [...this.signalsOnCommit];
    this.signalsOnCommit.clear();
    return names;
  }

  /**
   * Group commit: writes that arrive in the same event-loop turn share one transaction and so one fsync.
   * Each write runs in its own savepoint, so one failing write does not undo the others; every caller is
   * answered only once the COMMIT is on disk.
   *
   * In WAL mode the COMMIT itself runs with synchronous=NORMAL (it only writes the log) and the log is
   * then fdatasync'd on libuv's thread pool: a synchronous FULL commit blocked the event loop for the
   * whole fsync (≈ 2.6 ms on the bench machine), during which no other request was served. Syncs are
   * chained, so commits made while one is under way share the next. Between the COMMIT and the sync a
   * reader of this database may already see the rows; any FULL commit in between (tx, autocommit writes)
   * syncs the same log and so makes them durable too.
   */
  grouped<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    // Held: the release flushes what waited. Empty: a release's flush found the group already committed.
    if (this.writesHeld || this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    const syncLater = this.walPath !== undefined;
    if (syncLater) {
      try {
        this.handle.exec("PRAGMA synchronous = NORMAL");
      } catch (error) {
        for (const item of batch) item.reject(error); // the database was closed
        return;
      }
    }
    try {
      this.commit(batch, syncLater);
    } finally {
      if (syncLater && this.handle.isOpen) this.handle.exec("PRAGMA synchronous = FULL");
    }
  }

  private commit(batch: Database["pending"], syncLater: boolean): void {
    const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      this.handle.exec("BEGIN IMMEDIATE");
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    const changesBefore = this.totalChanges();
    for (const item of batch) {
      this.handle.exec("SAVEPOINT write");
      try {
        results.push({ ok: true, value: item.work() });
        this.handle.exec("RELEASE write");
      } catch (error) {
        this.handle.exec("ROLLBACK TO write");
        this.handle.exec("RELEASE write");
        results.push({ ok: false, error });
      }
    }
    try {
      this.handle.exec("COMMIT");
    } catch (error) {
      if (this.handle.isTransaction) this.handle.exec("ROLLBACK");
      this.signalsOnCommit.clear();
      for (const item of batch) item.reject(error);
      return;
    }
    const signals = this.takeSignals();
    const answer = (syncError: Error | null) => {
      if (!syncError) for (const name of signals) this.signals.emit(name);
      batch.forEach((item, i) => {
        const result = results[i]!;
        if (syncError) item.reject(syncError);
        else if (result.ok) item.resolve(result.value);
        else item.reject(result.error);
      });
    };
    // A group that changed nothing (a claim that found no run, a recovery pass with nothing to recover)
    // has nothing to sync: it is answered at once, unless what it read may be a commit still to be synced.
    const wrote = this.totalChanges() !== changesBefore;
    if (wrote) {
      this.activity.commits += 1;
      this.checkpointer?.committed();
    }
    if (syncLater && (wrote || this.walSyncing || this.awaitingWalSync.length > 0)) this.afterWalSync(answer);
    else answer(null);
  }

  /** Rows inserted, updated or deleted by this connection since it opened (not one of the store's statements). */
  private totalChanges(): number {
    this.changes ??= this.handle.prepare("SELECT total_changes() AS n");
    return Number((this.changes.get() as { n: number }).n);
  }

  /** Calls `done` once the log holds everything committed so far on disk (an fdatasync begun after now). */
  private afterWalSync(done: (err: Error | null) => void): void {
    this.awaitingWalSync.push(done);
    if (!this.walSyncing) this.syncWal();
  }

  private syncWal(): void {
    const waiting = this.awaitingWalSync;
    this.awaitingWalSync = [];
    this.walSyncing = true;
    const finish = (err: Error | null) => {
      for (const done of waiting) done(err);
      if (this.awaitingWalSync.length > 0) {
        this.syncWal();
        return;
      }
      this.walSyncing = false;
      if (this.closing) this.closeWal();
    };
    let fd: number;
    try {
      // Read-only is enough for fdatasync; the log stays SQLite's to write. It exists once a COMMIT ran.
      fd = this.walFd ??= openSync(this.walPath!, "r");
    } catch (err) {
      finish(err as Error);
      return;
    }
    fdatasync(fd, finish);
  }

  private closeWal(): void {
    if (this.walFd === undefined) return;
    closeSync(this.walFd);
    this.walFd = undefined;
  }

  tx<T>(fn: () => T): T {
    if (this.handle.isTransaction) return fn();
    this.handle.exec("BEGIN IMMEDIATE");
    try {
      const out = fn();
      this.handle.exec("COMMIT");
      this.activity.commits += 1;
      this.checkpointer?.committed();
      for (const name of this.takeSignals()) this.signals.emit(name);
      return out;
    } catch (err) {
      this.handle.exec("ROLLBACK");
      this.signalsOnCommit.clear();
      throw err;
    }
  }

  /** Closes the connection now; resolves once the checkpoint thread's connection is closed too. */
  close(): Promise<void> {
    const checkpointerClosed = this.checkpointer?.close() ?? Promise.resolve();
    if (this.handle.isOpen) this.handle.close();
    // A sync under way finishes first (its callers are still answered); the descriptor is closed after.
    this.closing = true;
    if (!this.walSyncing) this.closeWal();
    return checkpointerClosed;
  }
}

/** Applies, in order, each numbered file of migrations/ that schema_migrations does not list yet. */
export function migrate(db: Database): void {
  db.handle.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
  );
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();
  for (const file of files) {
    const version = Number.parseInt(file, 10);
    db.tx(() => {
      if (db.sql("SELECT 1 FROM schema_migrations WHERE version = ?").get(version)) return;
      const sql = readFileSync(MIGRATIONS_DIR + file, "utf8");
      // A file that edits a table's schema text (the documented way to relax a CHECK constraint) needs
      // SQLite's defensive mode off while it runs, and a new schema_version so the change is read again.
      const editsSchema = /PRAGMA writable_schema = ON/.test(sql);
      if (editsSchema) db.handle.enableDefensive(false);
      try {
        db.handle.exec(sql);
        if (editsSchema) {
          const { schema_version } = db.handle.prepare("PRAGMA schema_version").get() as {
            schema_version: number;
          };
          db.handle.exec(`PRAGMA schema_version = ${Number(schema_version) + 1}`);
        }
      } finally {
        if (editsSchema) db.handle.enableDefensive(true);
      }
      db.sql("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
        version,
        file,
        new Date().toISOString(),
      );
    });
  }
}

export function ping(db: Database): void {
  db.sql("SELECT 1").get();
}

export function classifyError(err: unknown): "conflict" | "unavailable" | undefined {
  const e = err as { code?: string; errcode?: number };
  if (e?.code === "ERR_INVALID_STATE") return "unavailable"; // the database was closed
  if (e?.code !== "ERR_SQLITE_ERROR" || typeof e.errcode !== "number") return undefined;
  const primary = e.errcode & 0xff;
  if (primary === 5 || primary === 6) return "conflict"; // SQLITE_BUSY, SQLITE_LOCKED: another writer
  // SQLITE_CORRUPT, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_NOTADB
  if ([8, 10, 11, 13, 14, 26].includes(primary)) return "unavailable";
  return undefined;
}

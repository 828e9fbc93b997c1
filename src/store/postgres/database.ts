import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { StoreActivity } from "../activity.ts";
import { StoreSignals } from "../signals.ts";
import { emitNote, encodeSignals, SIGNAL_CHANNEL, SignalListener, type SignalNote } from "./notifications.ts";

const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations/", import.meta.url));

/** Any fixed number: every Dispatch replica takes this advisory lock to migrate, so exactly one does at a time. */
const MIGRATION_LOCK = 7_311_995_001;

/**
 * A row as `pg` returns it. JSON columns arrive as their text and timestamps are ISO-8601 text (the SQLite
 * store's representation), so the SQLite row mappers read these rows unchanged.
 */
export type Row = Record<string, unknown>;

/** JSON stays text (the row mappers parse it); every other type as `pg` parses it. */
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === pg.types.builtins.JSON || oid === pg.types.builtins.JSONB) return (value: string) => value;
    return pg.types.getTypeParser(oid, format);
  }) as pg.CustomTypesConfig["getTypeParser"],
};

/** Statement names by text: each statement is prepared once per connection, under the same name on all. */
const statementNames = new Map<string, string>();

function prepared(text: string, values: unknown[]): pg.QueryConfig {
  let name = statementNames.get(text);
  if (!name) {
    name = `dispatch_${statementNames.size + 1}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}

/** What statement families run their SQL on: the pool (one statement) or a transaction's connection. */
export interface Sql {
  rows(text: string, values?: unknown[]): Promise<Row[]>;
  row(text: string, values?: unknown[]): Promise<Row | undefined>;
  /** The number of rows the statement changed. */
  changes(text: string, values?: unknown[]): Promise<number>;
}

/** Thrown inside `tx` to roll back and answer `value` (a compare-and-set that lost half-way). */
export class Rollback<T> {
  readonly value: T;
  constructor(value: T) {
    this.value = value;
  }
}

/**
 * A transaction: its statements, and the signals it publishes if (and once) it commits. BEGIN is written
 * with its first statement and the statements it does not wait for with its COMMIT (`pipelined`), so
 * neither costs a round trip of its own.
 */
export class Tx implements Sql {
  readonly notes: SignalNote[] = [];
  /** Whether a statement of it changed rows (a transaction that only read commits nothing worth counting). */
  wrote = false;
  /** Whether BEGIN has been sent. */
  begun = false;
  /** Statements whose answers nobody waits for: they go out with the COMMIT (`afterwards`). */
  readonly deferred: Array<{
    text: string;
    query: pg.QueryConfig;
    check?: (result: pg.QueryResult) => void;
  }> = [];
  private readonly client: pg.PoolClient;
  private readonly activity: StoreActivity;

  constructor(client: pg.PoolClient, activity: StoreActivity) {
    this.client = client;
    this.activity = activity;
  }

  async rows(text: string, values: unknown[] = []): Promise<Row[]> {
    const [result] = await this.send(prepared(text, values));
    return this.count(text, result!).rows;
  }

  async row(text: string, values: unknown[] = []): Promise<Row | undefined> {
    return (await this.rows(text, values))[0];
  }

  async changes(text: string, values: unknown[] = []): Promise<number> {
    const [result] = await this.send(prepared(text, values));
    return this.count(text, result!).rowCount ?? 0;
  }

  /**
   * A statement whose answer the transaction does not need: written with the COMMIT, after every other
   * statement of it. If it fails, nothing of the transaction is committed and the commit fails with it.
   * `check` sees its answer once committed, and throws if it is not what the caller counted on (a
   * statement written so that it changes nothing at all unless its answer is right).
   */
  afterwards(text: string, values: unknown[] = [], check?: (result: pg.QueryResult) => void): void {
    this.deferred.push({ text, query: prepared(text, values), ...(check ? { check } : {}) });
  }

  /** Counts a statement's round trip and what it changed. */
  private count(text: string, result: pg.QueryResult): pg.QueryResult {
    this.activity.statements += 1;
    return this.answered(text, result);
  }

  /** Notes whether a statement changed rows (one written with the COMMIT shares its round trip). */
  answered(text: string, result: pg.QueryResult): pg.QueryResult {
    if (WRITES.test(text) && (result.rowCount ?? 0) > 0) this.wrote = true;
    return result;
  }

  /**
   * Statements written together, each after the one before it has run (its own snapshot, the locks the
   * earlier ones took held): one round trip. If one fails, those after it fail with it.
   */
  async together(statements: Array<[text: string, values: unknown[]]>): Promise<Row[][]> {
    const results = await this.send(...statements.map(([text, values]) => prepared(text, values)));
    this.activity.statements -= statements.length - 1; // one round trip
    return results.map((result, i) => this.count(statements[i]![0], result).rows);
  }

  private async send(...queries: pg.QueryConfig[]): Promise<pg.QueryResult[]> {
    if (!this.begun) {
      this.begun = true;
      return (await pipelined(this.client, ["BEGIN", ...queries])).slice(1);
    }
    return queries.length === 1 ? [await this.client.query(queries[0]!)] : pipelined(this.client, queries);
  }

  /**
   * Published with the commit, once per run and kind: the same signal twice in one transaction (a state
   * change's event and the append beside it) wakes its listeners no more than once would.
   */
  signal(...note: SignalNote): void {
    const [name, first] = note as [string, unknown];
    const same = this.notes.findIndex(([n, f]) => n === name && f === first);
    if (same === -1) this.notes.push(note);
    else if (name === "event_appended") this.notes[same] = note; // the latest seq
  }
}

/**
 * Writes `queries` to the connection at once (the pool's connections pipeline: pg sends a query without
 * waiting for the answer to the one before) and waits for every answer: one round trip. Each query is
 * answered on its own, so a failed one does not stop those behind it; inside a transaction a failure
 * aborts it, and the statements after it (a COMMIT included) fail or roll back.
 */
export async function pipelined(
  client: pg.PoolClient,
  queries: Array<string | pg.QueryConfig>,
): Promise<pg.QueryResult[]> {
  return Promise.all(written(client, queries));
}

/** Writes `queries` to the connection in one write (see pipelined); their answers, each on its own. */
function written(
  client: pg.PoolClient,
  queries: Array<string | pg.QueryConfig>,
): Array<Promise<pg.QueryResult>> {
  // Corked, the queries leave in one write rather than one each.
  // (A pool's client is a pg.Client; its type leaves the connection out.)
  const stream = (client as unknown as pg.Client).connection.stream;
  stream.cork();
  try {
    return queries.map((q) => client.query(q));
  } finally {
    stream.uncork();
  }
}

/**
 * The connection pool every statement family works on, transactions that publish their signals with
 * the commit, and the LISTEN connection that brings other replicas' signals in.
 */
export class Database implements Sql {
  readonly signals = new StoreSignals();
  /** Tells this store's notifications from other stores' (another replica, or another store in this process). */
  readonly origin = randomUUID();
  readonly activity: StoreActivity = { commits: 0, statements: 0 };
  private readonly pool: pg.Pool;
  private readonly listener: SignalListener;
  private readonly onError: (err: unknown) => void;

  constructor(url: string, opts: { poolSize?: number; onError?: (err: unknown) => void } = {}) {
    const onError = opts.onError ?? (() => {});
    this.onError = onError;
    const config: pg.PoolConfig = {
      connectionString: url,
      types: TYPES,
      max: opts.poolSize ?? 10,
      // A transaction's BEGIN and its first statement, its COMMIT and what goes with it: one round trip each.
      pipeline: true,
      // A database that does not answer turns into 503s within seconds rather than requests that hang.
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: "dispatch",
    };
    this.pool = new pg.Pool(config);
    // An idle connection that the server drops is removed from the pool; the next query opens another.
    this.pool.on("error", onError);
    this.listener = new SignalListener(
      { connectionString: url, connectionTimeoutMillis: 5_000, application_name: "dispatch-listen" },
      this.signals,
      this.origin,
      onError,
    );
  }

  async rows(text: string, values: unknown[] = []): Promise<Row[]> {
    return this.alone(text, await this.pool.query(prepared(text, values))).rows;
  }

  async row(text: string, values: unknown[] = []): Promise<Row | undefined> {
    return (await this.rows(text, values))[0];
  }

  async changes(text: string, values: unknown[] = []): Promise<number> {
    return this.alone(text, await this.pool.query(prepared(text, values))).rowCount ?? 0;
  }

  /** Counts a statement outside a transaction: one round trip, and a commit of its own when it wrote rows. */
  private alone(text: string, result: pg.QueryResult): pg.QueryResult {
    this.activity.statements += 1;
    if (WRITES.test(text) && (result.rowCount ?? 0) > 0) this.activity.commits += 1;
    return result;
  }

  /**
   * Runs `work` in a READ COMMITTED transaction; statements that must see a row unchanged until the commit
   * lock it (SELECT … FOR UPDATE), which is what makes each change a compare-and-set as on SQLite. The
   * transaction's signals go out with pg_notify just before COMMIT (PostgreSQL delivers them only if it
   * commits) and to this store's own listeners right after it. A deadlock or serialization failure is
   * retried from the start a few times before it is reported (as a conflict).
   */
  async tx<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const { client, lost, release } = await this.checkout();
      let broken = false;
      const tx = new Tx(client, this.activity);
      try {
        let value: T;
        try {
          value = await work(tx);
        } catch (err) {
          if (tx.begun) {
            this.activity.statements += 1;
            tx.begun = false;
            await client.query("ROLLBACK");
          }
          if (err instanceof Rollback) return err.value as T;
          throw err;
        }
        // The notifications travel with the COMMIT, one simple query of literals (the payloads are our
        // own JSON, escaped by the driver), which PostgreSQL delivers only if it commits; the statements
        // the transaction did not wait for go in the same write, ahead of it (BEGIN too, if none was sent).
        const notify = encodeSignals(this.origin, tx.notes).map(
          (payload) =>
            `SELECT pg_notify(${client.escapeLiteral(SIGNAL_CHANNEL)}, ${client.escapeLiteral(payload)}); `,
        );
        const deferred = tx.deferred.splice(0);
        if (!tx.begun && deferred.length === 0 && tx.notes.length === 0) return value; // nothing was asked
        const queries = [...(tx.begun ? [] : ["BEGIN"]), ...deferred.map((d) => d.query)];
        tx.begun = true;
        this.activity.statements += 1;
        const results = await pipelined(client, [...queries, `${notify.join("")}COMMIT`]);
        tx.begun = false;
        const answers = results.slice(queries.length - deferred.length, queries.length);
        for (const [i, d] of deferred.entries()) {
          tx.answered(d.text, answers[i]!);
          d.check?.(answers[i]!);
        }
        if (tx.wrote) this.activity.commits += 1;
        for (const note of tx.notes) emitNote(this.signals, note);
        return value;
      } catch (err) {
        broken = classifyError(err) === "unavailable";
        // A statement (or the COMMIT's notification) failed: nothing of it stays, and the connection is
        // clean again (a ROLLBACK after a failed COMMIT, with no transaction left, only warns).
        if (tx.begun && !broken) await client.query("ROLLBACK").catch(() => (broken = true));
        if (attempt < 4 && isRetryable(err)) continue;
        throw err;
      } finally {
        // A connection that failed mid-transaction is discarded rather than handed to the next caller.
        release(broken || lost());
      }
    }
  }

  /**
   * A transaction whose statements need nothing from each other's answers: BEGIN, `statements` and COMMIT
   * in one write, one round trip. Each runs after the one before it (its own snapshot, the locks the
   * earlier ones took held). All or nothing: when one fails, those after it fail and the COMMIT answers
   * ROLLBACK (without an error, so every answer is checked). A statement that must notify other stores
   * does so in its SQL (pg_notify, delivered only if it commits; `notification`), and the caller
   * announces to this store's own listeners after the answer. A deadlock or serialization failure is
   * retried as `tx` retries it.
   */
  async transaction(statements: Array<[text: string, values: unknown[]]>): Promise<Row[][]> {
    for (let attempt = 1; ; attempt++) {
      const { client, lost, release } = await this.checkout();
      let broken = false;
      try {
        const queries = statements.map(([text, values]) => prepared(text, values));
        const answers = await Promise.allSettled(written(client, ["BEGIN", ...queries, "COMMIT"]));
        this.activity.statements += 1;
        const failed = answers.find((a) => a.status === "rejected");
        if (failed) {
          const err = failed.reason;
          broken = classifyError(err) === "unavailable" || answers[0]!.status === "rejected";
          if (attempt < 4 && isRetryable(err)) continue;
          throw err;
        }
        const results = answers.map((a) => (a as PromiseFulfilledResult<pg.QueryResult>).value);
        if (results.at(-1)!.command !== "COMMIT") throw new Error("the transaction was rolled back");
        const changed = results
          .slice(1, -1)
          .some((result, i) => WRITES.test(statements[i]![0]) && (result.rowCount ?? 0) > 0);
        if (changed) this.activity.commits += 1;
        return results.slice(1, -1).map((result) => result.rows);
      } finally {
        // Once BEGIN failed, the statements after it ran on their own: the connection is not trusted again.
        release(broken || lost());
      }
    }
  }

  /**
   * The channel and payload that carry `notes` (a few, well under PostgreSQL's payload limit) to other
   * stores: pg_notify's arguments, for a statement that notifies as it commits on its own.
   */
  notification(notes: SignalNote[]): [string, string] {
    return [SIGNAL_CHANNEL, encodeSignals(this.origin, notes)[0]!];
  }

  /** Publishes `note` to this store's own listeners (a statement that notified other stores has committed). */
  announceHere(note: SignalNote): void {
    emitNote(this.signals, note);
  }

  /** Resolves once signals of other stores reach this one. */
  /** Counts the LISTEN connection's (re)connections; undefined while it is not listening. */
  listenerGeneration(): number | undefined {
    return this.listener.generation;
  }

  listening(): Promise<void> {
    return this.listener.ready();
  }

  /** A connection of its own for `work` (the migrations hold a session-level advisory lock on it). */
  async session<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const { client, lost, release } = await this.checkout();
    try {
      return await work(client);
    } finally {
      release(lost());
    }
  }

  /**
   * A connection of the pool for a caller's own statements. While it is checked out the pool does not
   * listen for its errors, and a connection the server drops (a restart, a failover) emits 'error' even
   * when a statement already failed with it: unheard, that event would end the process. Here it is
   * heard, and the connection is discarded at release rather than handed to the next caller.
   */
  private async checkout(): Promise<{
    client: pg.PoolClient;
    lost: () => boolean;
    release: (discard: boolean) => void;
  }> {
    const client = await this.pool.connect();
    let lost = false;
    const onLost = (err: unknown) => {
      lost = true;
      this.onError(err);
    };
    client.on("error", onLost);
    return {
      client,
      lost: () => lost,
      release: (discard) => {
        client.off("error", onLost);
        client.release(discard);
      },
    };
  }

  async close(): Promise<void> {
    await this.listener.close();
    await this.pool.end();
  }
}

/** Statements that change rows (a data-modifying WITH included). */
const WRITES = /^\s*(INSERT|UPDATE|DELETE|WITH)\b/i;

function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === "40001" || code === "40P01";
}

/**
 * Applies, in order, each numbered file of migrations/ that schema_migrations does not list yet, holding
 * an advisory lock for the whole run: replicas starting together wait for the first one and then find
 * nothing left to do. Each file runs in its own transaction with its bookkeeping row.
 */
export async function migrate(db: Database): Promise<void> {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();
  await db.session(async (client) => {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    try {
      await client.query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL)",
      );
      const applied = new Set(
        (await client.query("SELECT version FROM schema_migrations")).rows.map((r) => Number(r.version)),
      );
      for (const file of files) {
        const version = Number.parseInt(file, 10);
        if (applied.has(version)) continue;
        await client.query("BEGIN");
        try {
          await client.query(readFileSync(MIGRATIONS_DIR + file, "utf8"));
          await client.query(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
            [version, file, new Date().toISOString()],
          );
          await client.query("COMMIT");
        } catch (err) {
          await client.query("ROLLBACK");
          throw err;
        }
      }
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]);
    }
  });
}

export async function ping(db: Database): Promise<void> {
  await db.row("SELECT 1");
}

/** Messages of `pg` errors that carry no code but mean the database cannot be reached. */
const UNREACHABLE =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Cannot use a pool after calling end|Client was closed|Client has encountered a connection error/i;

/**
 * As on SQLite: a concurrent change that won (serialization failure, deadlock, a unique key taken
 * meanwhile) is a conflict the caller may retry (409); a database that cannot be reached or is shutting
 * down or out of resources is unavailable (503).
 */
export function classifyError(err: unknown): "conflict" | "unavailable" | undefined {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === "string") {
    if (code === "40001" || code === "40P01" || code === "23505") return "conflict";
    // 08: connection exceptions; 57P01-57P03: shutdown and start-up; 53: insufficient resources.
    if (code.startsWith("08") || /^57P0[1-3]$/.test(code) || code.startsWith("53")) return "unavailable";
    if (
      ["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH"].includes(
        code,
      )
    ) {
      return "unavailable";
    }
  }
  if (err instanceof Error && UNREACHABLE.test(err.message)) return "unavailable";
  return undefined;
}

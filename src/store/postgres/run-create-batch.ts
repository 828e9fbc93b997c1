import type { Database, Row } from "./database.ts";

/**
 * The group commit of plain creates (run-create.ts): the plain creates that arrive in one event-loop turn
 * are written by one statement, one round trip and one server transaction, each answered only once that
 * statement has committed. One create alone in its turn is the single statement it always was. Each row of
 * the batch keeps the single statement's guards on its own: it is inserted only while its key is live and
 * no endpoint of its team takes run.created (that create then goes the transaction path, as alone). If the
 * batch's statement fails, each of its creates is retried alone, so one bad row does not fail the others.
 */

/** A plain create's statement parameters: those of the single statement (run-create.ts), $1 onwards. */
export interface PlainCreate {
  values: unknown[];
}

/** What the statement answered for one create: whether its key was live and whether its run was inserted. */
export interface PlainAnswer {
  live: boolean;
  inserted: boolean;
}

interface Waiting {
  create: PlainCreate;
  resolve: (answer: PlainAnswer) => void;
  reject: (err: unknown) => void;
}

export interface BatchStatements {
  /** The single statement: `$n` parameters, answering one row (live, id). */
  alone: string;
  /** The batch's statement: `$1` the batch's rows as a JSON array of arrays (one element per `$n`). */
  batch: string;
}

/** Per database and statement pair: the creates waiting for the end of the current turn. */
const queues = new WeakMap<Database, Map<string, Waiting[]>>();

export function createInBatch(
  db: Database,
  statements: BatchStatements,
  create: PlainCreate,
): Promise<PlainAnswer> {
  const byStatement = queues.get(db) ?? new Map<string, Waiting[]>();
  queues.set(db, byStatement);
  let queue = byStatement.get(statements.batch);
  if (!queue) {
    const waiting: Waiting[] = [];
    byStatement.set(statements.batch, waiting);
    queue = waiting;
    // setImmediate runs after the I/O callbacks of this turn: every request parsed in it has joined.
    setImmediate(() => {
      byStatement.delete(statements.batch);
      void flush(db, statements, waiting);
    });
  }
  return new Promise((resolve, reject) => queue.push({ create, resolve, reject }));
}

async function flush(db: Database, statements: BatchStatements, waiting: Waiting[]): Promise<void> {
  if (waiting.length > 1) {
    let rows: Row[] | undefined;
    try {
      rows = await db.rows(statements.batch, [JSON.stringify(waiting.map((w) => w.create.values))]);
    } catch {
      rows = undefined; // retried one by one below: the error that matters is the bad row's own
    }
    if (rows) {
      const byOrdinal = new Map(rows.map((r) => [Number(r.ord), r]));
      for (const [i, w] of waiting.entries()) {
        const row = byOrdinal.get(i + 1)!;
        w.resolve({ live: Boolean(row.live), inserted: Boolean(row.inserted) });
      }
      return;
    }
  }
  await Promise.all(waiting.map((w) => createAlone(db, statements.alone, w)));
}

async function createAlone(db: Database, statement: string, w: Waiting): Promise<void> {
  try {
    const row = (await db.row(statement, w.create.values))!;
    w.resolve({ live: Boolean(row.live), inserted: row.id !== null });
  } catch (err) {
    w.reject(err);
  }
}

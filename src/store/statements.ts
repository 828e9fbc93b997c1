import type { Store } from "./store.ts";

/** What each backend writes itself: opening, closing and error handling, and how it learns of revocations. */
type BackendOwn =
  | "kind"
  | "signals"
  | "activity"
  | "migrate"
  | "ping"
  | "classifyError"
  | "close"
  | "keyRevocationMark"
  | "keyRevocationMarkExact";

/** The Store methods that are one statement family's function of the backend's database. */
export type StatementMethod = Exclude<keyof Store, BackendOwn>;

/**
 * A backend's statements: for every such Store method, the function that runs it, taking the backend's
 * database first. Typed against Store, so a statement missing or of another shape does not compile.
 */
export type Statements<Db> = {
  [K in StatementMethod]: Store[K] extends (...args: infer A) => infer R ? (db: Db, ...args: A) => R : never;
};

/**
 * The base of a backend's Store class: its instances carry every statement bound to the database the
 * backend opened, so the class itself holds only what differs between backends.
 */
export function StatementStore<Db>(statements: Statements<Db>): new (db: Db) => Pick<Store, StatementMethod> {
  return class {
    constructor(db: Db) {
      for (const [name, statement] of Object.entries(statements)) {
        const run = statement as (db: Db, ...args: unknown[]) => unknown;
        // Writable like a method on a prototype: a test may stand in for one statement.
        Object.defineProperty(this, name, {
          value: (...args: unknown[]) => run(db, ...args),
          writable: true,
          configurable: true,
        });
      }
    }
  } as new (
    db: Db,
  ) => Pick<Store, StatementMethod>;
}

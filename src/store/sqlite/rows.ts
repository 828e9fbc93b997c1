import type { SQLInputValue } from "node:sqlite";
import type { RunRecord } from "../../model/run.ts";
import { toRun } from "../rows.ts";

/** A row as node:sqlite returns it. */
export type Row = Record<string, SQLInputValue>;

/**
 * The columns of `runs` that toRun reads, for statements that return rows as arrays (runFromValues):
 * API reads of runs select these, not `*` (which also brings the filter columns and the bookkeeping no
 * record carries). Learnt from toRun itself, by mapping a row on which every column reads "0" (not
 * null, so that every optional branch reads its columns too): a field added to toRun is selected
 * without anyone having to remember this list.
 */
const RUN_COLUMN_NAMES: readonly string[] = (() => {
  const read = new Set<string>();
  toRun(
    new Proxy({} as Row, {
      get(_target, name) {
        if (typeof name === "string") read.add(name);
        return "0";
      },
    }),
  );
  return [...read];
})();

export const RUN_COLUMNS = RUN_COLUMN_NAMES.join(", ");

/**
 * A row selected as RUN_COLUMNS with `{ arrays: true }`, read by column name: each name is a getter on the
 * prototype reading its index. Building a plain object key by key instead (over forty keyed stores per
 * run) cost more than the mapping in toRun itself.
 */
class RunValues {
  readonly #values: SQLInputValue[];
  constructor(values: SQLInputValue[]) {
    this.#values = values;
  }
  static {
    RUN_COLUMN_NAMES.forEach((name, i) => {
      Object.defineProperty(RunValues.prototype, name, {
        get(this: RunValues) {
          return this.#values[i];
        },
      });
    });
  }
}

/** A run from the values of a row selected as RUN_COLUMNS with `{ arrays: true }`. */
export function runFromValues(values: SQLInputValue[]): RunRecord {
  return toRun(new RunValues(values) as unknown as Row);
}

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

/** A run from the values of a row selected as RUN_COLUMNS with `{ arrays: true }`. */
export function runFromValues(values: SQLInputValue[]): RunRecord {
  // Filled in the same order every time, so every such row shares one object shape.
  const row: Row = {};
  for (let i = 0; i < RUN_COLUMN_NAMES.length; i++) row[RUN_COLUMN_NAMES[i]!] = values[i]!;
  return toRun(row);
}

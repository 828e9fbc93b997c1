import type { z } from "zod";
import type { UsageGroup } from "../store/usage-report.ts";
import type { UsageReportSchema } from "./schemas/usage.ts";

type UsageReport = z.output<typeof UsageReportSchema>;
type Cell = string | number | null | undefined;

/** The columns a key brings: its value, and for people and schedules their name. */
const KEY_COLUMNS: Record<
  UsageGroup,
  ReadonlyArray<"person" | "person_name" | UsageGroup | "schedule_name">
> = {
  person: ["person", "person_name"],
  repository: ["repository"],
  channel: ["channel"],
  schedule: ["schedule", "schedule_name"],
  model: ["model"],
};

const FIGURES = [
  "runs",
  "input_tokens",
  "output_tokens",
  "cost_usd",
  "known_cost_usd",
  "unpriced_runs",
] as const;

/**
 * The report's rows as CSV (RFC 4180, CRLF line ends) with a header row: the grouped keys, the figures and
 * the period on every row, so that a row read alone says what it covers. No totals row: a spreadsheet
 * sums the columns (by model, though, a run of several models is in several rows; the JSON's totals
 * count it once).
 */
export function usageCsv(report: UsageReport): string {
  const keyColumns = report.group_by.flatMap((k) => KEY_COLUMNS[k]);
  const header = [...keyColumns, ...FIGURES, "from", "to"];
  const lines = report.rows.map((row) =>
    [
      ...keyColumns.map((c) => text(row[c])),
      ...FIGURES.map((c) => row[c]),
      report.period.from,
      report.period.to,
    ]
      .map(cell)
      .join(","),
  );
  return [header.join(","), ...lines].map((line) => `${line}\r\n`).join("");
}

/**
 * A value from a person or a platform (a display name, a repository) neutralised for spreadsheets: one
 * that starts like a formula is prefixed with an apostrophe, so that opening the file runs nothing (OWASP's
 * advice on CSV injection).
 */
function text(value: string | null | undefined): Cell {
  if (value === null || value === undefined) return value;
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

/** A field quoted when it has to be: a comma, a quote or a line break in it. */
function cell(value: Cell): string {
  if (value === null || value === undefined) return "";
  const s = String(value);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

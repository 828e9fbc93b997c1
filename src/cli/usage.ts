import { parseArgs } from "node:util";
import type { z } from "zod";
import type { UsageReportSchema } from "../api/schemas/usage.ts";
import { formatCost } from "../model/run-wording.ts";
import { apiClient, EXIT_OK, printJSON, reportApiError, table } from "./api-output.ts";
import { USAGE_REPORT_USAGE } from "./usage-commands.ts";

// The wire shape, as the server declares it (src/api/schemas/usage.ts).
type UsageReport = z.output<typeof UsageReportSchema>;
type Figures = UsageReport["totals"];

/** The columns each key brings to the table: the name where there is one, else the value. */
const KEY_CELL: Record<
  UsageReport["group_by"][number],
  { header: string; cell: (row: UsageReport["rows"][number]) => string }
> = {
  person: { header: "PERSON", cell: (r) => r.person_name || r.person || "—" },
  repository: { header: "REPOSITORY", cell: (r) => r.repository ?? "(none)" },
  channel: { header: "CHANNEL", cell: (r) => r.channel ?? "(API)" },
  schedule: { header: "SCHEDULE", cell: (r) => (r.schedule ? (r.schedule_name ?? r.schedule) : "(none)") },
  model: { header: "MODEL", cell: (r) => r.model ?? "(no model)" },
};

/** `dispatch usage`: GET /usage as a table, its CSV or its JSON. */
export async function usageCommand(argv: string[]): Promise<number> {
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        from: { type: "string" },
        to: { type: "string" },
        by: { type: "string" },
        csv: { type: "boolean" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
    if (values.help) {
      process.stdout.write(`Usage:\n${USAGE_REPORT_USAGE}\n`);
      return EXIT_OK;
    }
    const query = {
      ...(values.from !== undefined ? { from: values.from } : {}),
      ...(values.to !== undefined ? { to: values.to } : {}),
      ...(values.by !== undefined ? { group_by: values.by } : {}),
      ...(values.csv ? { format: "csv" } : {}),
    };
    if (values.csv) {
      process.stdout.write(await apiClient().get<string>("usage", { query }));
      return EXIT_OK;
    }
    const report = await apiClient().get<UsageReport>("usage", { query });
    if (values.json) printJSON(report);
    else process.stdout.write(render(report));
    return EXIT_OK;
  } catch (err) {
    return reportApiError(err, USAGE_REPORT_USAGE);
  }
}

function render(report: UsageReport): string {
  const keys = report.group_by.map((k) => KEY_CELL[k]);
  const figures = (f: Figures) => [
    String(f.runs),
    f.input_tokens.toLocaleString("en-US"),
    f.output_tokens.toLocaleString("en-US"),
    costCell(f),
  ];
  const rows = report.rows.map((r) => [...keys.map((k) => k.cell(r)), ...figures(r)]);
  const header = [...keys.map((k) => k.header), "RUNS", "INPUT", "OUTPUT", "COST"];
  const period = `${report.period.from} to ${report.period.to}`;
  if (!report.rows.length) return `No runs from ${period}.\n`;
  const total = report.group_by.length
    ? [[...keys.map((_, i) => (i === 0 ? "TOTAL" : "")), ...figures(report.totals)]]
    : [];
  return `From ${period}:\n${table([header, ...rows, ...total])}`;
}

/** "$0.42", or what is known and how many runs it leaves out. */
function costCell(f: Figures): string {
  if (f.cost_usd !== null) return formatCost(f.cost_usd);
  const runs = `${f.unpriced_runs} run${f.unpriced_runs === 1 ? "" : "s"}`;
  return `${formatCost(f.known_cost_usd)} + ${runs} without a price`;
}

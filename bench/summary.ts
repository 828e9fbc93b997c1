/**
 * Collects what the benchmarks recorded (bench/.results/*.json, see support/results.ts) into one
 * Markdown table, bench/RESULTS.md, and prints it. `npm run bench` ends with it.
 *
 *   node bench/summary.ts            writes bench/RESULTS.md
 *   node bench/summary.ts --readme   also replaces the table between the README's bench markers
 *
 * It reads BENCH_RESULTS_DIR when set (bench/run-all.ts sets it to its sitting's directory), else
 * bench/.results/. Results older than BENCH_SUMMARY_MAX_AGE_H hours (default 24) are left out: a table
 * must come from one sitting on one machine, not from figures of another day.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type BenchResults, resultsDir } from "./support/results.ts";

const MAX_AGE_MS = Number(process.env.BENCH_SUMMARY_MAX_AGE_H ?? 24) * 3600_000;
const OUT = fileURLToPath(new URL("./RESULTS.md", import.meta.url));
const README = fileURLToPath(new URL("../README.md", import.meta.url));
const BEGIN = "<!-- bench:begin -->";
const END = "<!-- bench:end -->";

function load(): BenchResults[] {
  const dir = resultsDir();
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .map((f) => JSON.parse(readFileSync(`${dir}${f}`, "utf8")) as BenchResults)
    .filter((r) => Date.now() - Date.parse(r.finishedAt) < MAX_AGE_MS)
    .sort((a, b) => a.finishedAt.localeCompare(b.finishedAt));
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

export function table(results: BenchResults[]): string {
  if (results.length === 0) return "No benchmark results yet: run `npm run bench`.\n";
  const m = results[0]!.machine;
  const loads = results.flatMap((r) => [r.machine.loadBefore, r.machine.loadAfter]);
  const lines = [
    `Machine: ${m.cores} cores (${m.cpu}), ${m.memoryGiB} GiB, Node.js ${m.node}; 1-minute load average ` +
      `${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)} during the run; ` +
      `${results[0]!.finishedAt.slice(0, 10)}.`,
    "",
    "| bench | benchmark | measured | target | met? | note |",
    "|---|---|---|---|---|---|",
  ];
  for (const r of results) {
    for (const row of r.rows) {
      const met = row.met === undefined ? "–" : row.met ? "yes" : "**no**";
      lines.push(
        `| ${r.bench} | ${cell(row.benchmark)} | ${cell(row.measured)} | ${cell(row.target)} | ${met} | ${cell(row.note ?? "")} |`,
      );
    }
  }
  for (const r of results) {
    if (r.details?.length) lines.push("", `${r.bench}:`, "", ...r.details);
  }
  return `${lines.join("\n")}\n`;
}

const results = load();
const text = table(results);
writeFileSync(
  OUT,
  `# Benchmark results\n\nWritten by \`node bench/summary.ts\` (\`npm run bench\`).\n\n${text}`,
);
process.stdout.write(`\n${text}\nwritten to ${OUT}\n`);

if (process.argv.includes("--readme")) {
  const readme = readFileSync(README, "utf8");
  const from = readme.indexOf(BEGIN);
  const to = readme.indexOf(END);
  if (from < 0 || to < from) {
    process.stderr.write(`README.md has no ${BEGIN} … ${END} markers: nothing replaced\n`);
    process.exit(1);
  }
  writeFileSync(README, `${readme.slice(0, from + BEGIN.length)}\n${text}${readme.slice(to)}`);
  process.stdout.write("README.md table replaced\n");
}

import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * What every benchmark leaves for `node bench/summary.ts`: its rows (one figure each, with the target it
 * is held to and whether that was met) in bench/.results/<bench>.json, with the machine and its load at
 * the time, since the figures mean nothing without them.
 */

/** Where a bench run on its own records, and where `node bench/summary.ts` reads by default. */
export const RESULTS_DIR = fileURLToPath(new URL("../.results/", import.meta.url));

/**
 * Where results go now: BENCH_RESULTS_DIR when set (bench/run-all.ts gives its sitting a directory of
 * its own, so a bench someone runs alongside cannot slip its figures into that table), else RESULTS_DIR.
 */
export function resultsDir(): string {
  const dir = process.env.BENCH_RESULTS_DIR;
  return dir ? join(resolve(dir), "/") : RESULTS_DIR;
}

export interface ResultRow {
  /** What was measured, e.g. "Slack command → card posted p50". */
  benchmark: string;
  /** The figure with its unit, e.g. "41 ms". */
  measured: string;
  /** The target this figure is held to, or "report" when there is none. */
  target: string;
  /** undefined when there is no target to meet. */
  met?: boolean;
  /** Why a target is not met, or what the figure is compared with. */
  note?: string;
}

export interface Machine {
  cores: number;
  cpu: string;
  memoryGiB: number;
  node: string;
  /** 1-minute load average when the bench started and when it ended. */
  loadBefore: number;
  loadAfter: number;
}

export interface BenchResults {
  bench: string;
  finishedAt: string;
  machine: Machine;
  rows: ResultRow[];
  /** Markdown printed under the summary table (a bench's own table, e.g. growth curves). */
  details?: string[];
}

/** Taken when a bench starts: the load before it loaded the machine itself. */
export function machineNow(): Omit<Machine, "loadAfter"> {
  return {
    cores: availableParallelism(),
    cpu: cpus()[0]?.model.trim() ?? "unknown",
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    loadBefore: round2(loadavg()[0]!),
  };
}

export function recordResults(
  bench: string,
  started: Omit<Machine, "loadAfter">,
  rows: ResultRow[],
  details?: string[],
): void {
  const dir = resultsDir();
  mkdirSync(dir, { recursive: true });
  const results: BenchResults = {
    bench,
    finishedAt: new Date().toISOString(),
    machine: { ...started, loadAfter: round2(loadavg()[0]!) },
    rows,
    ...(details ? { details } : {}),
  };
  writeFileSync(`${dir}${bench}.json`, `${JSON.stringify(results, null, 2)}\n`);
}

/** The 1-minute load average now, rounded as the results record it. */
export function loadNow(): number {
  return round2(loadavg()[0]!);
}

/**
 * What a bench prints when it starts and beside its table, so a run disturbed by other processes shows
 * where its figures are read: "load average (1 min) 0.52 before, 1.87 after, 2 cores".
 */
export function loadLine(started: Omit<Machine, "loadAfter">, after?: number): string {
  return `load average (1 min) ${started.loadBefore.toFixed(2)} before${after === undefined ? "" : `, ${after.toFixed(2)} after`}, ${started.cores} cores`;
}

/** "12.3 ms" with a precision that suits the size. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return "n/a";
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ms`;
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

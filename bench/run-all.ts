/**
 * `npm run bench`: every benchmark in turn, each in a child process of its own, then the summary table
 * (bench/summary.ts → bench/RESULTS.md and, after the full set, the README's table).
 *
 *   node bench/run-all.ts                 every bench, then `summary.ts --readme`
 *   node bench/run-all.ts slack web       only those, then `summary.ts` (the README keeps its table)
 *
 * A bench that fails does not stop the others: the summary of what did run is still worth having, and
 * the failure is a row of the table and the exit code (1) rather than a missing line. Each bench's wall
 * time and the load average around it are printed, and the wall times go under the table.
 *
 * BENCH_TIMEOUT_S (default 300) bounds each bench: a stuck one is stopped (its whole process group, so
 * the Dispatch processes it started go too) and counted as failed.
 *
 * The whole set has to fit in ten minutes on a 2-core machine, so two benches run shorter here than on
 * their own (CHAIN_ENV; a variable set by the caller wins): the API bench 5 s per run after 1 s of
 * warm-up (alone: 8 s + 2 s), and the scale bench with the sandbox off only (the sandbox's cost is the
 * runtime bench's figure). `npm run bench:api` / `bench:scale` give the longer, steadier version.
 */
import { spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  type BenchResults,
  loadNow,
  machineNow,
  RESULTS_DIR,
  type ResultRow,
  recordResults,
  resultsDir,
} from "./support/results.ts";

/** Script under bench/ and the name it records its results under (support/results.ts). */
const BENCHES = [
  { script: "api/run.ts", results: "api", env: { BENCH_DURATION_S: "5", BENCH_WARMUP_S: "1" } },
  { script: "slack/run.ts", results: "slack" },
  { script: "github/run.ts", results: "github" },
  { script: "linear/run.ts", results: "linear" },
  { script: "runtime/run.ts", results: "runtime" },
  { script: "runtime/run-start.ts", results: "run-start" },
  { script: "delivery/run.ts", results: "delivery" },
  { script: "failover/checkpoint.ts", results: "failover-checkpoint" },
  { script: "failover/failover.ts", results: "failover" },
  { script: "harnesses/run.ts", results: "harnesses" },
  { script: "scale/run.ts", results: "scale", env: { BENCH_SCALE_SANDBOX: "none" } },
  { script: "latency/run.ts", results: "latency" },
  { script: "scale-curves/run.ts", results: "curves" },
  { script: "web/run.ts", results: "web" },
  { script: "web/run-page-paint.ts", results: "run-page" },
] as const;

const BENCH_DIR = fileURLToPath(new URL("./", import.meta.url));
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_S ?? 300) * 1000;
/** After SIGTERM, how long a bench gets to stop its servers before SIGKILL. */
const STOP_GRACE_MS = 15_000;

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

function minutes(msecs: number): string {
  const s = Math.round(msecs / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** The child running now, so that an interrupt stops it (and what it started) before this process exits. */
let running: { pid: number } | undefined;
let interrupted = false;

/** Signals the child's process group: the bench and every server it spawned. */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Runs `node <script> [args]` to completion, with `chainEnv` under the caller's environment; resolves
 * with its exit code (signal or timeout: 1).
 */
function run(
  script: string,
  args: string[] = [],
  timeoutMs?: number,
  chainEnv: Record<string, string> = {},
): Promise<number> {
  return new Promise((resolve) => {
    // Its own process group (detached), so that stopping it reaches the servers it started as well.
    const child = spawn(process.execPath, [script, ...args], {
      cwd: fileURLToPath(new URL("../", import.meta.url)),
      stdio: "inherit",
      env: { ...chainEnv, ...process.env },
      detached: true,
    });
    running = { pid: child.pid! };
    let timedOut = false;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            log(`${script}: still running after ${minutes(timeoutMs)}, stopping it`);
            signalGroup(child.pid!, "SIGTERM");
            setTimeout(() => signalGroup(child.pid!, "SIGKILL"), STOP_GRACE_MS).unref();
          }, timeoutMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      running = undefined;
      // Whatever it left behind in its group (a server it did not stop) goes now.
      signalGroup(child.pid!, "SIGKILL");
      if (interrupted) process.exit(130);
      resolve(timedOut ? 1 : (code ?? 1));
    });
    child.once("error", (err) => {
      clearTimeout(timer);
      running = undefined;
      log(`${script}: could not start: ${err.message}`);
      resolve(1);
    });
  });
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    // The child is in a process group of its own, so the terminal's Ctrl-C reaches only this process.
    interrupted = true;
    if (!running) process.exit(130);
    log(`${signal}: stopping the running bench`);
    signalGroup(running.pid, "SIGTERM");
    setTimeout(() => {
      if (running) signalGroup(running.pid, "SIGKILL");
      process.exit(130);
    }, STOP_GRACE_MS).unref();
  });
}

const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !BENCHES.some((b) => b.results === w || b.script.startsWith(`${w}/`)));
if (unknown.length > 0) {
  log(`unknown bench(es): ${unknown.join(", ")}; known: ${BENCHES.map((b) => b.results).join(", ")}`);
  process.exit(2);
}
const selected =
  wanted.length === 0
    ? BENCHES
    : BENCHES.filter((b) => wanted.some((w) => b.results === w || b.script.startsWith(`${w}/`)));

// This sitting's figures only, in a directory of its own that the children and the summary inherit: an
// older run's rows, or those of a bench someone runs alongside in bench/.results/, stay out of its table.
if (process.env.BENCH_RESULTS_DIR === undefined) {
  process.env.BENCH_RESULTS_DIR = `${RESULTS_DIR}run-all/`;
  rmSync(process.env.BENCH_RESULTS_DIR, { recursive: true, force: true });
} else {
  // The caller's directory: only what this sitting writes is replaced.
  for (const bench of selected) rmSync(`${resultsDir()}${bench.results}.json`, { force: true });
}
const machine = machineNow();
log(
  `${selected.length} benches on ${machine.cores} cores (${machine.cpu}); load average (1 min) ${machine.loadBefore}`,
);
const started = performance.now();
const times: string[] = [];
const failed: string[] = [];
for (const bench of selected) {
  const load = loadNow();
  log(`── ${bench.results} (node bench/${bench.script}), load average (1 min) ${load} ──`);
  const benchStarted = performance.now();
  const chainEnv: Record<string, string> = "env" in bench ? bench.env : {};
  const settings = Object.entries(chainEnv).filter(([k]) => process.env[k] === undefined);
  if (settings.length > 0) log(`   as part of the set: ${settings.map(([k, v]) => `${k}=${v}`).join(" ")}`);
  const code = await run(`${BENCH_DIR}${bench.script}`, [], TIMEOUT_MS, chainEnv);
  const wall = performance.now() - benchStarted;
  log(
    `── ${bench.results}: ${code === 0 ? "done" : `FAILED (exit ${code})`} in ${minutes(wall)}, load average ${load} → ${loadNow()} ──`,
  );
  times.push(`${bench.results} ${minutes(wall)}${code === 0 ? "" : " (failed)"}`);
  if (code !== 0) {
    failed.push(bench.results);
    // A failure is a row of the table; a bench that failed after recording keeps its rows (they say
    // what did get measured) and gains this one.
    recordFailure(bench.results, code, wall);
  }
}
const total = performance.now() - started;
log(`all benches: ${minutes(total)}${failed.length ? `; failed: ${failed.join(", ")}` : ""}`);
recordResults(
  "run-all",
  machine,
  [],
  [
    `Wall time of \`${wanted.length === 0 ? "npm run bench" : `node bench/run-all.ts ${wanted.join(" ")}`}\`: ${minutes(total)} (${times.join(", ")}).`,
  ],
);

const full = selected.length === BENCHES.length;
const summary = await run(`${BENCH_DIR}summary.ts`, full ? ["--readme"] : []);
process.exit(failed.length > 0 || summary !== 0 ? 1 : 0);

function recordFailure(bench: string, code: number, wall: number): void {
  const row: ResultRow = {
    benchmark: `node bench/${BENCHES.find((b) => b.results === bench)!.script}`,
    measured: "the bench failed",
    target: "–",
    met: false,
    note: `exit ${code} after ${minutes(wall)}: see its output`,
  };
  let earlier: BenchResults | undefined;
  try {
    earlier = JSON.parse(readFileSync(`${resultsDir()}${bench}.json`, "utf8")) as BenchResults;
  } catch {
    // it recorded nothing
  }
  recordResults(bench, earlier?.machine ?? machineNow(), [...(earlier?.rows ?? []), row], earlier?.details);
}

/**
 * Scale benchmark: Dispatch replicas on PostgreSQL against the embedded single process on
 * SQLite, on the same machine in the same run.
 *
 *   npm run bench:scale          (= node bench/scale/run.ts)
 *
 * 1. Runs per second: for SQLite (one `dispatch serve` with every role, the baseline) and for PostgreSQL
 *    with 1, 2 and 4 worker processes (`--role worker`) behind one `--role api` process on a fresh
 *    database, a batch of scripted runs (one shell command each) is pushed through the API and timed from
 *    the first created_at to the last finished_at, after a few warm-up runs. Sandbox off
 *    (DISPATCH_SANDBOX=none) and on (bwrap; skipped with the reason when bubblewrap cannot run here).
 * 2. Claim latency: QUEUED → INPROGRESS (created_at → started_at) of runs created one at a time while
 *    every slot is free: notification, wake-up and the claim. The batch's own QUEUED → INPROGRESS is
 *    printed too, but that is mostly waiting for a free slot.
 * 3. API req/s: GET a run, list 20, create, against an API process on PostgreSQL and one on SQLite, each
 *    holding the same number of runs, as a ratio of the SQLite figures.
 *
 * PostgreSQL is the tests' throwaway cluster (test/support/postgres.ts), which runs with fsync off; the
 * SQLite store syncs every commit. The figures favour PostgreSQL by that much and say so.
 *
 * Knobs (environment): BENCH_SCALE_RUNS (300) runs per batch, BENCH_SCALE_WORKERS (1,2; the goal is about
 * the second worker, and on a 2-core machine a fourth measures only contention),
 * BENCH_SCALE_SLOTS (4) runs at once per worker, BENCH_CPU_PROF=<dir> (a CPU profile of each Dispatch process), BENCH_SCALE_SANDBOX (none,bwrap),
 * BENCH_SCALE_CLAIMS (20) idle claims per deployment, BENCH_SCALE_API_SEED (1000) runs stored before the
 * API is measured, BENCH_SCALE_API_S (4) seconds per API call (plus 1 s warm-up; 0 skips part 3).
 * Prints Markdown tables; exits 0 whether the goals are met or not, 1 when the bench itself went wrong.
 */
import { availableParallelism, loadavg } from "node:os";
import { findBwrap } from "../../src/sandbox/bwrap-sandbox.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../../test/support/postgres.ts";
import { machineNow, ms, type ResultRow, recordResults } from "../support/results.ts";
import { type ApiCall, type ApiRate, measureApiRates } from "./api-rates.ts";
import { postgresCpuMs, processCpuMs } from "./cpu.ts";
import {
  type Deployment,
  type SandboxMode,
  startPostgres as startReplicas,
  startSqlite,
} from "./deployment.ts";
import { measureThroughput, type Throughput } from "./throughput.ts";

// 300, not 100: a batch of 100 took under a second, in which the processes' warm-up (8 runs) and the
// batch's ramp weighed on the figure (bench/README.md, "Sixth round: a run's slot…").
const RUNS = wholeNumber("BENCH_SCALE_RUNS", 300, 1);
const WORKERS = (process.env.BENCH_SCALE_WORKERS ?? "1,2").split(",").map((w) => {
  const n = Number(w.trim());
  if (!Number.isInteger(n) || n < 1 || n > 16) throw new Error(`BENCH_SCALE_WORKERS: "${w}" is not 1–16`);
  return n;
});
const SLOTS = wholeNumber("BENCH_SCALE_SLOTS", 4, 1);
const SANDBOXES = (process.env.BENCH_SCALE_SANDBOX ?? "none,bwrap").split(",").map((s) => {
  const mode = s.trim();
  if (mode !== "none" && mode !== "bwrap")
    throw new Error(`BENCH_SCALE_SANDBOX: "${s}" is neither none nor bwrap`);
  return mode as SandboxMode;
});
const CLAIMS = wholeNumber("BENCH_SCALE_CLAIMS", 20, 1);
const API_SEED = wholeNumber("BENCH_SCALE_API_SEED", 1000, 1);
const API_SECONDS = wholeNumber("BENCH_SCALE_API_S", 4, 0);
const WARMUP_RUNS = 8;
const BATCH_TIMEOUT_MS = 300_000;
const GOAL_SECOND_WORKER = 0.8;
/** One worker on PostgreSQL against SQLite on the same machine: its runs/s, and API creates per second. */
const GOAL_ONE_WORKER = 0.8;
const GOAL_CREATE = 0.6;
const GOAL_CLAIM_P99_MS = 10;
/** Two workers, the API process and PostgreSQL each want a core for the scaling goal to be testable. */
const CORES_FOR_GOAL = 4;

interface Row {
  store: "SQLite" | "PostgreSQL";
  workers: number;
  sandbox: SandboxMode;
  result: Throughput;
  load: number;
}

const log = (line: string) => process.stderr.write(`[bench:scale] ${line}\n`);

/** What cleanup() stops when the bench ends or is interrupted. */
let current: Deployment | undefined;
let cluster: PostgresCluster | undefined;

async function main(): Promise<number> {
  const machine = machineNow();
  const cores = availableParallelism();
  const [loadBefore] = loadavg();
  log(`${cores} cores, load average ${loadBefore!.toFixed(2)} (1 min)`);
  if (loadBefore! > 0.5) log("warning: other processes compete for the CPU; the numbers will be noisy");
  const pgProblem = postgresUnavailable();
  if (pgProblem) {
    // Not the bench going wrong: this machine cannot run the comparison at all.
    const reason = `${pgProblem}: this bench needs PostgreSQL (apt-get install -y postgresql)`;
    log(`skipped: ${reason}`);
    recordResults("scale", machine, [
      { benchmark: "PostgreSQL replicas vs SQLite", measured: "skipped", target: "–", note: reason },
    ]);
    return 0;
  }

  const skipped: string[] = [];
  const sandboxes: SandboxMode[] = [];
  for (const mode of SANDBOXES) {
    if (mode === "bwrap") {
      const found = await findBwrap(undefined);
      if ("problem" in found) {
        skipped.push(`sandbox on (bwrap) skipped: ${found.problem}`);
        continue;
      }
    }
    sandboxes.push(mode);
  }
  for (const line of skipped) log(line);

  cluster = await startPostgres();
  const rows: Row[] = [];
  const measure = async (row: Omit<Row, "result" | "load">, start: () => Promise<Deployment>) => {
    const label = `${row.store}${row.store === "PostgreSQL" ? `, ${row.workers} worker(s)` : ""}, sandbox ${row.sandbox}`;
    log(`${label}: starting`);
    const load = loadavg()[0]!;
    current = await start();
    try {
      const deployment = current;
      const port = Number(new URL(cluster!.url("postgres")).port);
      const result = await measureThroughput(
        deployment,
        { runs: RUNS, warmupRuns: WARMUP_RUNS, claimSamples: CLAIMS, timeoutMs: BATCH_TIMEOUT_MS },
        {
          dispatch: () => deployment.processes.reduce((sum, p) => sum + processCpuMs(p.child.proc.pid), 0),
          api: () => (row.store === "PostgreSQL" ? processCpuMs(deployment.api.child.proc.pid) : undefined),
          database: () => (row.store === "PostgreSQL" ? postgresCpuMs(port) : undefined),
        },
      );
      rows.push({ ...row, result, load });
      log(
        `${label}: ${result.runsPerSec.toFixed(1)} runs/s, ${cpuText(result)} CPU per run, idle claim p50 ${result.claim.p50} ms p99 ${result.claim.p99} ms`,
      );
    } finally {
      await current.stop();
      current = undefined;
    }
  };
  for (const sandbox of sandboxes) {
    await measure({ store: "SQLite", workers: 1, sandbox }, () => startSqlite({ slots: SLOTS, sandbox }));
    for (const workers of WORKERS) {
      await measure({ store: "PostgreSQL", workers, sandbox }, () =>
        startReplicas(cluster!, { workers, slots: SLOTS, sandbox }),
      );
    }
  }

  let api: { sqlite: Record<ApiCall, ApiRate>; postgres: Record<ApiCall, ApiRate> } | undefined;
  if (API_SECONDS > 0) {
    const rates = async (start: () => Promise<Deployment>) => {
      current = await start();
      try {
        return await measureApiRates(current.api, { seed: API_SEED, seconds: API_SECONDS, warmupSeconds: 1 });
      } finally {
        await current.stop();
        current = undefined;
      }
    };
    log(`API on SQLite: seeding ${API_SEED} runs, then ${API_SECONDS} s per call`);
    // No executor in either: the runs the bench creates stay QUEUED and nothing but the API uses the CPU.
    const sqlite = await rates(() => startSqlite({ slots: 0, sandbox: "none" }));
    log(`API on PostgreSQL: seeding ${API_SEED} runs, then ${API_SECONDS} s per call`);
    const postgres = await rates(() => startReplicas(cluster!, { workers: 0, slots: 0, sandbox: "none" }));
    api = { sqlite, postgres };
  }

  const [loadAfter] = loadavg();
  print(rows, api, { cores, loadBefore: loadBefore!, loadAfter: loadAfter!, skipped });
  recordResults("scale", machine, resultRows(rows, api, cores, skipped));
  const invalid =
    api !== undefined &&
    [...Object.values(api.sqlite), ...Object.values(api.postgres)].some((r) => r.failures > 0);
  if (invalid)
    console.error(
      "\n!!! THE API FIGURES ARE NOT VALID: some requests failed (non-2xx, errors or timeouts) !!!",
    );
  return invalid ? 1 : 0;
}

// --- output --------------------------------------------------------------------------------------

function print(
  rows: Row[],
  api: { sqlite: Record<ApiCall, ApiRate>; postgres: Record<ApiCall, ApiRate> } | undefined,
  machine: { cores: number; loadBefore: number; loadAfter: number; skipped: string[] },
): void {
  const out: string[] = [];
  const f1 = (x: number) => x.toFixed(1);
  const ratio = (x: number) => `${x.toFixed(2)}×`;
  out.push(
    "",
    `### Runs through Dispatch: ${RUNS} scripted runs per batch, ${SLOTS} slots per worker process`,
    "",
    "| store | worker processes | sandbox | runs/s | vs SQLite | vs 1 worker | added by the last worker(s), per worker, × the first | CPU ms per run (Dispatch (API) + PostgreSQL) | batch QUEUED→INPROGRESS p50 / p99 ms | idle claim p50 / p99 / max ms | load (1 min) at start |",
    "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|",
  );
  for (const row of rows) {
    const sqlite = rows.find((r) => r.store === "SQLite" && r.sandbox === row.sandbox);
    const pgRows = rows.filter((r) => r.store === "PostgreSQL" && r.sandbox === row.sandbox);
    const one = pgRows.find((r) => r.workers === 1);
    const previous = pgRows.filter((r) => r.workers < row.workers).at(-1);
    const added =
      row.store === "PostgreSQL" && one && previous
        ? ratio(
            (row.result.runsPerSec - previous.result.runsPerSec) /
              (row.workers - previous.workers) /
              one.result.runsPerSec,
          )
        : "–";
    out.push(
      `| ${row.store} | ${row.store === "SQLite" ? "1 (all roles)" : row.workers} | ${row.sandbox === "none" ? "off" : "bwrap"} | ${f1(row.result.runsPerSec)} | ${sqlite ? ratio(row.result.runsPerSec / sqlite.result.runsPerSec) : "–"} | ${row.store === "PostgreSQL" && one ? ratio(row.result.runsPerSec / one.result.runsPerSec) : "–"} | ${added} | ${cpuText(row.result)} | ${row.result.queueWait.p50} / ${row.result.queueWait.p99} | ${row.result.claim.p50} / ${row.result.claim.p99} / ${row.result.claim.max} | ${row.load.toFixed(2)} |`,
    );
  }

  if (api) {
    out.push(
      "",
      `### API req/s, ${API_SEED} runs stored, 32 connections, ${API_SECONDS} s per call (one API process, no executor)`,
      "",
      "| call | SQLite req/s | PostgreSQL req/s | PostgreSQL / SQLite |",
      "|---|--:|--:|--:|",
    );
    const labels: Record<ApiCall, string> = {
      get: "GET /runs/{id}",
      list: "GET /runs?limit=20",
      create: "POST /runs",
    };
    for (const call of ["get", "list", "create"] as const) {
      const s = api.sqlite[call];
      const p = api.postgres[call];
      const bad = s.failures + p.failures > 0 ? ` (INVALID: ${s.failures} / ${p.failures} failed)` : "";
      out.push(
        `| ${labels[call]} | ${Math.round(s.reqPerSec)} | ${Math.round(p.reqPerSec)} | ${ratio(p.reqPerSec / s.reqPerSec)}${bad} |`,
      );
    }
  }

  out.push("", "### Goals", "");
  for (const sandbox of new Set(rows.map((r) => r.sandbox))) {
    const pg = rows.filter((r) => r.store === "PostgreSQL" && r.sandbox === sandbox);
    const one = pg.find((r) => r.workers === 1);
    const two = pg.find((r) => r.workers === 2);
    const name = sandbox === "none" ? "sandbox off" : "sandbox on (bwrap)";
    const sqlite = rows.find((r) => r.store === "SQLite" && r.sandbox === sandbox);
    if (one && sqlite) {
      const share = one.result.runsPerSec / sqlite.result.runsPerSec;
      out.push(
        `- ${name}: one PostgreSQL worker does ${ratio(share)} of SQLite's runs/s (goal ≥ ${GOAL_ONE_WORKER}×): ${share >= GOAL_ONE_WORKER ? "met" : "NOT met"}`,
      );
    }
    if (one && two) {
      const added = (two.result.runsPerSec - one.result.runsPerSec) / one.result.runsPerSec;
      out.push(
        `- ${name}: the second worker adds ${ratio(added)} of the first (goal ≥ ${GOAL_SECOND_WORKER}×): ${added >= GOAL_SECOND_WORKER ? "met" : "NOT met"}${machine.cores < CORES_FOR_GOAL ? " (not a verdict on this machine: see below)" : ""}`,
      );
    }
    const worstClaim = Math.max(...pg.map((r) => r.result.claim.p99));
    if (pg.length > 0) {
      out.push(
        `- ${name}: idle claim p99 on PostgreSQL at most ${worstClaim} ms (goal < ${GOAL_CLAIM_P99_MS} ms): ${worstClaim < GOAL_CLAIM_P99_MS ? "met" : "NOT met"}`,
      );
    }
  }
  if (machine.cores < CORES_FOR_GOAL) {
    out.push(
      `- **This machine has no room for the scaling goal**: ${machine.cores} cores, while two workers, the API process and PostgreSQL want ${CORES_FOR_GOAL} (plus this bench's driver). Every added worker competes for the same cores, so the curve above measures contention, not scaling; run it on a machine with ≥ ${CORES_FOR_GOAL} idle cores to judge the goal.`,
    );
  }
  out.push(
    "",
    `Machine: ${machine.cores} cores, load average ${machine.loadBefore.toFixed(2)} before, ${machine.loadAfter.toFixed(2)} after (1 min)${machine.loadBefore > 0.5 ? "; other processes were using the CPU, so read the ratios with care" : ""}.`,
    ...machine.skipped.map((s) => `${s[0]!.toUpperCase()}${s.slice(1)}.`),
    "runs/s: batch size ÷ (last finished_at − first created_at). CPU per run: user + system time of Dispatch's processes (their commands included) and of the PostgreSQL server during the batch, ÷ batch size: the steadier figure on a busy machine.",
    "Claim: created_at → started_at of a run created while every slot is free (API process stamps one, the worker the other; one clock). Batch QUEUED→INPROGRESS is mostly waiting for a slot.",
    "PostgreSQL is the tests' throwaway cluster with fsync and synchronous_commit off; SQLite syncs every commit: the PostgreSQL figures are favoured by that.",
    "",
  );
  process.stdout.write(out.join("\n"));
}

/** The summary's rows: the PostgreSQL goals (README's Performance table) and the figures behind them. */
function resultRows(
  rows: Row[],
  api: { sqlite: Record<ApiCall, ApiRate>; postgres: Record<ApiCall, ApiRate> } | undefined,
  cores: number,
  skipped: string[],
): ResultRow[] {
  const out: ResultRow[] = [];
  for (const sandbox of new Set(rows.map((r) => r.sandbox))) {
    const name = sandbox === "none" ? "sandbox off" : "bwrap";
    const same = rows.filter((r) => r.sandbox === sandbox);
    const pg = same.filter((r) => r.store === "PostgreSQL");
    const one = pg.find((r) => r.workers === 1);
    const two = pg.find((r) => r.workers === 2);
    out.push({
      benchmark: `runs/s, ${name}: SQLite (one process) / PostgreSQL by worker processes`,
      measured: same
        .map(
          (r) =>
            `${r.store === "SQLite" ? "SQLite" : `${r.workers} worker${r.workers > 1 ? "s" : ""}`} ${r.result.runsPerSec.toFixed(1)}`,
        )
        .join(", "),
      target: "report",
      note: `${RUNS} scripted runs per batch, ${SLOTS} slots per worker; CPU ms per run ${same
        .map((r) => `${r.store === "SQLite" ? "SQLite" : `${r.workers}w`} ${cpuText(r.result)}`)
        .join(", ")}`,
    });
    const sqlite = same.find((r) => r.store === "SQLite");
    if (one && sqlite) {
      const share = one.result.runsPerSec / sqlite.result.runsPerSec;
      out.push({
        benchmark: `PostgreSQL, ${name}: one worker's runs/s ÷ SQLite's`,
        measured: `${share.toFixed(2)}× (${one.result.runsPerSec.toFixed(1)} ÷ ${sqlite.result.runsPerSec.toFixed(1)})`,
        target: `≥ ${GOAL_ONE_WORKER}×`,
        met: share >= GOAL_ONE_WORKER,
      });
    }
    if (one && two) {
      const added = (two.result.runsPerSec - one.result.runsPerSec) / one.result.runsPerSec;
      const room = cores >= CORES_FOR_GOAL;
      out.push({
        benchmark: `PostgreSQL, ${name}: runs/s the second worker adds`,
        measured: `${added.toFixed(2)}× the first's`,
        target: `≥ ${GOAL_SECOND_WORKER}× where the machine has room`,
        ...(room ? { met: added >= GOAL_SECOND_WORKER } : {}),
        ...(room ? {} : { note: `no verdict: ${cores} cores, the goal wants ${CORES_FOR_GOAL}` }),
      });
    }
    if (pg.length > 0) {
      const worst = pg.reduce((a, b) => (b.result.claim.p99 > a.result.claim.p99 ? b : a));
      out.push({
        benchmark: `PostgreSQL, ${name}: idle claim (QUEUED → INPROGRESS), worst deployment`,
        measured: `p50 ${ms(worst.result.claim.p50)}, p99 ${ms(worst.result.claim.p99)}`,
        target: `p99 < ${GOAL_CLAIM_P99_MS} ms`,
        met: worst.result.claim.p99 < GOAL_CLAIM_P99_MS,
        note: `${CLAIMS} claims per deployment`,
      });
    }
  }
  if (api) {
    const calls = ["get", "list", "create"] as const;
    out.push({
      benchmark: `API req/s on PostgreSQL ÷ on SQLite (${API_SEED} runs stored)`,
      measured: calls
        .map((c) => `${c} ${(api.postgres[c].reqPerSec / api.sqlite[c].reqPerSec).toFixed(2)}×`)
        .join(", "),
      target: "report",
      note: "the PostgreSQL cluster runs with fsync off",
    });
    const create = api.postgres.create.reqPerSec / api.sqlite.create.reqPerSec;
    out.push({
      benchmark: "API create on PostgreSQL ÷ on SQLite",
      measured: `${create.toFixed(2)}× (${api.postgres.create.reqPerSec.toFixed(0)} ÷ ${api.sqlite.create.reqPerSec.toFixed(0)} req/s)`,
      target: `≥ ${GOAL_CREATE}×`,
      met: create >= GOAL_CREATE,
      note: "the PostgreSQL cluster runs with fsync off",
    });
  }
  for (const reason of skipped)
    out.push({ benchmark: "scale", measured: "skipped", target: "–", note: reason });
  return out;
}

/**
 * "12.3" on SQLite, "8.1 (API 2.9) + 4.0" on PostgreSQL: CPU milliseconds per run, of Dispatch's processes
 * (of which the API process's: its creates and this bench's polling) and of the PostgreSQL server.
 */
function cpuText(result: Throughput): string {
  const { dispatchMs, apiMs, databaseMs } = result.cpuPerRun;
  const api = apiMs === undefined ? "" : ` (API ${apiMs.toFixed(1)})`;
  return databaseMs === undefined
    ? dispatchMs.toFixed(1)
    : `${dispatchMs.toFixed(1)}${api} + ${databaseMs.toFixed(1)}`;
}

// --- knobs and lifecycle -------------------------------------------------------------------------

function wholeNumber(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min)
    throw new Error(`${name} must be a whole number ≥ ${min}, got "${raw}"`);
  return value;
}

let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await current?.stop();
    await cluster?.stop();
  })();
  return cleaning;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping Dispatch and PostgreSQL`);
    void cleanup().finally(() => process.exit(130));
  });
}

try {
  process.exitCode = await main();
} catch (err) {
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}

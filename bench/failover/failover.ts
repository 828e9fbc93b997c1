/**
 * Failover time (docs/architecture.md, "Runs survive their worker"): how long a run waits, once its worker
 * is gone, before another worker continues it. Target (issue: "time from the kill to the run's next event
 * on the other worker"): p50 < the lease + 2 s.
 *
 *   node bench/failover/failover.ts        (npm run bench:failover: checkpoint.ts, then this)
 *
 * A fresh database on the tests' throwaway PostgreSQL cluster (test/support/postgres.ts), one
 * `--role api` process and two `--role worker` processes (each a child with its own data directory, as
 * on separate machines), DISPATCH_LEASE_MS = BENCH_FAILOVER_LEASE_MS, the default sandbox. Two rounds of
 * BENCH_FAILOVER_RUNS scripted runs, each writing a file, sleeping BENCH_FAILOVER_SLEEP_S and checking
 * the file; once every run's first command has its result and its checkpoint is stored, the worker
 * holding most of them is
 *
 *   kill -9'd   per run that moved: from the kill to the "Moved to another worker" event the other
 *               worker writes when it resumes the run (its `at`); also when the loss was noticed (the
 *               "worker was lost" event). Nothing can move before the dead worker's lease runs out, so
 *               the ratio to the lease says how much of the wait is more than that floor.
 *   SIGTERM'd   (a deploy) with DISPATCH_SHUTDOWN_GRACE_MS = BENCH_FAILOVER_GRACE_MS: from the signal to
 *               the same event on the other worker (drain, last checkpoint, hand-back, claim, restore).
 *
 * A new worker replaces the killed one between the rounds. Every run must end SUCCEEDED (its check of
 * the file passed on whichever worker ran it last). Knobs: BENCH_FAILOVER_RUNS (12),
 * BENCH_FAILOVER_LEASE_MS (3000), BENCH_FAILOVER_GRACE_MS (500), BENCH_FAILOVER_SLEEP_S (12).
 * Exits 1 when a run did not succeed or the bench itself went wrong, 0 otherwise (targets met or not).
 */
import pg from "pg";
import { waitFor } from "../../test/support/dispatch.ts";
import { type PostgresCluster, postgresUnavailable, startPostgres } from "../../test/support/postgres.ts";
import { killAgentProcesses } from "../../test/support/server-process.ts";
import { latencySummary } from "../support/acks.ts";
import { type BenchDispatchProcess, startDispatchProcess } from "../support/dispatch.ts";
import { loadLine, loadNow, machineNow, ms, type ResultRow, recordResults } from "../support/results.ts";

const RUNS = wholeNumber("BENCH_FAILOVER_RUNS", 12, 2);
const LEASE_MS = wholeNumber("BENCH_FAILOVER_LEASE_MS", 3000, 1000);
const GRACE_MS = wholeNumber("BENCH_FAILOVER_GRACE_MS", 500, 0);
const SLEEP_S = wholeNumber("BENCH_FAILOVER_SLEEP_S", 12, 1);
/** The target: p50 from the kill to the next event < the lease + this. */
const TARGET_MARGIN_MS = 2000;
const TERMINAL = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"];
const MOVED = /^Moved to another worker/;
const LOST = /^The worker running this run was lost/;

const say = (line: string) => process.stderr.write(`${line}\n`);

// biome-ignore lint/suspicious/noExplicitAny: API bodies and rows are read field by field
type Json = any;

interface Deployment {
  api: BenchDispatchProcess;
  workers: BenchDispatchProcess[];
  databaseUrl: string;
  db: pg.Pool;
}

/** What one round measured, per run that moved. */
interface Round {
  /** Signal → the "Moved to another worker" event, ms. */
  moved: number[];
  /** Signal → the "worker was lost" event, ms (kill only). */
  lost: number[];
  runs: number;
  succeeded: number;
  /** Runs that did not succeed, with how they ended. */
  failures: string[];
}

let cluster: PostgresCluster | undefined;
let deployment: Deployment | undefined;

function workerEnv(databaseUrl: string): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    DISPATCH_ROLES: "worker",
    // Room for every run on either worker: the survivor takes the moved runs at once, not as slots free up.
    DISPATCH_MAX_CONCURRENT_RUNS: String(RUNS),
    DISPATCH_LEASE_MS: String(LEASE_MS),
    DISPATCH_SHUTDOWN_GRACE_MS: String(GRACE_MS),
    // info: a worker prints no curl example, so its URL (for /readyz) comes from the start-up log line.
    DISPATCH_LOG_LEVEL: "info",
  };
}

async function startDeployment(pgCluster: PostgresCluster): Promise<Deployment> {
  const databaseUrl = await pgCluster.createDatabase();
  const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  // The API first: its start runs the migrations, so the workers do not queue behind its advisory lock.
  const api = await startDispatchProcess({
    bench: "failover-api",
    env: {
      DATABASE_URL: databaseUrl,
      DISPATCH_ROLES: "api",
      DISPATCH_LEASE_MS: String(LEASE_MS),
      DISPATCH_LOG_LEVEL: "warn",
    },
  });
  deployment = { api, workers: [], databaseUrl, db };
  deployment.workers = await Promise.all([startWorker(databaseUrl), startWorker(databaseUrl)]);
  return deployment;
}

function startWorker(databaseUrl: string): Promise<BenchDispatchProcess> {
  return startDispatchProcess({ bench: "failover-worker", env: workerEnv(databaseUrl) });
}

/** A run that writes its file, sleeps, then checks the file is still there and intact. */
function fileScript(tag: string): string {
  return `$ echo ${tag} > data.txt\n$ sleep ${SLEEP_S}\n$ grep -qx ${tag} data.txt`;
}

async function createRuns(d: Deployment, round: string): Promise<string[]> {
  return Promise.all(
    Array.from({ length: RUNS }, async (_, i) => {
      const res = await d.api.api("POST", "/api/v1/agent/runs", { prompt: fileScript(`${round}-${i}`) });
      if (res.status !== 200)
        throw new Error(`creating a run: HTTP ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.run_id as string;
    }),
  );
}

/** Every run's first command has its result and the checkpoint taken after it is stored. */
async function waitCheckpointed(d: Deployment, ids: string[]): Promise<void> {
  await waitFor(
    async () => {
      const { rows } = await d.db.query(
        `SELECT count(*)::int AS n FROM run_checkpoints c
          WHERE c.run_id = ANY($1)
            AND EXISTS (SELECT 1 FROM run_events e WHERE e.run_id = c.run_id AND e.type = 'tool_result')`,
        [ids],
      );
      return rows[0].n === ids.length;
    },
    { timeoutMs: 120_000, intervalMs: 100, what: `the first checkpoint of ${ids.length} runs` },
  );
}

/** The worker holding most of the runs, and the runs it holds (worker ids are host:pid:…). */
async function busiestWorker(
  d: Deployment,
  ids: string[],
): Promise<{ worker: BenchDispatchProcess; held: string[] }> {
  const { rows } = await d.db.query("SELECT id, worker_id FROM runs WHERE id = ANY($1)", [ids]);
  const byWorker = d.workers.map((worker) => ({
    worker,
    held: rows
      .filter((r: Json) => String(r.worker_id ?? "").split(":")[1] === String(worker.child.proc.pid))
      .map((r: Json) => String(r.id)),
  }));
  byWorker.sort((a, b) => b.held.length - a.held.length);
  say(`runs per worker: ${byWorker.map((w) => w.held.length).join(" / ")}`);
  return byWorker[0]!;
}

async function waitTerminal(d: Deployment, ids: string[]): Promise<void> {
  await waitFor(
    async () => {
      const { rows } = await d.db.query(
        "SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND state = ANY($2)",
        [ids, TERMINAL],
      );
      return rows[0].n === ids.length;
    },
    {
      timeoutMs: 2 * SLEEP_S * 1000 + LEASE_MS + 120_000,
      intervalMs: 200,
      what: `${ids.length} runs to end`,
    },
  );
}

async function transcriptOf(d: Deployment, id: string): Promise<Json[]> {
  const res = await d.api.api("GET", `/api/v1/agent/runs/${id}/events?limit=1000`);
  if (res.status !== 200) throw new Error(`events of ${id}: HTTP ${res.status}`);
  return res.body.events;
}

/**
 * One round: runs spread over both workers, the busiest one stopped with `signal` once every run is
 * checkpointed, the others left to end; what each moved run waited.
 */
async function round(d: Deployment, signal: "SIGKILL" | "SIGTERM"): Promise<Round> {
  const name = signal === "SIGKILL" ? "kill" : "term";
  const ids = await createRuns(d, name);
  await waitCheckpointed(d, ids);
  const { worker: victim, held } = await busiestWorker(d, ids);
  const survivor = d.workers.find((w) => w !== victim)!;
  const sentAt = Date.now();
  if (signal === "SIGKILL") {
    const exited = new Promise((resolve) => victim.child.proc.once("exit", resolve));
    victim.child.proc.kill("SIGKILL");
    await exited;
    // Its sandboxes die with it (bwrap --die-with-parent); without a sandbox its commands outlive it.
    await killAgentProcesses(victim.dataDir);
  }
  // SIGTERM and the wait for a clean exit (the drain); for a killed one, only its data directory goes.
  await victim.stop();
  say(`${signal} sent to the worker holding ${held.length} of ${ids.length} runs`);
  d.workers = [survivor];

  await waitTerminal(d, ids);
  const result: Round = { moved: [], lost: [], runs: ids.length, succeeded: 0, failures: [] };
  const { rows } = await d.db.query("SELECT id, state, status_message FROM runs WHERE id = ANY($1)", [ids]);
  for (const row of rows) {
    if (row.state === "SUCCEEDED") result.succeeded += 1;
    else result.failures.push(`${row.id} ${row.state}: ${row.status_message ?? ""}`);
  }
  for (const id of held) {
    const transcript = await transcriptOf(d, id);
    const logAt = (pattern: RegExp) =>
      transcript.find((e) => e.type === "log" && pattern.test(String(e.data.message)))?.at as
        | string
        | undefined;
    const moved = logAt(MOVED);
    if (!moved) {
      result.failures.push(`${id}: no "Moved to another worker" event after the ${signal}`);
      continue;
    }
    result.moved.push(Date.parse(moved) - sentAt);
    const lost = logAt(LOST);
    if (lost) result.lost.push(Date.parse(lost) - sentAt);
  }
  return result;
}

async function main(): Promise<number> {
  const started = machineNow();
  say(
    `failover bench: ${RUNS} runs per round, lease ${LEASE_MS} ms, shutdown grace ${GRACE_MS} ms, each run sleeping ${SLEEP_S} s`,
  );
  say(loadLine(started));
  const problem = postgresUnavailable();
  if (problem) {
    // Not the bench going wrong: this machine cannot run it at all.
    const reason = `${problem}: this bench needs PostgreSQL (apt-get install -y postgresql)`;
    say(`skipped: ${reason}`);
    recordResults("failover", started, [
      { benchmark: "failover between workers", measured: "skipped", target: "–", note: reason },
    ]);
    return 0;
  }
  cluster = await startPostgres();
  const d = await startDeployment(cluster);
  const killed = await round(d, "SIGKILL");
  d.workers.push(await startWorker(d.databaseUrl));
  const termed = await round(d, "SIGTERM");

  const kill = latencySummary(killed.moved);
  const term = latencySummary(termed.moved);
  const lost = latencySummary(killed.lost);
  const target = LEASE_MS + TARGET_MARGIN_MS;
  const succeeded = killed.succeeded + termed.succeeded;
  const runs = killed.runs + termed.runs;
  const rows: ResultRow[] = [
    {
      benchmark: `failover after kill -9: kill → the run's next event on the other worker (lease ${LEASE_MS} ms)`,
      measured: `p50 ${ms(kill.p50)}, p99 ${ms(kill.p99)} (${killed.moved.length} runs moved)`,
      target: `p50 < ${ms(target)}`,
      met: kill.p50 < target,
      note: `p50 ${(kill.p50 / LEASE_MS).toFixed(2)}× the lease (the floor); loss noticed p50 ${ms(lost.p50)} after the kill`,
    },
    {
      benchmark: `failover after SIGTERM (a deploy): signal → the run's next event on the other worker (grace ${GRACE_MS} ms)`,
      measured: `p50 ${ms(term.p50)}, p99 ${ms(term.p99)} (${termed.moved.length} runs moved)`,
      target: "report",
      note: "drain (the step under way gets the grace), last checkpoint, hand-back, claim, restore",
    },
    {
      benchmark: "failover: runs SUCCEEDED with their file intact",
      measured: `${succeeded} of ${runs}`,
      target: "all",
      met: succeeded === runs,
    },
  ];
  console.log(
    "| failover | runs moved | p50 | p99 | ratio to the lease | target |\n|---|---|---|---|---|---|",
  );
  console.log(
    `| kill -9 | ${killed.moved.length} | ${ms(kill.p50)} | ${ms(kill.p99)} | ${(kill.p50 / LEASE_MS).toFixed(2)}× | p50 < ${ms(target)}: ${kill.p50 < target ? "met" : "NOT met"} |`,
  );
  console.log(`| SIGTERM | ${termed.moved.length} | ${ms(term.p50)} | ${ms(term.p99)} | – | report |`);
  console.log(`\nruns SUCCEEDED: ${succeeded} of ${runs}; loss noticed p50 ${ms(lost.p50)} after the kill`);
  const failures = [...killed.failures, ...termed.failures];
  for (const failure of failures) say(`not as it should be: ${failure}`);
  say(loadLine(started, loadNow()));
  recordResults("failover", started, rows);
  return failures.length === 0 ? 0 : 1;
}

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
    const d = deployment;
    if (d) {
      await Promise.all([d.api, ...d.workers].map((p) => p.stop()));
      await d.db.end();
      await cluster?.dropDatabase(d.databaseUrl).catch(() => undefined);
    }
    await cluster?.stop();
  })();
  return cleaning;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    say(`${signal}: stopping Dispatch and PostgreSQL`);
    void cleanup().finally(() => process.exit(130));
  });
}

try {
  process.exitCode = await main();
} catch (err) {
  say(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}

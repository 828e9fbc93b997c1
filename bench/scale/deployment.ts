import type { PostgresCluster } from "../../test/support/postgres.ts";
import { type BenchDispatchProcess, startDispatchProcess } from "../support/dispatch.ts";

/**
 * The two shapes of Dispatch the scale benchmark compares: the embedded one (one `dispatch serve` on
 * SQLite with every role) and replicas on PostgreSQL (one `--role api` process in front, N `--role worker`
 * processes claiming runs from the same fresh database). Each process is a child of the bench with its
 * own data directory (its runs' workspaces), as replicas on separate machines would have.
 */

export type SandboxMode = "none" | "bwrap";

export interface Deployment {
  /** The process answering the API (the only one on SQLite). */
  api: BenchDispatchProcess;
  /** Every process, the API's included. */
  processes: BenchDispatchProcess[];
  stop(): Promise<void>;
}

interface Shape {
  /** Runs each worker executes at once (DISPATCH_MAX_CONCURRENT_RUNS); 0 = no executor. */
  slots: number;
  sandbox: SandboxMode;
}

/** BENCH_CPU_PROF=<dir>: each Dispatch process writes a CPU profile there when it stops (bench/README.md). */
function profileFlags(name: string): string[] {
  const dir = process.env.BENCH_CPU_PROF;
  return dir
    ? ["--cpu-prof", `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`]
    : [];
}

function env(shape: Shape, extra: Record<string, string>): Record<string, string> {
  return {
    DISPATCH_MAX_CONCURRENT_RUNS: String(shape.slots),
    DISPATCH_SANDBOX: shape.sandbox,
    ...extra,
  };
}

/** One process on SQLite with every role: the baseline. */
export async function startSqlite(shape: Shape): Promise<Deployment> {
  const api = await startDispatchProcess({
    bench: "scale-sqlite",
    nodeFlags: profileFlags("sqlite"),
    env: env(shape, { DISPATCH_LOG_LEVEL: "warn" }),
  });
  return { api, processes: [api], stop: () => api.stop() };
}

/**
 * A fresh database of `cluster`, one API process on it, then `workers` worker processes started
 * together (the API's start has run the migrations, so they do not queue behind its advisory lock).
 */
export async function startPostgres(
  cluster: PostgresCluster,
  shape: Shape & { workers: number },
): Promise<Deployment> {
  const databaseUrl = await cluster.createDatabase();
  const processes: BenchDispatchProcess[] = [];
  const stop = async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await cluster.dropDatabase(databaseUrl);
  };
  try {
    const api = await startDispatchProcess({
      bench: "scale-pg-api",
      nodeFlags: profileFlags("pg-api"),
      env: env(
        { ...shape, slots: 0 },
        { DATABASE_URL: databaseUrl, DISPATCH_ROLES: "api", DISPATCH_LOG_LEVEL: "warn" },
      ),
    });
    processes.push(api);
    await Promise.all(
      Array.from({ length: shape.workers }, async () => {
        const worker = await startDispatchProcess({
          bench: "scale-pg-worker",
          nodeFlags: profileFlags("pg-worker"),
          // warn, as SQLite's process: the worker's URL (for /readyz) comes from its health line on stdout.
          env: env(shape, {
            DATABASE_URL: databaseUrl,
            DISPATCH_ROLES: "worker",
            DISPATCH_LOG_LEVEL: "warn",
          }),
        });
        processes.push(worker);
      }),
    );
    return { api, processes, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The first process of `deployment` that has exited, with its last output, as an error. */
export function exitedProcess(deployment: Deployment): Error | undefined {
  const gone = deployment.processes.find((p) => p.child.exited);
  return gone ? new Error(`a Dispatch process exited during the bench\n${gone.child.tail()}`) : undefined;
}

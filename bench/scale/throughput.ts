import { randomBytes } from "node:crypto";
import { latencySummary } from "../support/acks.ts";
import type { BenchDispatchProcess } from "../support/dispatch.ts";
import { type Deployment, exitedProcess } from "./deployment.ts";

/**
 * Runs per second through a deployment, and how long a run waits between QUEUED and INPROGRESS, from the
 * runs' own timestamps (created_at is stamped by the API process, started_at by the claiming worker; one
 * machine, one clock).
 *
 * Each run is the scripted harness with one shell command: workspace, sandbox, command, transcript and
 * finish are Dispatch's whole per-run path without a model.
 */

const PROMPT = "Scale bench run\n$ echo scale";
/** Creates in flight at once while the batch is pushed. */
const CREATE_CONCURRENCY = 8;

export interface Throughput {
  runs: number;
  runsPerSec: number;
  /** QUEUED → INPROGRESS while the batch was queued: mostly waiting for a free slot. */
  queueWait: { p50: number; p99: number };
  /** QUEUED → INPROGRESS of a run created while every slot is free: the claim itself. */
  claim: { p50: number; p99: number; max: number };
  /**
   * CPU milliseconds per run of the batch (cpu.ts): Dispatch's processes (their commands included) and
   * the PostgreSQL server (undefined on SQLite, which runs inside Dispatch).
   */
  cpuPerRun: { dispatchMs: number; apiMs: number | undefined; databaseMs: number | undefined };
}

/** CPU milliseconds used so far, sampled around the batch. */
export interface CpuMeter {
  dispatch(): number;
  /** The API process's part of dispatch() when it runs apart from the workers (PostgreSQL); else undefined. */
  api(): number | undefined;
  database(): number | undefined;
}

interface RunTimes {
  id: string;
  state: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  status_message?: { message?: string } | null;
}

export async function measureThroughput(
  deployment: Deployment,
  opts: { runs: number; warmupRuns: number; claimSamples: number; timeoutMs: number },
  cpu: CpuMeter,
): Promise<Throughput> {
  const { api } = deployment;
  // Warm-up: the first runs of each worker pay for its first workspace, sandbox and JIT.
  await finishBatch(deployment, await pushBatch(api, opts.warmupRuns), opts.timeoutMs);

  const cpuBefore = { dispatch: cpu.dispatch(), api: cpu.api(), database: cpu.database() };
  const batch = await pushBatch(api, opts.runs);
  const runs = await finishBatch(deployment, batch, opts.timeoutMs);
  const databaseAfter = cpu.database();
  const apiAfter = cpu.api();
  const cpuPerRun = {
    dispatchMs: (cpu.dispatch() - cpuBefore.dispatch) / runs.length,
    apiMs:
      apiAfter === undefined || cpuBefore.api === undefined
        ? undefined
        : (apiAfter - cpuBefore.api) / runs.length,
    databaseMs:
      databaseAfter === undefined || cpuBefore.database === undefined
        ? undefined
        : (databaseAfter - cpuBefore.database) / runs.length,
  };
  const first = Math.min(...runs.map((r) => Date.parse(r.created_at)));
  const last = Math.max(...runs.map((r) => Date.parse(r.finished_at!)));
  const waits = runs.map((r) => Date.parse(r.started_at!) - Date.parse(r.created_at));

  const claims: number[] = [];
  for (let i = 0; i < opts.claimSamples; i++) {
    const [run] = await finishBatch(deployment, await pushBatch(api, 1), opts.timeoutMs);
    claims.push(Date.parse(run!.started_at!) - Date.parse(run!.created_at));
  }
  const wait = latencySummary(waits);
  return {
    runs: runs.length,
    runsPerSec: (runs.length * 1000) / Math.max(1, last - first),
    queueWait: { p50: wait.p50, p99: wait.p99 },
    claim: latencySummary(claims),
    cpuPerRun,
  };
}

/** Creates `count` runs tagged with a fresh batch id; the batch id. */
async function pushBatch(api: BenchDispatchProcess, count: number): Promise<{ tag: string; count: number }> {
  const tag = randomBytes(6).toString("hex");
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CREATE_CONCURRENCY, count) }, async () => {
      while (next < count) {
        next += 1;
        const res = await api.api("POST", "/api/v1/agent/runs", {
          prompt: PROMPT,
          metadata: { bench_batch: tag },
        });
        if (res.status !== 200) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
      }
    }),
  );
  return { tag, count };
}

/** Waits until every run of the batch has ended, then returns them all; throws unless all SUCCEEDED. */
async function finishBatch(
  deployment: Deployment,
  batch: { tag: string; count: number },
  timeoutMs: number,
): Promise<RunTimes[]> {
  const filter = `metadata[bench_batch]=${batch.tag}`;
  // QUEUED before INPROGRESS: a run moves only forward, so two empty answers in this order mean none is left.
  const deadline = Date.now() + timeoutMs;
  const left = async () => {
    for (const state of ["QUEUED", "INPROGRESS"]) {
      const res = await deployment.api.api("GET", `/api/v1/agent/runs?state=${state}&limit=1&${filter}`);
      if (res.status !== 200) throw new Error(`list answered ${res.status}: ${JSON.stringify(res.body)}`);
      if (res.body.runs.length > 0) return true;
    }
    return false;
  };
  while (await left()) {
    const gone = exitedProcess(deployment);
    if (gone) throw gone;
    if (Date.now() > deadline) throw new Error(`${batch.count} runs did not finish within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, batch.count === 1 ? 10 : 100));
  }
  const runs: RunTimes[] = [];
  let cursor: string | undefined;
  do {
    const res = await deployment.api.api(
      "GET",
      `/api/v1/agent/runs?limit=500&${filter}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    if (res.status !== 200) throw new Error(`list answered ${res.status}: ${JSON.stringify(res.body)}`);
    runs.push(...(res.body.runs as RunTimes[]));
    cursor = res.body.page_info.has_next_page ? res.body.page_info.next_cursor : undefined;
  } while (cursor);
  if (runs.length !== batch.count) throw new Error(`expected ${batch.count} runs, listed ${runs.length}`);
  const failed = runs.filter((r) => r.state !== "SUCCEEDED");
  if (failed.length > 0) {
    const sample = failed[0]!;
    throw new Error(
      `${failed.length} of ${runs.length} runs did not succeed; e.g. ${sample.id} ${sample.state}: ${sample.status_message?.message ?? ""}`,
    );
  }
  return runs;
}

/**
 * Web dashboard benchmark: first paint of the dashboard with 100k runs in the store, and the
 * live feed's fan-out to open dashboards.
 *
 *   npm run bench:web          (= node bench/web/run.ts)
 *
 * - Server time of GET / (the default page: 25 runs, counts by state, schedules, 14 days of usage) and of a
 *   filtered page (state + text search), for a signed-in session: sequential requests on one keep-alive
 *   connection over loopback, so each figure is the server's time plus a loopback round trip, no queueing.
 * - SSE fan-out: BENCH_WATCHERS (500) dashboards hold GET /dashboard/events open; the bench cancels a run
 *   (a state change committed by the API) and times, for every stream, from just before the cancel request
 *   is sent to the frame naming that run arriving — p50/p99 over every stream and change, target p99 < 100 ms.
 *
 * Dispatch runs in a child process (its own core on a 2-core machine); the streams are read here. Prints the
 * load average before and after, since a loaded machine shows in every figure. Exits 1 when the bench itself
 * went wrong (a non-200, a stream that never got a change).
 *
 * Knobs (environment): BENCH_SEEDED_RUNS (default 100000), BENCH_PAGE_REQUESTS (150) per page,
 * BENCH_WATCHERS (500), BENCH_CHANGES (20).
 */
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { Browser, runIdsOf, signInWithKey } from "../../test/web/browser.ts";
import { seedRuns } from "../api/seed.ts";
import { benchDataDir, startDispatchProcess } from "../support/dispatch.ts";
import { machineNow, ms, type ResultRow, recordResults } from "../support/results.ts";
import { RawStream } from "./raw-stream.ts";

const SEEDED_RUNS = positiveNumber("BENCH_SEEDED_RUNS", 100_000);
const PAGE_REQUESTS = positiveNumber("BENCH_PAGE_REQUESTS", 150);
const WATCHERS = positiveNumber("BENCH_WATCHERS", 500);
const CHANGES = positiveNumber("BENCH_CHANGES", 20);
const FANOUT_P99_TARGET_MS = 100;
const PAGE_BYTES_TARGET = 100 * 1024;

async function main(): Promise<number> {
  const machine = machineNow();
  log(
    `load average before: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")} on ${availableParallelism()} cores`,
  );

  const dataDir = await benchDataDir("web");
  log(`seeding ${SEEDED_RUNS.toLocaleString("en")} runs…`);
  const seeded = await seedRuns(join(dataDir, "dispatch.db"), SEEDED_RUNS);
  log(`seeded in ${(seeded.ms / 1000).toFixed(1)} s`);
  const dispatch = await startDispatchProcess({
    bench: "web",
    dataDir,
    env: { DISPATCH_LOG_LEVEL: "warn", DISPATCH_MAX_CONCURRENT_RUNS: "0" },
  });
  const streams: RawStream[] = [];
  try {
    const browser = new Browser(dispatch.url);
    const signedIn = await signInWithKey(browser, dispatch.key);
    if (signedIn.status !== 303) throw new Error(`signing in with the admin key: ${signedIn.status}`);
    const cookie = [...browser.cookies].map(([k, v]) => `${k}=${v}`).join("; ");

    const rows: ResultRow[] = [];
    const pages = [
      { label: "GET / (25 runs, counts, schedules, usage)", path: "/" },
      { label: "GET /?state=SUCCEEDED&q=test (filtered)", path: "/?state=SUCCEEDED&q=test" },
    ];
    for (const page of pages) {
      const first = await browser.get(page.path);
      if (first.status !== 200) throw new Error(`${page.path}: ${first.status}`);
      const bytes = Buffer.byteLength(first.html);
      const times = await timeRequests(browser, page.path);
      log(
        `${page.label}: p50 ${ms(pct(times, 50))}, p99 ${ms(pct(times, 99))}, ${runIdsOf(first).length} rows, ${(bytes / 1024).toFixed(1)} KB`,
      );
      rows.push({
        benchmark: `${page.label} server time p50 / p99`,
        measured: `${ms(pct(times, 50))} / ${ms(pct(times, 99))}`,
        target: "report",
        note: `${SEEDED_RUNS.toLocaleString("en")} runs stored, ${times.length} sequential requests`,
      });
      rows.push({
        benchmark: `${page.label} weight`,
        measured: `${(bytes / 1024).toFixed(1)} KB`,
        target: "< 100 KB",
        met: bytes < PAGE_BYTES_TARGET,
      });
    }

    log(`opening ${WATCHERS} dashboard streams…`);
    for (let i = 0; i < WATCHERS; i++) {
      if (i % 50 === 0) log(`  ${i} open`);
      const stream = await RawStream.open(`${dispatch.url}/dashboard/events`, { cookie });
      if (stream.status !== 200) throw new Error(`stream ${i}: ${stream.status}`);
      streams.push(stream);
    }
    await until(() => streams.every((s) => s.comments > 0), "every stream to open");

    const latencies: number[] = [];
    /** From the cancel's answer (after its commit) to each frame: the feed's own share of the latency. */
    const afterAnswer: number[] = [];
    const cancelTimes: number[] = [];
    /** Per change, first to last stream: how long reading 500 streams takes this process. */
    const spreads: number[] = [];
    for (let i = 0; i < CHANGES; i++) {
      const created = await dispatch.api("POST", "/api/v1/agent/runs", { prompt: `$ echo fan-out ${i}` });
      if (created.status !== 200) throw new Error(`create: ${created.status}`);
      const runId = created.body.run_id as string;
      // Every stream has the new run before the change is timed, so that only the cancel is measured.
      await Promise.all(streams.map((s) => s.waitFor((e) => e.data.includes(runId))));
      const started = performance.now();
      const cancelled = await dispatch.api("POST", `/api/v1/agent/runs/${runId}/cancel`);
      const answered = performance.now();
      cancelTimes.push(answered - started);
      if (cancelled.status !== 200) throw new Error(`cancel: ${cancelled.status}`);
      const frames = await Promise.all(
        streams.map((s) =>
          s.waitFor(
            (e) => e.event === "runs" && e.data.includes(runId) && e.data.includes('"state":"CANCELLED"'),
          ),
        ),
      );
      for (const frame of frames) {
        latencies.push(frame.at - started);
        afterAnswer.push(Math.max(0, frame.at - answered));
      }
      const arrivals = frames.map((f) => f.at);
      spreads.push(Math.max(...arrivals) - Math.min(...arrivals));
    }
    const p50 = pct(latencies, 50);
    const p99 = pct(latencies, 99);
    log(
      `SSE fan-out to ${WATCHERS} dashboards: p50 ${ms(p50)}, p99 ${ms(p99)}, max ${ms(Math.max(...latencies))} (target p99 < ${FANOUT_P99_TARGET_MS} ms) over ${CHANGES} changes`,
    );
    log(
      `  the cancel request itself (commit included): p50 ${ms(pct(cancelTimes, 50))}; from its answer to each frame: p50 ${ms(pct(afterAnswer, 50))}, p99 ${ms(pct(afterAnswer, 99))}; first to last stream per change: p50 ${ms(pct(spreads, 50))}`,
    );
    rows.push({
      benchmark: `SSE fan-out: state change → ${WATCHERS} open dashboards p50 / p99`,
      measured: `${ms(p50)} / ${ms(p99)}`,
      target: `p99 < ${FANOUT_P99_TARGET_MS} ms`,
      met: p99 < FANOUT_P99_TARGET_MS,
      note: `${latencies.length} deliveries; timed from the cancel request to the frame read by this process`,
    });
    log(
      `load average after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
    recordResults("web", machine, rows);
    printTable(rows);
    return 0;
  } finally {
    for (const s of streams) s.close();
    await dispatch.stop();
  }
}

/** Durations (ms) of sequential GETs of `path` after a short warm-up. */
async function timeRequests(browser: Browser, path: string): Promise<number[]> {
  for (let i = 0; i < 10; i++) await browser.get(path);
  const times: number[] = [];
  for (let i = 0; i < PAGE_REQUESTS; i++) {
    const started = performance.now();
    const page = await browser.get(path);
    times.push(performance.now() - started);
    if (page.status !== 200) throw new Error(`${path}: ${page.status}`);
  }
  return times;
}

async function until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function pct(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

function printTable(rows: ResultRow[]): void {
  console.log("\n| Benchmark | Measured | Target | Met |\n|---|---|---|---|");
  for (const r of rows) {
    console.log(
      `| ${r.benchmark} | ${r.measured} | ${r.target} | ${r.met === undefined ? "—" : r.met ? "yes" : "NO"} |`,
    );
  }
}

function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${raw}`);
  return n;
}

function log(line: string): void {
  console.error(line);
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);

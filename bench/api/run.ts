/**
 * HTTP API benchmark (QUALITY.md, Performance): GET run, list runs and create run against a Dispatch
 * holding 100k runs, each compared with a bare node:http JSON endpoint measured in the same run.
 *
 *   npm run bench          (= node bench/api/run.ts)
 *
 * Dispatch and the bare endpoint each run in a child process; autocannon drives the load from this
 * process, so on a 2-core machine the server under test and the load generator get a core each.
 * Everything listens on 127.0.0.1 only. Prints a table and exits 0 whether targets are met or not;
 * exits 1 when the bench itself went wrong (a non-2xx response, connection errors, a child died).
 *
 * Knobs (environment): BENCH_DURATION_S (default 8) and BENCH_WARMUP_S (default 2) per scenario;
 * BENCH_ONLY=get,list,create to run some scenarios (the baseline always runs); BENCH_CPU_PROF=<dir> to
 * start both children with --cpu-prof and write dispatch-*.cpuprofile and bare-*.cpuprofile there when
 * they stop (open them in Chrome DevTools or speedscope).
 */
import { readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { availableParallelism, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { createHistogram } from "node:perf_hooks";
import autocannon from "autocannon";
import { startBareServer } from "../support/bare-server.ts";
import type { BenchChild } from "../support/child.ts";
import { benchDataDir, startDispatchProcess } from "../support/dispatch.ts";
import { seedRuns } from "./seed.ts";

const SEEDED_RUNS = 100_000;
const CONNECTIONS = 64;
/** Run ids each connection cycles through in the GET scenario (64 × 1,000 ≈ most of the store). */
const IDS_PER_CONNECTION = 1_000;
const DURATION_S = positiveNumber("BENCH_DURATION_S", 8);
const WARMUP_S = positiveNumber("BENCH_WARMUP_S", 2);
const ONLY = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined;

interface Target {
  /** Minimum req/s as a fraction of the bare endpoint's. */
  minRatio: number;
  maxP99Ms: number;
}

interface Scenario {
  name: string;
  label: string;
  /** The process serving it, whose CPU use is reported. */
  server: BenchChild;
  url: string;
  options: Partial<autocannon.Options>;
  /** The requests connection number `n` loops over, when they are not all the same. */
  requestsFor?: (n: number) => autocannon.Request[];
  target?: Target;
}

interface Measurement {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  bytesPerResponse: number;
  statusCodes: Record<string, number>;
  /** CPU time used per wall-clock second (1 = one core busy), if readable. */
  serverCpu: number | undefined;
  loadGeneratorCpu: number;
}

/** What cleanup() stops: the servers started so far, each as soon as it is up. */
const servers: Array<{ child: BenchChild; stop(): Promise<void> }> = [];
let dataDir: string | undefined;

async function main(): Promise<number> {
  const load = loadavg()[0]!;
  if (load > 0.5) {
    log(`warning: load average ${load.toFixed(2)} on ${availableParallelism()} cores before starting;`);
    log("         other processes compete for the CPU and the numbers will be noisy");
  }
  dataDir = await benchDataDir("api");

  log(`seeding ${SEEDED_RUNS.toLocaleString("en")} runs…`);
  const { ids, ms } = await seedRuns(join(dataDir, "dispatch.db"), SEEDED_RUNS);
  log(`seeded in ${(ms / 1000).toFixed(1)} s`);

  const [bare, dispatch] = await Promise.all([
    startBareServer(new URL("./bare-json.ts", import.meta.url), {
      nodeFlags: cpuProfileFlags("bare"),
    }).then((started) => {
      servers.push({ child: started.child, stop: () => started.child.stop() });
      return started;
    }),
    startDispatchProcess({
      bench: "api",
      dataDir,
      nodeFlags: cpuProfileFlags("dispatch"),
      env: {
        DISPATCH_LOG_LEVEL: "warn",
        // No executor: the runs created by the bench stay QUEUED and nothing else competes for the core.
        DISPATCH_MAX_CONCURRENT_RUNS: "0",
      },
    }).then((started) => {
      servers.push(started);
      return started;
    }),
  ]);
  log(
    `bare endpoint ${bare.url}, Dispatch ${dispatch.url}${CPU_PROF_DIR ? ` (CPU profiles → ${CPU_PROF_DIR})` : ""}`,
  );
  const auth = { authorization: `Bearer ${dispatch.key}` };
  await sanityCheck(bare.url, dispatch.url, auth, ids[0]!);

  const baseline = { name: "baseline", server: bare.child, url: `${bare.url}/`, options: {} };
  const all: Scenario[] = [
    { ...baseline, label: "bare node:http JSON" },
    {
      name: "get",
      label: "GET /runs/{id}",
      server: dispatch.child,
      url: `${dispatch.url}/api/v1/agent/runs`,
      options: { headers: auth },
      requestsFor: () =>
        sample(ids, IDS_PER_CONNECTION).map((id) => ({ method: "GET", path: `/api/v1/agent/runs/${id}` })),
      target: { minRatio: 0.5, maxP99Ms: 10 },
    },
    {
      name: "list",
      label: "GET /runs?limit=20",
      server: dispatch.child,
      url: `${dispatch.url}/api/v1/agent/runs?limit=20`,
      options: { headers: auth },
      target: { minRatio: 0.5, maxP99Ms: 10 },
    },
    {
      // Last: every request adds a QUEUED run, which the scenarios above should not see.
      name: "create",
      label: "POST /runs",
      server: dispatch.child,
      url: `${dispatch.url}/api/v1/agent/runs`,
      options: { method: "POST", headers: { ...auth, "content-type": "application/json" } },
      requestsFor: (n) => CREATE_PROMPTS.map((prompt, i) => ({ body: createBody(prompt, n, i) })),
      target: { minRatio: 0.25, maxP99Ms: 20 },
    },
    // The baseline again: how much it moved during the run says how far the ratios can be trusted.
    { ...baseline, label: "bare node:http JSON, again" },
  ];
  const scenarios = all.filter((s) => s.name === "baseline" || !ONLY || ONLY.includes(s.name));

  const results: Array<{ scenario: Scenario; m: Measurement }> = [];
  for (const scenario of scenarios) {
    log(`${scenario.label}: warm-up ${WARMUP_S} s, then ${DURATION_S} s at ${CONNECTIONS} connections`);
    await fire(scenario, WARMUP_S);
    const m = await fire(scenario, DURATION_S);
    results.push({ scenario, m });
    log(`  ${Math.round(m.reqPerSec)} req/s, p50 ${m.p50Ms.toFixed(2)} ms, p99 ${m.p99Ms.toFixed(2)} ms`);
    for (const { child } of servers) {
      if (child.exited) throw new Error(`${child.name} exited during "${scenario.label}"\n${child.tail()}`);
    }
  }

  printTable(results);

  const broken = results.filter(({ m }) => m.non2xx > 0 || m.errors > 0 || m.timeouts > 0);
  if (broken.length > 0) {
    console.error("\n!!! THE BENCH IS NOT VALID: some requests failed !!!");
    for (const { scenario, m } of broken) {
      console.error(
        `  ${scenario.label}: ${m.non2xx} non-2xx, ${m.errors} errors, ${m.timeouts} timeouts; statuses ${JSON.stringify(m.statusCodes)}`,
      );
    }
    console.error(`\nDispatch output (last lines):\n${dispatch.child.tail()}`);
    return 1;
  }
  return 0;
}

// --- load ----------------------------------------------------------------------------------------

/** One autocannon run; latency percentiles from our own µs histogram (autocannon's is whole ms). */
function fire(scenario: Scenario, seconds: number): Promise<Measurement> {
  const latencyUs = createHistogram();
  let connection = 0;
  const wallStart = performance.now();
  const serverStart = cpuMsOf(scenario.server.proc.pid);
  const genStart = process.cpuUsage();
  return new Promise((resolvePromise, reject) => {
    const instance = autocannon(
      {
        url: scenario.url,
        connections: CONNECTIONS,
        duration: seconds,
        ...scenario.options,
        ...(scenario.requestsFor
          ? { setupClient: (client) => client.setRequests(scenario.requestsFor!(connection++)) }
          : {}),
      },
      (err, result) => {
        if (err) return reject(err);
        const wallMs = performance.now() - wallStart;
        const serverEnd = cpuMsOf(scenario.server.proc.pid);
        const gen = process.cpuUsage(genStart);
        const statusCodes = Object.fromEntries(
          Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, Number(count)]),
        );
        const responses = Object.values(statusCodes).reduce((a, b) => a + b, 0);
        resolvePromise({
          reqPerSec: result.requests.total / result.duration,
          p50Ms: latencyUs.count ? latencyUs.percentile(50) / 1000 : Number.NaN,
          p99Ms: latencyUs.count ? latencyUs.percentile(99) / 1000 : Number.NaN,
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
          bytesPerResponse: responses ? result.throughput.total / responses : 0,
          statusCodes,
          serverCpu:
            serverStart !== undefined && serverEnd !== undefined
              ? (serverEnd - serverStart) / wallMs
              : undefined,
          loadGeneratorCpu: (gen.user + gen.system) / 1000 / wallMs,
        });
      },
    );
    instance.on("response", (_client, _status, _bytes, ms) => {
      latencyUs.record(Math.max(1, Math.round(ms * 1000)));
    });
  });
}

const CREATE_PROMPTS = [
  "Fix the flaky test in src/checkout/cart.ts; it fails about one run in ten on CI with a timeout.",
  "Add pagination to GET /invoices and update the client in acme/web.\n\nOpen a PR against main.",
  "$ npm test -- --grep checkout",
  "Bump the Node version in CI to 24 and fix whatever breaks. Explain the root cause in the PR.",
];

function createBody(prompt: string, connection: number, i: number): string {
  return JSON.stringify({
    prompt,
    ...(i % 2 === 0 ? { metadata: { bench_connection: String(connection) } } : {}),
  });
}

// --- processes -----------------------------------------------------------------------------------

/** User + system CPU milliseconds of a process, from /proc (Linux); undefined elsewhere. */
function cpuMsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th, in USER_HZ
    // ticks, which Linux fixes at 100 per second for /proc.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

function cpuProfileFlags(name: string): string[] {
  if (!CPU_PROF_DIR) return [];
  return ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF_DIR}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`];
}

/** One request of each kind before loading anything: a broken setup fails here, not as 100k 401s. */
async function sanityCheck(bareUrl: string, url: string, auth: Record<string, string>, id: string) {
  const expectOk = async (what: string, res: Response) => {
    const text = await res.text();
    if (!res.ok) throw new Error(`${what}: ${res.status} ${text}`);
    return text;
  };
  const bare = await expectOk("bare endpoint", await fetch(`${bareUrl}/`));
  const run = await expectOk("GET run", await fetch(`${url}/api/v1/agent/runs/${id}`, { headers: auth }));
  const list = JSON.parse(
    await expectOk("list runs", await fetch(`${url}/api/v1/agent/runs?limit=20`, { headers: auth })),
  ) as { runs: unknown[] };
  if (list.runs.length !== 20) throw new Error(`list runs: expected 20 runs, got ${list.runs.length}`);
  log(
    `response bodies: bare ${bare.length} B, GET run ${run.length} B (this one), list ${list.runs.length} runs`,
  );
}

// --- output --------------------------------------------------------------------------------------

function printTable(results: Array<{ scenario: Scenario; m: Measurement }>): void {
  const baselines = results.filter((r) => r.scenario.name === "baseline").map((r) => r.m.reqPerSec);
  // Ratios are against the mean of the baseline runs (before and after the Dispatch scenarios).
  const baseline = baselines.reduce((a, b) => a + b, 0) / baselines.length;
  const percent = (fraction: number | undefined) =>
    fraction === undefined ? "?" : `${Math.round(fraction * 100)} %`;
  const rows = results.map(({ scenario, m }) => {
    const ratio = m.reqPerSec / baseline;
    const t = scenario.target;
    const misses = t
      ? [ratio < t.minRatio ? "throughput" : "", m.p99Ms >= t.maxP99Ms ? "p99" : ""].filter(Boolean)
      : [];
    const verdict = !t ? "" : misses.length === 0 ? "PASS" : `MISS (${misses.join(", ")})`;
    return [
      scenario.label,
      Math.round(m.reqPerSec).toLocaleString("en"),
      m.p50Ms.toFixed(2),
      m.p99Ms.toFixed(2),
      String(m.non2xx),
      String(m.errors + m.timeouts),
      String(Math.round(m.bytesPerResponse)),
      percent(m.serverCpu),
      percent(m.loadGeneratorCpu),
      `${(ratio * 100).toFixed(1)} %`,
      t ? `≥ ${t.minRatio * 100} %, p99 < ${t.maxP99Ms} ms` : "(baseline)",
      verdict,
    ];
  });
  const header = [
    "scenario",
    "req/s",
    "p50 ms",
    "p99 ms",
    "non-2xx",
    "errors",
    "B/resp",
    "srv CPU",
    "gen CPU",
    "vs bare",
    "target",
    "result",
  ];
  const leftAligned = new Set([0, 10, 11]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (leftAligned.has(i) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();
  console.log(
    `\nDispatch HTTP API, ${SEEDED_RUNS.toLocaleString("en")} runs stored, ${CONNECTIONS} connections, ${DURATION_S} s per scenario`,
  );
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of rows) console.log(line(row));
  const spread = (Math.max(...baselines) - Math.min(...baselines)) / baseline;
  console.log(
    `\nvs bare: against the mean of the ${baselines.length} baseline runs (${Math.round(baseline).toLocaleString("en")} req/s; they differ by ${(spread * 100).toFixed(0)} %${spread > 0.15 ? ": a busy machine, read the ratios with care" : ""}).`,
  );
  console.log("B/resp: bytes per response including headers. Latency: client-side, per request.");
  console.log(
    "srv CPU / gen CPU: CPU time of the server process / of this load generator per second (100 % = one core);\n" +
      "a server well under 100 % means the load generator, not the server, set the pace.",
  );
}

function log(message: string): void {
  console.log(`[bench] ${message}`);
}

function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!(value > 0)) throw new Error(`${name} must be a positive number of seconds, got "${raw}"`);
  return value;
}

/** `n` distinct random items of `items` (partial Fisher–Yates on a copy). */
function sample<T>(items: readonly T[], n: number): T[] {
  const copy = items.slice();
  const count = Math.min(n, copy.length);
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(Math.random() * (copy.length - i));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, count);
}

// --- lifecycle -----------------------------------------------------------------------------------

let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all(servers.map((server) => server.stop()));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  })();
  return cleaning;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`\n[bench] ${signal}: stopping children and removing ${dataDir ?? "nothing"}`);
    void cleanup().finally(() => process.exit(130));
  });
}

try {
  process.exitCode = await main();
} catch (err) {
  console.error(`[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
} finally {
  await cleanup();
}

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
import { type ChildProcess, fork, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createHistogram } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { generateApiKey } from "../../src/auth/api-keys.ts";
import { seedRuns } from "./seed.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
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
  server: Child;
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

const children: Child[] = [];
let dataDir: string | undefined;

async function main(): Promise<number> {
  const load = loadavg()[0]!;
  if (load > 0.5) {
    log(`warning: load average ${load.toFixed(2)} on ${availableParallelism()} cores before starting;`);
    log("         other processes compete for the CPU and the numbers will be noisy");
  }
  const key = generateApiKey();
  dataDir = await mkdtemp(join(tmpdir(), "dispatch-bench-"));

  log(`seeding ${SEEDED_RUNS.toLocaleString("en")} runs…`);
  const { ids, ms } = await seedRuns(join(dataDir, "dispatch.db"), SEEDED_RUNS);
  log(`seeded in ${(ms / 1000).toFixed(1)} s`);

  const [bare, dispatch] = await Promise.all([startBare(), startDispatch(dataDir, key)]);
  log(
    `bare endpoint ${bare.url}, Dispatch ${dispatch.url}${CPU_PROF_DIR ? ` (CPU profiles → ${CPU_PROF_DIR})` : ""}`,
  );
  const auth = { authorization: `Bearer ${key}` };
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
    for (const child of children) {
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

// --- children ------------------------------------------------------------------------------------

/** A child process whose output is kept (the last lines) to explain a failure. */
class Child {
  readonly name: string;
  readonly proc: ChildProcess;
  exited = false;
  private readonly lines: string[] = [];
  private readonly exit: Promise<void>;

  constructor(name: string, proc: ChildProcess) {
    this.name = name;
    this.proc = proc;
    const keep = (chunk: Buffer) => {
      this.lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      this.lines.splice(0, Math.max(0, this.lines.length - 40));
    };
    proc.stdout?.on("data", keep);
    proc.stderr?.on("data", keep);
    this.exit = new Promise((done) =>
      proc.once("exit", () => {
        this.exited = true;
        done();
      }),
    );
    children.push(this);
  }

  tail(): string {
    return this.lines.map((l) => `  | ${l}`).join("\n") || "  (no output)";
  }

  /** SIGTERM (Dispatch shuts down cleanly and writes its CPU profile), SIGKILL if that takes too long. */
  async stop(): Promise<void> {
    if (this.exited) return;
    this.proc.kill("SIGTERM");
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 10_000);
    await this.exit;
    clearTimeout(timer);
  }
}

async function startBare(): Promise<{ url: string; child: Child }> {
  const child = new Child(
    "bare endpoint",
    fork(fileURLToPath(new URL("./bare-server.ts", import.meta.url)), [], {
      stdio: "pipe",
      execArgv: [...process.execArgv, ...cpuProfileFlags("bare")],
    }),
  );
  const port = await new Promise<number>((done, fail) => {
    child.proc.once("message", (msg) => done((msg as { port: number }).port));
    child.proc.once("exit", (code) => fail(new Error(`bare endpoint exited (${code})\n${child.tail()}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

async function startDispatch(dir: string, key: string): Promise<{ url: string; child: Child }> {
  const port = await freePort();
  // Only our settings: a DISPATCH_* or DATABASE_URL from the caller's shell must not leak in.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("DISPATCH_") && k !== "DATABASE_URL"),
  );
  Object.assign(env, {
    DISPATCH_HOST: "127.0.0.1",
    DISPATCH_PORT: String(port),
    DISPATCH_DATA_DIR: dir,
    DISPATCH_LOG_LEVEL: "warn",
    DISPATCH_ADMIN_API_KEY: key,
    // No executor: the runs created by the bench stay QUEUED and nothing else competes for the core.
    DISPATCH_MAX_CONCURRENT_RUNS: "0",
    DISPATCH_RATE_LIMIT_PER_MINUTE: "10000000",
    DISPATCH_RATE_LIMIT_BURST: "10000000",
    DISPATCH_SHUTDOWN_GRACE_MS: "0",
  });
  const child = new Child(
    "Dispatch",
    spawn(process.execPath, [...cpuProfileFlags("dispatch"), "src/main.ts", "serve"], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exited) throw new Error(`Dispatch exited while starting\n${child.tail()}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok) return { url, child };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`Dispatch was not ready within 30 s\n${child.tail()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

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

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
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
    await Promise.all(children.map((c) => c.stop()));
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

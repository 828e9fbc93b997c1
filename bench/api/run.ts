/**
 * HTTP API benchmark: GET run, list runs and create run against a Dispatch
 * holding 100k runs, each compared with a bare node:http endpoint answering the same bytes, measured in
 * the same run just before and just after it.
 *
 *   npm run bench:api          (= node bench/api/run.ts)
 *
 * Dispatch and the bare endpoint each run in a child process; autocannon drives the load from this
 * process, so on a 2-core machine the server under test and the load generator get a core each.
 * Everything listens on 127.0.0.1 only. Prints a table and exits 0 whether targets are met or not;
 * exits 1 when the bench itself went wrong (a non-2xx response, connection errors, a child died).
 *
 * Fair baselines: before loading anything, the bench captures Dispatch's real answers (the GET bodies of
 * a sample of runs, one 20-run list page, one create answer) and the bare endpoint (bare-json.ts) serves
 * exactly those, serialised per request, so each ratio compares servers sending the same bytes. The bare
 * create parses the request body but stores nothing: Dispatch's is durable before it answers.
 *
 * Each scenario runs as bare → Dispatch → bare; its ratio is against the mean of its two bare runs, and
 * the load average is printed before and after each run, so a run disturbed by other processes shows.
 *
 * Knobs (environment): BENCH_DURATION_S (default 8) and BENCH_WARMUP_S (default 2) per run;
 * BENCH_ONLY=get,list,create to run some scenarios; BENCH_CPU_PROF=<dir> to start both children with
 * --cpu-prof and write dispatch-*.cpuprofile and bare-*.cpuprofile there when they stop; summarise one
 * with node bench/profile-summary.ts <file> (bench/README.md has the how-to).
 */
import { readFileSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { availableParallelism, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { createHistogram } from "node:perf_hooks";
import autocannon from "autocannon";
import { startBareServer } from "../support/bare-server.ts";
import type { BenchChild } from "../support/child.ts";
import { benchDataDir, startDispatchProcess } from "../support/dispatch.ts";
import { machineNow, recordResults } from "../support/results.ts";
import { seedRuns } from "./seed.ts";

const SEEDED_RUNS = 100_000;
const CONNECTIONS = 64;
/** Run ids each connection cycles through in the GET scenario (64 × 1,000 ≈ most of the store). */
const IDS_PER_CONNECTION = 1_000;
/** GET bodies the bare endpoint serves in turn: enough for the mix of run sizes. */
const BARE_GET_SAMPLE = 500;
const DURATION_S = positiveNumber("BENCH_DURATION_S", 8);
const WARMUP_S = positiveNumber("BENCH_WARMUP_S", 2);
const ONLY = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined;

interface Target {
  /** Minimum req/s as a fraction of the bare endpoint's. */
  minRatio: number;
  maxP99Ms?: number;
}

/** One autocannon target: a server, a URL and what to send. */
interface Load {
  /** The process serving it, whose CPU use is reported. */
  server: BenchChild;
  url: string;
  options: Partial<autocannon.Options>;
  /** The requests connection number `n` loops over, when they are not all the same. */
  requestsFor?: (n: number) => autocannon.Request[];
}

interface Scenario {
  name: string;
  label: string;
  dispatch: Load;
  /** The bare endpoint answering the same bytes. */
  bare: Load;
  /** Mean body bytes of Dispatch's answers and of the bare endpoint's, from the captured bodies. */
  bodyBytes: { dispatch: number; bare: number };
  target: Target;
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
  /** 1-minute load average just before and just after the measured run. */
  load: [number, number];
}

interface Captured {
  get: unknown[];
  list: unknown;
  create: unknown;
  createStatus: number;
  bytes: { get: number; list: number; create: number };
}

/** What cleanup() stops: the servers started so far, each as soon as it is up. */
const servers: Array<{ child: BenchChild; stop(): Promise<void> }> = [];
let dataDir: string | undefined;

async function main(): Promise<number> {
  const machine = machineNow();
  const load = loadavg()[0]!;
  if (load > 0.5) {
    log(`warning: load average ${load.toFixed(2)} on ${availableParallelism()} cores before starting;`);
    log("         other processes compete for the CPU and the numbers will be noisy");
  }
  dataDir = await benchDataDir("api");

  log(`seeding ${SEEDED_RUNS.toLocaleString("en")} runs…`);
  const { ids, ms } = await seedRuns(join(dataDir, "dispatch.db"), SEEDED_RUNS);
  log(`seeded in ${(ms / 1000).toFixed(1)} s`);

  const dispatch = await startDispatchProcess({
    bench: "api",
    dataDir,
    nodeFlags: cpuProfileFlags("dispatch"),
    env: {
      DISPATCH_LOG_LEVEL: "warn",
      // No executor: the runs created by the bench stay QUEUED and nothing else competes for the core.
      DISPATCH_MAX_CONCURRENT_RUNS: "0",
    },
  });
  servers.push(dispatch);
  const auth = { authorization: `Bearer ${dispatch.key}` };
  const captured = await capture(dispatch.url, auth, ids);
  const bodiesFile = join(dataDir, "bare-bodies.json");
  await writeFile(bodiesFile, JSON.stringify(captured));
  const bare = await startBareServer(new URL("./bare-json.ts", import.meta.url), {
    env: { BENCH_BARE_BODIES: bodiesFile },
    nodeFlags: cpuProfileFlags("bare"),
  });
  servers.push({ child: bare.child, stop: () => bare.child.stop() });
  log(
    `bare endpoint ${bare.url}, Dispatch ${dispatch.url}${CPU_PROF_DIR ? ` (CPU profiles → ${CPU_PROF_DIR})` : ""}`,
  );
  const bareBytes = await checkBare(bare.url);

  const createRequests = (n: number) =>
    CREATE_PROMPTS.map((prompt, i) => ({ body: createBody(prompt, n, i) }));
  const post = { method: "POST", headers: { ...auth, "content-type": "application/json" } };
  const all: Scenario[] = [
    {
      name: "get",
      label: "GET /runs/{id}",
      dispatch: {
        server: dispatch.child,
        url: `${dispatch.url}/api/v1/agent/runs`,
        options: { headers: auth },
        requestsFor: () =>
          sample(ids, IDS_PER_CONNECTION).map((id) => ({ method: "GET", path: `/api/v1/agent/runs/${id}` })),
      },
      bare: { server: bare.child, url: `${bare.url}/get`, options: { headers: auth } },
      bodyBytes: { dispatch: captured.bytes.get, bare: bareBytes.get },
      target: { minRatio: 0.4, maxP99Ms: 10 },
    },
    {
      name: "list",
      label: "GET /runs?limit=20",
      dispatch: {
        server: dispatch.child,
        url: `${dispatch.url}/api/v1/agent/runs?limit=20`,
        options: { headers: auth },
      },
      bare: { server: bare.child, url: `${bare.url}/list`, options: { headers: auth } },
      bodyBytes: { dispatch: captured.bytes.list, bare: bareBytes.list },
      target: { minRatio: 0.3 },
    },
    {
      // Last: every request adds a QUEUED run, which the scenarios above should not see.
      name: "create",
      label: "POST /runs",
      dispatch: {
        server: dispatch.child,
        url: `${dispatch.url}/api/v1/agent/runs`,
        options: post,
        requestsFor: createRequests,
      },
      bare: { server: bare.child, url: `${bare.url}/create`, options: post, requestsFor: createRequests },
      bodyBytes: { dispatch: captured.bytes.create, bare: bareBytes.create },
      target: { minRatio: 0.2, maxP99Ms: 20 },
    },
  ];
  const scenarios = all.filter((s) => !ONLY || ONLY.includes(s.name));

  const results: Result[] = [];
  for (const scenario of scenarios) {
    log(
      `${scenario.label}: bare, Dispatch, bare again; each ${WARMUP_S} s warm-up then ${DURATION_S} s at ${CONNECTIONS} connections`,
    );
    const runs: Measurement[] = [];
    for (const [who, target] of [
      ["bare", scenario.bare],
      ["Dispatch", scenario.dispatch],
      ["bare", scenario.bare],
    ] as const) {
      await fire(target, WARMUP_S);
      const m = await fire(target, DURATION_S);
      runs.push(m);
      log(
        `  ${who.padEnd(8)} ${Math.round(m.reqPerSec)} req/s, p50 ${m.p50Ms.toFixed(2)} ms, p99 ${m.p99Ms.toFixed(2)} ms, load ${m.load[0].toFixed(2)} → ${m.load[1].toFixed(2)}`,
      );
      for (const { child } of servers) {
        if (child.exited) throw new Error(`${child.name} exited during "${scenario.label}"\n${child.tail()}`);
      }
    }
    results.push({ scenario, bareBefore: runs[0]!, dispatch: runs[1]!, bareAfter: runs[2]! });
  }

  printTable(results);

  const broken = results.flatMap((r) =>
    (
      [
        ["bare before", r.bareBefore],
        ["Dispatch", r.dispatch],
        ["bare after", r.bareAfter],
      ] as const
    )
      .filter(([, m]) => m.non2xx > 0 || m.errors > 0 || m.timeouts > 0)
      .map(([who, m]) => ({ label: `${r.scenario.label} (${who})`, m })),
  );
  if (broken.length > 0) {
    console.error("\n!!! THE BENCH IS NOT VALID: some requests failed !!!");
    for (const { label, m } of broken) {
      console.error(
        `  ${label}: ${m.non2xx} non-2xx, ${m.errors} errors, ${m.timeouts} timeouts; statuses ${JSON.stringify(m.statusCodes)}`,
      );
    }
    console.error(`\nDispatch output (last lines):\n${dispatch.child.tail()}`);
    return 1;
  }
  // Only valid figures reach the summary table (bench/summary.ts).
  recordResults(
    "api",
    machine,
    results.map(({ scenario: s, bareBefore, dispatch: d, bareAfter }) => {
      const ratio = d.reqPerSec / ((bareBefore.reqPerSec + bareAfter.reqPerSec) / 2);
      const t = s.target;
      return {
        benchmark: `${s.label}, ${SEEDED_RUNS.toLocaleString("en")} runs stored, ${CONNECTIONS} connections`,
        measured: `${(ratio * 100).toFixed(1)} % of bare (${Math.round(d.reqPerSec).toLocaleString("en")} req/s), p99 ${d.p99Ms.toFixed(1)} ms`,
        target: `≥ ${t.minRatio * 100} % of bare${t.maxP99Ms === undefined ? "" : `, p99 < ${t.maxP99Ms} ms`}`,
        met: ratio >= t.minRatio && (t.maxP99Ms === undefined || d.p99Ms < t.maxP99Ms),
      };
    }),
  );
  return 0;
}

interface Result {
  scenario: Scenario;
  bareBefore: Measurement;
  dispatch: Measurement;
  bareAfter: Measurement;
}

// --- load ----------------------------------------------------------------------------------------

/** One autocannon run; latency percentiles from our own µs histogram (autocannon's is whole ms). */
function fire(scenario: Load, seconds: number): Promise<Measurement> {
  const latencyUs = createHistogram();
  let connection = 0;
  const loadBefore = loadavg()[0]!;
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
          load: [loadBefore, loadavg()[0]!],
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

/**
 * One request of each kind before loading anything (a broken setup fails here, not as 100k 401s), and
 * the answers the bare endpoint will give: the GET bodies of BARE_GET_SAMPLE random runs, the first list
 * page, and one create answer. That create adds one QUEUED run before the read scenarios, which the
 * captured list page already shows.
 */
async function capture(url: string, auth: Record<string, string>, ids: readonly string[]): Promise<Captured> {
  const expectOk = async (what: string, res: Response) => {
    const text = await res.text();
    if (!res.ok) throw new Error(`${what}: ${res.status} ${text}`);
    return text;
  };
  const get: unknown[] = [];
  let getBytes = 0;
  for (const id of sample(ids, BARE_GET_SAMPLE)) {
    const text = await expectOk("GET run", await fetch(`${url}/api/v1/agent/runs/${id}`, { headers: auth }));
    getBytes += Buffer.byteLength(text);
    get.push(JSON.parse(text));
  }
  const createRes = await fetch(`${url}/api/v1/agent/runs`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: createBody(CREATE_PROMPTS[0]!, 0, 0),
  });
  const created = await expectOk("create run", createRes);
  const listed = await expectOk(
    "list runs",
    await fetch(`${url}/api/v1/agent/runs?limit=20`, { headers: auth }),
  );
  const list = JSON.parse(listed) as { runs: unknown[] };
  if (list.runs.length !== 20) throw new Error(`list runs: expected 20 runs, got ${list.runs.length}`);
  const bytes = {
    get: getBytes / get.length,
    list: Buffer.byteLength(listed),
    create: Buffer.byteLength(created),
  };
  log(
    `Dispatch's bodies: GET run ${Math.round(bytes.get)} B on average (${get.length} runs), list ${bytes.list} B, create ${bytes.create} B`,
  );
  return { get, list, create: JSON.parse(created), createStatus: createRes.status, bytes };
}

/** The bare endpoint answers each path, and what it answers has the captured sizes. */
async function checkBare(url: string): Promise<{ get: number; list: number; create: number }> {
  const size = async (what: string, res: Response) => {
    const text = await res.text();
    if (!res.ok) throw new Error(`bare endpoint, ${what}: ${res.status} ${text}`);
    return Buffer.byteLength(text);
  };
  let get = 0;
  for (let i = 0; i < BARE_GET_SAMPLE; i++) get += await size("get", await fetch(`${url}/get`));
  const list = await size("list", await fetch(`${url}/list`));
  const create = await size(
    "create",
    await fetch(`${url}/create`, { method: "POST", body: createBody(CREATE_PROMPTS[0]!, 0, 0) }),
  );
  return { get: get / BARE_GET_SAMPLE, list, create };
}

// --- output --------------------------------------------------------------------------------------

function printTable(results: Result[]): void {
  const percent = (fraction: number | undefined) =>
    fraction === undefined ? "?" : `${Math.round(fraction * 100)} %`;
  const rows: string[][] = [];
  const notes: string[] = [];
  for (const { scenario, bareBefore, dispatch, bareAfter } of results) {
    const bare = (bareBefore.reqPerSec + bareAfter.reqPerSec) / 2;
    const ratio = dispatch.reqPerSec / bare;
    const spread = Math.abs(bareBefore.reqPerSec - bareAfter.reqPerSec) / bare;
    const t = scenario.target;
    const misses = [
      ratio < t.minRatio ? "throughput" : "",
      t.maxP99Ms !== undefined && dispatch.p99Ms >= t.maxP99Ms ? "p99" : "",
    ].filter(Boolean);
    const row = (who: string, m: Measurement, bodyBytes: number, extra: string[]) => [
      `${scenario.label}, ${who}`,
      Math.round(m.reqPerSec).toLocaleString("en"),
      m.p50Ms.toFixed(2),
      m.p99Ms.toFixed(2),
      String(m.non2xx),
      String(m.errors + m.timeouts),
      String(Math.round(bodyBytes)),
      percent(m.serverCpu),
      cpuPerRequest(m)?.toFixed(0) ?? "?",
      percent(m.loadGeneratorCpu),
      `${m.load[0].toFixed(2)}→${m.load[1].toFixed(2)}`,
      ...extra,
    ];
    rows.push(row("bare", bareBefore, scenario.bodyBytes.bare, ["", "", ""]));
    rows.push(
      row("Dispatch", dispatch, scenario.bodyBytes.dispatch, [
        `${(ratio * 100).toFixed(1)} %`,
        `≥ ${t.minRatio * 100} %${t.maxP99Ms !== undefined ? `, p99 < ${t.maxP99Ms} ms` : ""}`,
        misses.length === 0 ? "PASS" : `MISS (${misses.join(", ")})`,
      ]),
    );
    rows.push(row("bare again", bareAfter, scenario.bodyBytes.bare, ["", "", ""]));
    const bareCpu = [cpuPerRequest(bareBefore), cpuPerRequest(bareAfter)];
    const dispatchCpu = cpuPerRequest(dispatch);
    const cpuRatio =
      bareCpu[0] && bareCpu[1] && dispatchCpu ? (bareCpu[0] + bareCpu[1]) / 2 / dispatchCpu : undefined;
    notes.push(
      `${scenario.label}: ${(ratio * 100).toFixed(1)} % of bare (${Math.round(bare).toLocaleString("en")} req/s, its two runs ${(spread * 100).toFixed(0)} % apart${spread > 0.15 ? ": a busy machine, read this ratio with care" : ""}); by CPU time per request ${cpuRatio === undefined ? "?" : `${(cpuRatio * 100).toFixed(1)} %`}`,
    );
  }
  const header = [
    "run",
    "req/s",
    "p50 ms",
    "p99 ms",
    "non-2xx",
    "errors",
    "body B",
    "srv CPU",
    "µs/req",
    "gen CPU",
    "load 1m",
    "vs bare",
    "target",
    "result",
  ];
  const leftAligned = new Set([0, 12, 13]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (leftAligned.has(i) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();
  console.log(
    `\nDispatch HTTP API, ${SEEDED_RUNS.toLocaleString("en")} runs stored, ${CONNECTIONS} connections, ${DURATION_S} s per run, ${availableParallelism()} cores`,
  );
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of rows) console.log(line(row));
  console.log("");
  for (const note of notes) console.log(note);
  console.log(
    "\nvs bare: Dispatch's req/s over the mean of the bare runs just before and after it, the bare endpoint\n" +
      "answering bodies of the same size and shape (captured from this Dispatch; its create stores nothing).\n" +
      "body B: mean response body bytes. load 1m: the 1-minute load average before → after the run.\n" +
      'µs/req: server CPU time per request; "by CPU time per request" compares those (bare ÷ Dispatch), which\n' +
      "other processes disturb less than req/s: when the two ratios disagree, the machine was busy.\n" +
      "Latency: client-side, per request.",
  );
  console.log(
    "srv CPU / gen CPU: CPU time of the server process / of this load generator per second (100 % = one core);\n" +
      "a server well under 100 % means the load generator, not the server, set the pace.",
  );
}

/** Server CPU microseconds per request, if the server's CPU time was readable. */
function cpuPerRequest(m: Measurement): number | undefined {
  return m.serverCpu === undefined || m.reqPerSec === 0 ? undefined : (m.serverCpu * 1e6) / m.reqPerSec;
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

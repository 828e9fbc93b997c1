/**
 * Scale curves: how the cost of each of these grows with its work, so a reader sees
 * what is O(changes) and what is not.
 *
 *   npm run bench:curves          (= node bench/scale-curves/run.ts)
 *
 * 1. Notifier tick: Dispatch in this process with Slack pointed at a FakeSlack and no executor slots;
 *    one run is made through a real slash command (its binding and card are real), then cloned into
 *    1k / 10k / 100k runs in progress with the same binding and card, all last changed an hour ago. Each
 *    measured tick follows 10 (or 100) of them turning SUCCEEDED; the notifier's own loop is stopped
 *    and Notifier.tick() is timed directly (median of BENCH_CURVES_TICKS ticks).
 * 2. SSE fan-out: `dispatch serve` in a child process; 100 and 500 watchers of one run's event stream;
 *    a scripted run emits an event every 200 ms; for each event, the time from its `at` to its arrival
 *    at the last watcher (both on this machine's clock).
 * 3. Memory: `dispatch serve` in a child process, its RSS idle and with 10 and 40 runs held at once
 *    (scripted: `$ sleep`; builtin: a loopback Anthropic API whose turn is a shell `sleep`), as RSS
 *    growth per run (the runs' own processes are not Dispatch's RSS). The process that forks sandbox
 *    commands is Dispatch's child but not in its RSS: its own figure is reported beside the idle one.
 *
 * Knobs: BENCH_CURVES_SIZES (1000,10000,100000), BENCH_CURVES_TICKS (5), BENCH_CURVES_WATCHERS
 * (100,500), BENCH_CURVES_EVENTS (20), BENCH_CURVES_CONCURRENT (10,40). Exits 0 whether targets are met
 * or not; 1 when the bench itself went wrong.
 */
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { v7 as uuidv7 } from "uuid";
import { signSlackRequest } from "../../src/integrations/slack/signature.ts";
import { waitFor } from "../../test/support/dispatch.ts";
import { startFakeModel } from "../../test/support/fake-model/server.ts";
import { FakeSlack } from "../../test/support/fake-slack.ts";
import { keepAlivePoster, latencySummary } from "../support/acks.ts";
import {
  type BenchDispatchProcess,
  startDispatchInProcess,
  startDispatchProcess,
} from "../support/dispatch.ts";
import { machineNow, ms, type ResultRow, recordResults } from "../support/results.ts";

const list = (name: string, fallback: string) =>
  (process.env[name] ?? fallback).split(",").map((v) => {
    const n = Number(v.trim());
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: "${v}" is not a whole number`);
    return n;
  });
const SIZES = list("BENCH_CURVES_SIZES", "1000,10000,100000");
const TICKS = list("BENCH_CURVES_TICKS", "5")[0]!;
const WATCHERS = list("BENCH_CURVES_WATCHERS", "100,500");
const EVENTS = list("BENCH_CURVES_EVENTS", "20")[0]!;
const CONCURRENT = list("BENCH_CURVES_CONCURRENT", "10,40");
const PARTS = (process.env.BENCH_CURVES_PARTS ?? "notifier,sse,memory").split(",").map((p) => p.trim());
const TICK_TARGET_MS = 20;
const FANOUT_TARGET_MS = 100;
const IDLE_RSS_TARGET_MIB = 150;
const SCRIPTED_PER_RUN_TARGET_MIB = 2;
const SECRET = randomBytes(16).toString("hex");
const log = (line: string) => process.stderr.write(`[bench:curves] ${line}\n`);
const sleep = (msecs: number) => new Promise((r) => setTimeout(r, msecs));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** One line of the growth table: the work, its cost, and the cost's ratio to the previous line's. */
interface CurvePoint {
  what: string;
  work: string;
  workUnits: number;
  cost: number;
  unit: string;
}

// ---------------------------------------------------------------------------------------------------
// 1. Notifier tick

async function notifierCurve(): Promise<CurvePoint[]> {
  const slack = await new FakeSlack().start();
  const bench = await startDispatchInProcess({
    bench: "curves-notifier",
    env: {
      SLACK_BOT_TOKEN: slack.token,
      SLACK_SIGNING_SECRET: SECRET,
      SLACK_API_URL: slack.url,
      // No executor: the seeded runs stay in progress, and nothing but the measured tick reads them.
      DISPATCH_MAX_CONCURRENT_RUNS: "0",
    },
  });
  const points: CurvePoint[] = [];
  try {
    const { store } = bench.dispatch;
    const notifier = bench.dispatch.notifier;
    if (!notifier) throw new Error("the notifier did not start (Slack not configured?)");
    // The template: a real slash command, its binding, and its posted card.
    const body = new URLSearchParams({
      team_id: "T0CURVE",
      channel_id: "C0CURVE",
      user_id: "U0CURVE",
      command: "/agent",
      text: "$ echo template",
      trigger_id: "curve.1",
    }).toString();
    const ts = String(Math.floor(Date.now() / 1000));
    const status = await keepAlivePoster(1)(
      `${bench.url}/slack/events`,
      {
        "content-type": "application/x-www-form-urlencoded",
        "x-slack-request-timestamp": ts,
        "x-slack-signature": signSlackRequest(SECRET, ts, body),
      },
      body,
    );
    if (status !== 200) throw new Error(`slash command answered ${status}`);
    await waitFor(() => slack.calls.some((c) => c.method === "chat.postMessage"), {
      what: "the template card",
    });
    const db = new DatabaseSync(join(bench.dataDir, "dispatch.db"));
    db.exec("PRAGMA busy_timeout = 10000");
    const template = db.prepare("SELECT id FROM runs WHERE source = 'SLACK'").get() as { id: string };
    await waitFor(
      () => db.prepare("SELECT card_ts FROM notifier_cards WHERE run_id = ?").get(template.id)?.card_ts,
      { what: "the template card's ts" },
    );
    await notifier.stop();

    const hourAgo = new Date(Date.now() - 3600_000).toISOString();
    const clone = cloner(db, template.id, hourAgo);
    const ids: string[] = [];
    let changedSoFar = 0;
    let clock = Date.now() + 60_000;
    for (const size of SIZES) {
      const seeded = performance.now();
      db.exec("BEGIN");
      while (ids.length < size) ids.push(clone());
      db.exec("COMMIT");
      db.exec("ANALYZE");
      // The seed's WAL is checkpointed here, not by the first measured commit.
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      log(
        `${size.toLocaleString("en")} runs in progress (seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s)`,
      );
      for (const changes of size === SIZES.at(-1) ? [0, 10, 100] : [10]) {
        const times: number[] = [];
        for (let t = 0; t < TICKS + 1; t++) {
          // Each tick's changes are later than the previous tick's look-back: only they are new.
          clock += 60_000;
          await store.setNotifierCursor("notifier", {
            updatedAt: new Date(clock - 30_000).toISOString(),
            runId: "",
          });
          const finish = db.prepare(
            "UPDATE runs SET state = 'SUCCEEDED', finished_at = ?, updated_at = ?, worker_id = NULL, lease_expires_at = NULL WHERE id = ?",
          );
          db.exec("BEGIN");
          for (let c = 0; c < changes; c++) {
            const at = new Date(clock + c).toISOString();
            finish.run(at, at, ids[changedSoFar++ % ids.length]!);
          }
          db.exec("COMMIT");
          const started = performance.now();
          const { changed } = await notifier.tick(clock + changes + 1);
          const elapsed = performance.now() - started;
          if (changed !== changes) throw new Error(`a tick after ${changes} changes recorded ${changed}`);
          if (t > 0) times.push(elapsed); // the first is a warm-up
        }
        points.push({
          what: `notifier tick, ${changes} changed`,
          work: `${size.toLocaleString("en")} runs in progress`,
          workUnits: size,
          cost: median(times),
          unit: "ms",
        });
      }
    }
    db.close();
  } finally {
    await bench.stop();
    await slack.stop();
  }
  return points;
}

/** Copies the template run, its thread binding and its card into a new run in progress; returns its id. */
function cloner(db: DatabaseSync, templateId: string, updatedAt: string): () => string {
  const statement = (table: string, key: string, set: Record<string, string>) => {
    const cols = (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map(
      (c) => c.name,
    );
    const exprs = cols.map((c) => (c === key ? "?" : (set[c] ?? c)));
    return db.prepare(
      `INSERT INTO ${table} (${cols.join(", ")}) SELECT ${exprs.join(", ")} FROM ${table} WHERE ${key} = ?`,
    );
  };
  const far = "'9999-12-31T00:00:00.000Z'";
  const at = `'${updatedAt}'`;
  const run = statement("runs", "id", {
    session_id: "? || '-session'",
    state: "'INPROGRESS'",
    updated_at: at,
    started_at: at,
    execution_started_at: at,
    worker_id: "'bench-worker'",
    lease_expires_at: far,
  });
  const binding = statement("thread_bindings", "run_id", {});
  const card = statement("notifier_cards", "run_id", { run_updated_at: at });
  return () => {
    const id = uuidv7();
    // The first placeholder is the new id (key column), then session_id's, then the template's id.
    run.run(id, id, templateId);
    binding.run(id, templateId);
    card.run(id, templateId);
    return id;
  };
}

// ---------------------------------------------------------------------------------------------------
// 2. SSE fan-out

async function fanoutCurve(): Promise<{ points: CurvePoint[]; rows: ResultRow[] }> {
  const server = await startDispatchProcess({
    bench: "curves-sse",
    env: { DISPATCH_SANDBOX: "none", DISPATCH_LOG_LEVEL: "warn" },
  });
  const points: CurvePoint[] = [];
  const rows: ResultRow[] = [];
  try {
    for (const watchers of WATCHERS) {
      // The run waits in its first command until every watcher is connected, then emits an event
      // (tool_call, tool_result) every 100 ms.
      const hold = join(server.dataDir, `go-${watchers}`);
      const script = [`$ while [ ! -e ${hold} ]; do sleep 0.05; done`];
      for (let i = 0; i < EVENTS / 2; i++) script.push("$ sleep 0.2");
      const created = await server.api("POST", "/api/v1/agent/runs", { prompt: script.join("\n") });
      if (created.status !== 200 && created.status !== 201)
        throw new Error(`create answered ${created.status}`);
      const runId = created.body.run_id as string;
      const arrivals = new Map<number, { at: number; last: number; count: number }>();
      const streams = await Promise.all(
        Array.from({ length: watchers }, () => watch(server, runId, arrivals)),
      );
      const openedAt = Date.now();
      writeFileSync(hold, "");
      await waitFor(
        async () => (await server.api("GET", `/api/v1/agent/runs/${runId}`)).body.state === "SUCCEEDED",
        { timeoutMs: 60_000, intervalMs: 100, what: "the fan-out run to succeed" },
      );
      await sleep(300);
      for (const s of streams) s.destroy();
      // Events after the watchers were all connected, that every watcher received.
      const spreads = [...arrivals.values()]
        .filter((a) => a.at >= openedAt && a.count === watchers)
        .map((a) => a.last - a.at);
      if (spreads.length === 0) throw new Error(`no event reached all ${watchers} watchers`);
      const s = latencySummary(spreads);
      points.push({
        what: "SSE: event → last watcher, p99",
        work: `${watchers} watchers`,
        workUnits: watchers,
        cost: s.p99,
        unit: "ms",
      });
      rows.push({
        benchmark: `SSE fan-out: event reaches all ${watchers} watchers of one run`,
        measured: `p50 ${ms(s.p50)}, p99 ${ms(s.p99)} (${spreads.length} events)`,
        target: watchers === 500 ? `p99 < ${FANOUT_TARGET_MS} ms` : "report",
        ...(watchers === 500 ? { met: s.p99 < FANOUT_TARGET_MS } : {}),
      });
    }
  } finally {
    await server.stop();
  }
  return { points, rows };
}

/** One EventSource-like reader of a run's events; records when each event (by seq) reached it. */
function watch(
  server: BenchDispatchProcess,
  runId: string,
  arrivals: Map<number, { at: number; last: number; count: number }>,
): Promise<{ destroy(): void }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}/api/v1/agent/runs/${runId}/events`,
      { headers: { authorization: `Bearer ${server.key}`, accept: "text/event-stream" }, agent: false },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`event stream answered ${res.statusCode}`));
        res.setEncoding("utf8");
        let buffer = "";
        res.on("data", (chunk: string) => {
          const now = Date.now();
          buffer += chunk;
          let end = buffer.indexOf("\n\n");
          while (end >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            end = buffer.indexOf("\n\n");
            const data = block.split("\n").find((l) => l.startsWith("data: "));
            if (!data) continue;
            const event = JSON.parse(data.slice(6)) as { seq: number; at: string };
            const a = arrivals.get(event.seq) ?? { at: Date.parse(event.at), last: 0, count: 0 };
            a.last = Math.max(a.last, now);
            a.count++;
            arrivals.set(event.seq, a);
          }
        });
        res.on("error", () => {});
        resolve({ destroy: () => req.destroy() });
      },
    );
    req.on("error", (err) => {
      if (!req.destroyed) reject(err);
    });
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------------
// 3. Memory per concurrent run

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/**
 * The RSS of the process that forks sandbox commands (src/sandbox/command-spawner.ts), a child of
 * Dispatch's own: not in Dispatch's figure, reported beside it. Undefined while none runs.
 */
function commandHelperRssMiB(pid: number): number | undefined {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/);
  for (const child of children.filter(Boolean).map(Number)) {
    try {
      if (readFileSync(`/proc/${child}/cmdline`, "utf8").includes("command-spawner-helper"))
        return rssMiB(child);
    } catch {
      // it exited meanwhile
    }
  }
  return undefined;
}

async function memoryCurve(
  harness: "scripted" | "builtin",
): Promise<{ idle: number; helper: number | undefined; points: CurvePoint[] }> {
  const most = Math.max(...CONCURRENT);
  const fake =
    harness === "builtin"
      ? await startFakeModel(
          Array.from({ length: most * 3 + 10 }, () => ({
            calls: [{ name: "shell", input: { command: "sleep 120" } }],
            usage: { input_tokens: 100, output_tokens: 10 },
          })),
        )
      : undefined;
  const server = await startDispatchProcess({
    bench: `curves-memory-${harness}`,
    env: {
      DISPATCH_SANDBOX: "none",
      DISPATCH_LOG_LEVEL: "warn",
      DISPATCH_MAX_CONCURRENT_RUNS: String(most),
      ...(fake
        ? { ANTHROPIC_API_KEY: "bench-key", ANTHROPIC_BASE_URL: `${fake.baseUrl("anthropic")}/v1` }
        : {}),
    },
  });
  const pid = server.child.proc.pid!;
  const points: CurvePoint[] = [];
  try {
    const create = async () => {
      const res = await server.api(
        "POST",
        "/api/v1/agent/runs",
        harness === "scripted"
          ? { prompt: "$ sleep 120" }
          : { prompt: "Run the command.", config: { model_id: "anthropic/claude-sonnet-4-5" } },
      );
      if (res.status !== 200 && res.status !== 201)
        throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body.run_id as string;
    };
    const held = async (ids: string[]) =>
      waitFor(
        async () => {
          const res = await server.api("GET", "/api/v1/agent/runs?limit=500&state=INPROGRESS");
          // biome-ignore lint/suspicious/noExplicitAny: API answer
          const inProgress = new Set((res.body.runs as any[]).map((r) => r.run_id));
          return ids.every((id) => inProgress.has(id));
        },
        { timeoutMs: 60_000, intervalMs: 200, what: `${ids.length} ${harness} runs in progress` },
      );
    // Warm-up: code paths of one run loaded, then settle.
    const warm = await create();
    await held([warm]);
    if (fake) await waitFor(() => fake.agentRequests().length >= 1, { what: "the warm-up model call" });
    await server.api("POST", `/api/v1/agent/runs/${warm}/cancel`);
    await sleep(1500);
    const idle = rssMiB(pid);
    let ids: string[] = [];
    let helper: number | undefined;
    for (const n of CONCURRENT) {
      while (ids.length < n) ids.push(await create());
      await held(ids);
      // Builtin runs are in their tool call once the model answered each of them.
      if (fake)
        await waitFor(() => fake.agentRequests().length >= 1 + ids.length, {
          timeoutMs: 60_000,
          what: "every run's model call",
        });
      await sleep(1000);
      const rss = rssMiB(pid);
      helper = commandHelperRssMiB(pid) ?? helper;
      points.push({
        what: `${harness} run: Dispatch RSS growth per run`,
        work: `${n} runs at once`,
        workUnits: n,
        cost: (rss - idle) / n,
        unit: "MiB/run",
      });
    }
    for (const id of ids) await server.api("POST", `/api/v1/agent/runs/${id}/cancel`);
    ids = [];
    return { idle, helper, points };
  } finally {
    await server.stop();
    await fake?.close();
  }
}

// ---------------------------------------------------------------------------------------------------

function growthTable(points: CurvePoint[]): string[] {
  const lines = ["| what | work | cost | × cost per 10× work |", "|---|---|---|---|"];
  // Each thing's points together, smallest work first, in the order the things were measured.
  const order = [...new Set(points.map((p) => p.what))];
  const sorted = [...points].sort(
    (a, b) => order.indexOf(a.what) - order.indexOf(b.what) || a.workUnits - b.workUnits,
  );
  let previous: CurvePoint | undefined;
  for (const p of sorted) {
    let growth = "";
    if (previous && previous.what === p.what && previous.workUnits !== p.workUnits) {
      // The cost ratio scaled to a tenfold step of work: 1× is flat, 10× is linear.
      const decades = Math.log10(p.workUnits / previous.workUnits);
      growth = `${((p.cost / previous.cost) ** (1 / decades)).toFixed(2)}×`;
    }
    lines.push(`| ${p.what} | ${p.work} | ${p.cost.toFixed(p.cost < 10 ? 2 : 1)} ${p.unit} | ${growth} |`);
    previous = p;
  }
  return lines;
}

async function main(): Promise<number> {
  const machine = machineNow();
  log(`${machine.cores} cores, load average ${machine.loadBefore} (1 min), Node.js ${machine.node}`);
  const rows: ResultRow[] = [];
  const points: CurvePoint[] = [];

  log("notifier tick");
  const ticks = PARTS.includes("notifier") ? await notifierCurve() : [];
  points.push(...ticks);
  const biggest = ticks.find((p) => p.workUnits === Math.max(...SIZES) && p.what.includes(" 10 changed"));
  const smallest = ticks.find((p) => p.workUnits === Math.min(...SIZES) && p.what.includes(" 10 changed"));
  if (biggest && smallest) {
    const flat = biggest.cost / smallest.cost < 2;
    rows.push({
      benchmark: `notifier tick, ${biggest.work}, 10 changed`,
      measured: `${ms(biggest.cost)} (${(biggest.cost / smallest.cost).toFixed(2)}× the ${smallest.work} figure)`,
      target: `< ${TICK_TARGET_MS} ms, grows with changes not runs`,
      met: biggest.cost < TICK_TARGET_MS && flat,
    });
  }

  log("SSE fan-out");
  const fanout = PARTS.includes("sse") ? await fanoutCurve() : { points: [], rows: [] };
  points.push(...fanout.points);
  rows.push(...fanout.rows);

  for (const harness of PARTS.includes("memory") ? (["scripted", "builtin"] as const) : []) {
    log(`memory: ${harness}`);
    const memory = await memoryCurve(harness);
    points.push(...memory.points);
    if (harness === "scripted") {
      rows.push({
        benchmark: "idle RSS (dispatch serve, after one run)",
        measured: `${memory.idle.toFixed(0)} MiB`,
        target: `< ${IDLE_RSS_TARGET_MIB} MB`,
        met: memory.idle < IDLE_RSS_TARGET_MIB,
      });
      rows.push({
        benchmark: "command helper RSS (its own process, beside dispatch serve)",
        measured: memory.helper === undefined ? "not started" : `${memory.helper.toFixed(0)} MiB`,
        target: "report",
        note: `${Math.max(...CONCURRENT)} commands running; not in the idle figure above`,
      });
    }
    const most = memory.points.at(-1)!;
    rows.push({
      benchmark: `memory per concurrent ${harness} run (${most.work})`,
      measured: `${most.cost.toFixed(2)} MiB`,
      target: harness === "scripted" ? `< ${SCRIPTED_PER_RUN_TARGET_MIB} MB` : "report",
      ...(harness === "scripted" ? { met: most.cost < SCRIPTED_PER_RUN_TARGET_MIB } : {}),
      note: "Dispatch's RSS only; the run's own processes are the agent's",
    });
  }

  const table = growthTable(points);
  process.stdout.write(
    [
      "",
      "Scale curves: the cost of each thing as its work grows (1× per 10× work = flat; 10× = linear)",
      "",
      ...table,
      "",
      `load average: ${machine.loadBefore} before, ${machineNow().loadBefore} after (1 min)`,
      "",
    ].join("\n"),
  );
  recordResults("curves", machine, rows, [
    "Scale curves: each cost as its work grows (per 10× work: 1× is flat, 10× is linear).",
    "",
    ...table,
  ]);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);

/**
 * Run start: from POST /agent/runs to the agent's first model call, for a run in a repository of
 * BENCH_RUN_START_FILES (10,000) files, with a warm mirror and the bubblewrap sandbox. Target p50 < 500 ms.
 *
 *   node bench/runtime/run-start.ts        (npm run bench:run-start)
 *
 * `dispatch serve` in a child process (bwrap, SQLite), the repository served over smart HTTP by git's own
 * http-backend with a token as GitHub takes it (test/support/git-http-server.ts), the builtin harness
 * against the loopback fake model (OpenAI-compatible wire): "first model call" is the fake receiving the
 * agent's request. Its answer is held until the bench has read Dispatch's CPU, then the run ends ("No
 * changes") before the next one is created: one run at a time, after one warm-up run (the mirror, the
 * lazily loaded harness). Each run's time is broken down from its events and its trace (a loopback OTLP
 * collector): the create request, the claim, workspace and sandbox, the repository (fetch, checkout),
 * the agent's start (skill, budget, transcript) and the harness up to its first call.
 *
 * Baseline, measured before each run in the same minutes: what the same start needs at the least —
 * `git clone --shared --no-checkout` of a warm bare mirror of the same repository, `git checkout` of the
 * work branch, and `bwrap … true` (a sandbox started once).
 *
 * Knobs: BENCH_RUN_START_RUNS (20), BENCH_RUN_START_FILES (10000). Exits 1 when a run did not start or
 * succeed (the bench went wrong); no assertion on the figures.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bwrapArgs, probeBwrap } from "../../src/sandbox/bwrap-sandbox.ts";
import { FakeGitHub } from "../../test/support/fake-github.ts";
import { type FakeModel, type ScriptedTurn, startFakeModel } from "../../test/support/fake-model/server.ts";
import { GitHttpServer } from "../../test/support/git-http-server.ts";
import { GitRemotes } from "../../test/support/git-remotes.ts";
import { latencySummary } from "../support/acks.ts";
import { bigRepoFiles } from "../support/big-repo.ts";
import { type BenchDispatchProcess, startDispatchProcess } from "../support/dispatch.ts";
import { loadLine, loadNow, machineNow, ms, type ResultRow, recordResults } from "../support/results.ts";

const RUNS = Number(process.env.BENCH_RUN_START_RUNS ?? 20);
const FILES = Number(process.env.BENCH_RUN_START_FILES ?? 10_000);
const REPO = "bench/big";
const TOKEN = "ghs_benchrunstart00000000000000";
const TARGET_MS = 500;
/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

const say = (line: string) => process.stderr.write(`[bench:run-start] ${line}\n`);

/** The phases of a start, in order; each sample has a duration for every one. */
const PHASES = [
  ["create", "POST /agent/runs answered (the run is durable)"],
  ["claim", "created → claimed"],
  ["workspace", "claimed → repository fetch begins (workspace, sandbox, token)"],
  ["fetch", "repository fetch (ls-remote, mirror)"],
  ["checkout", "workspace checkout"],
  ["agent", "checked out → prompt handed to the harness (skill, budget, transcript)"],
  ["harness", "harness start → first model call"],
] as const;
type Phase = (typeof PHASES)[number][0];

interface Sample {
  totalMs: number;
  phases: Record<Phase, number>;
  /** Dispatch's CPU (its own and its finished children's: git, bwrap) from create to first call. */
  cpuMs: number;
  baselineMs: number;
}

interface OtlpSpan {
  traceId: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: Array<{ key: string; value: { stringValue?: string } }>;
}

/** A loopback OTLP/HTTP (JSON) collector: the spans Dispatch exports. */
async function startCollector(): Promise<{ server: Server; url: string; spans: OtlpSpan[] }> {
  const spans: OtlpSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
        for (const rs of body.resourceSpans ?? [])
          for (const ss of rs.scopeSpans ?? []) spans.push(...((ss.spans ?? []) as OtlpSpan[]));
      } catch {
        // not a trace export
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans };
}

/** CPU time of `pid` and its waited-for children, in ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime, stime, cutime, cstime: fields 14–17 of stat(5), 12–15 after the command.
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
  return (ticks * 1000) / TICKS_PER_SECOND;
}

async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 60_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** The least the same start needs: a shared clone of a warm mirror, its checkout, a sandbox started once. */
function baseline(mirror: string, scratch: string, bwrap: string): number {
  const dir = join(scratch, `baseline-${Date.now()}`);
  const started = performance.now();
  execFileSync("git", ["clone", "--quiet", "--shared", "--no-checkout", mirror, dir]);
  execFileSync("git", ["-C", dir, "checkout", "--quiet", "-B", "work", "origin/main"]);
  execFileSync(bwrap, [...bwrapArgs({ workspace: dir, hide: [], network: "none" }), "true"]);
  // Removed with the scratch directory at the end: deleting 10,000 files now would slow the run measured next.
  return performance.now() - started;
}

async function oneRun(
  d: BenchDispatchProcess,
  model: FakeModel,
  turns: ScriptedTurn[],
  spans: OtlpSpan[],
): Promise<Omit<Sample, "baselineMs">> {
  let release!: () => void;
  turns.push({ text: "Nothing to change.", gate: new Promise<void>((r) => (release = r)) });
  const seen = model.agentRequests().length;
  const pid = d.child.proc.pid!;
  const cpuBefore = cpuMs(pid);
  const t0 = Date.now();
  const created = await d.api("POST", "/api/v1/agent/runs", {
    prompt: "Look around the repository",
    config: { repository: REPO, model_id: "openai-compatible/fake-coder", delivery: "branch" },
  });
  if (created.status !== 200) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
  const runId: string = created.body.run_id;
  const request = await until("the first model call", () => model.agentRequests()[seen]);
  const cpu = cpuMs(pid) - cpuBefore;
  release();
  const run = await until("the run to end", async () => {
    const r = (await d.api("GET", `/api/v1/agent/runs/${runId}`)).body;
    return ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"].includes(r.state) ? r : undefined;
  });
  if (run.state !== "SUCCEEDED") throw new Error(`run ${runId} ${run.state}: ${run.status_message?.message}`);
  const events = (await d.api("GET", `/api/v1/agent/runs/${runId}/events?limit=1000`)).body.events as Array<{
    type: string;
    at: string;
    data: Record<string, unknown>;
  }>;
  const at = (match: (e: (typeof events)[number]) => boolean, what: string) => {
    const event = events.find(match);
    if (!event) throw new Error(`run ${runId} has no ${what} event`);
    return Date.parse(event.at);
  };
  const fetching = at((e) => e.type === "log" && String(e.data.message).startsWith("Fetching"), "Fetching");
  const checkedOut = at(
    (e) => e.type === "log" && String(e.data.message).startsWith("Checked out"),
    "Checked out",
  );
  const prompted = at((e) => e.type === "message" && e.data.role === "user", "user message");
  const root = await until("the execution's trace", () =>
    spans.find((s) => s.name === "execute run" && s.attributes?.some((a) => a.value.stringValue === runId)),
  );
  const span = (name: string) => {
    const s = spans.find((x) => x.traceId === root.traceId && x.name === name);
    return s ? Number(BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1e6 : Number.NaN;
  };
  const created_at = Date.parse(run.created_at);
  const started_at = Date.parse(run.started_at);
  const fetchMs = span("repository fetch");
  return {
    totalMs: request.at - t0,
    cpuMs: cpu,
    phases: {
      create: created_at - t0,
      claim: started_at - created_at,
      workspace: fetching - started_at,
      fetch: fetchMs,
      // The checkout span; without the spans (an older Dispatch) the whole repository part.
      checkout: Number.isNaN(span("repository checkout"))
        ? checkedOut - fetching
        : span("repository checkout"),
      agent: prompted - checkedOut,
      harness: request.at - prompted,
    },
  };
}

async function main(): Promise<void> {
  const machine = machineNow();
  say(`${FILES} files, ${RUNS} runs after one warm-up; ${loadLine(machine)}`);
  const problem = await probeBwrap("bwrap");
  if (problem) {
    say(`bwrap: skipped (${problem})`);
    recordResults("run-start", machine, [
      {
        benchmark: `run start: create → first model call, ${FILES}-file repository, warm mirror, bwrap`,
        measured: "skipped",
        target: `p50 < ${TARGET_MS} ms`,
        note: problem,
      },
    ]);
    return;
  }
  const bwrap = execFileSync("sh", ["-c", "command -v bwrap"], { encoding: "utf8" }).trim();
  const scratch = mkdtempSync(join(tmpdir(), "dispatch-bench-run-start-"));
  const remotes = new GitRemotes();
  remotes.create(REPO, bigRepoFiles(FILES));
  const git = await new GitHttpServer(remotes.root, TOKEN).start();
  const github = await new FakeGitHub().start();
  const collector = await startCollector();
  const turns: ScriptedTurn[] = [];
  const model = await startFakeModel(turns);
  const warmMirror = join(scratch, "mirror.git");
  execFileSync("git", ["clone", "--quiet", "--bare", remotes.path(REPO), warmMirror]);
  execFileSync("git", ["--git-dir", warmMirror, "update-ref", "refs/remotes/origin/main", "refs/heads/main"]);
  let d: BenchDispatchProcess | undefined;
  const samples: Sample[] = [];
  try {
    d = await startDispatchProcess({
      bench: "run-start",
      env: {
        DISPATCH_SANDBOX: "bwrap",
        DISPATCH_LOG_LEVEL: "warn",
        GITHUB_SERVER_URL: git.url,
        GITHUB_API_URL: github.url,
        GITHUB_TOKEN: TOKEN,
        GITHUB_WEBHOOK_SECRET: "bench-webhook-secret",
        GITHUB_BOT_HANDLE: "dispatch",
        OPENAI_COMPATIBLE_BASE_URL: model.baseUrl("openai"),
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "100",
      },
    });
    await oneRun(d, model, turns, collector.spans);
    for (let i = 0; i < RUNS; i++) {
      const baselineMs = baseline(warmMirror, scratch, bwrap);
      samples.push({ ...(await oneRun(d, model, turns, collector.spans)), baselineMs });
    }
  } finally {
    await d?.stop();
    await model.close();
    await github.stop();
    await git.stop();
    await new Promise((resolve) => collector.server.close(resolve));
    remotes.remove();
    rmSync(scratch, { recursive: true, force: true });
  }

  const total = latencySummary(samples.map((s) => s.totalMs));
  const base = latencySummary(samples.map((s) => s.baselineMs));
  const cpu = latencySummary(samples.map((s) => s.cpuMs));
  console.log(`\nrun start: ${FILES}-file repository, warm mirror, bwrap; ${RUNS} runs, one at a time\n`);
  console.log("| phase | p50 | p99 |\n|---|---|---|");
  for (const [phase, what] of PHASES) {
    const s = latencySummary(samples.map((x) => x.phases[phase]).filter((v) => !Number.isNaN(v)));
    console.log(`| ${phase}: ${what} | ${ms(s.p50)} | ${ms(s.p99)} |`);
  }
  console.log(`| **create → first model call** | **${ms(total.p50)}** | **${ms(total.p99)}** |`);
  console.log(`| baseline: clone --shared + checkout + bwrap true | ${ms(base.p50)} | ${ms(base.p99)} |`);
  console.log(`| Dispatch CPU (with git, bwrap) per start | ${ms(cpu.p50)} | ${ms(cpu.p99)} |`);
  console.log(`\n${loadLine(machine, loadNow())}`);
  const breakdown = PHASES.map(([phase]) => {
    const p50 = latencySummary(samples.map((x) => x.phases[phase]).filter((v) => !Number.isNaN(v))).p50;
    return `${phase} ${ms(p50)}`;
  }).join(", ");
  const rows: ResultRow[] = [
    {
      benchmark: `run start: create → first model call, ${FILES.toLocaleString("en")}-file repository, warm mirror, bwrap: p50/p99`,
      measured: `${ms(total.p50)} / ${ms(total.p99)}`,
      target: `p50 < ${TARGET_MS} ms`,
      met: total.p50 < TARGET_MS,
      note: `baseline (clone --shared + checkout + bwrap true) p50 ${ms(base.p50)}, ${(total.p50 / base.p50).toFixed(1)}×; p50s: ${breakdown}; Dispatch CPU ${ms(cpu.p50)} per start; ${RUNS} runs`,
    },
  ];
  recordResults("run-start", machine, rows);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * External harness overhead benchmark: what Dispatch adds to each agent CLI (Claude Code,
 * Codex, Gemini CLI) on the same scripted task — the loopback fake of its provider answers one tool call
 * (a shell command) and then text — run
 *   (a) bare: the CLI started directly, with the fake's base URL, the arguments Dispatch gives it and a
 *       minimal driver reading its stream (the harness's own stream parser, so both count the same events);
 *   (b) through Dispatch: `dispatch serve` in a child process, POST /agent/runs with config.harness, the
 *       transcript followed over Server-Sent Events until SUCCEEDED (sandbox, relay, model gateway and all).
 * Printed: time to the agent's first event (its tool call), total wall time, Dispatch's own CPU per
 * transcript event (its process only, the agent's excluded), the agent's CPU per event bare, and the
 * ratios (b)/(a). Medians over BENCH_HARNESS_RUNS runs each, after one warm-up run of each. A harness
 * whose CLI is not installed is skipped with the reason; one that fails is reported and the others still run.
 *
 *   npm run bench:harnesses
 *
 * Knobs (environment): BENCH_HARNESS_RUNS (3), BENCH_HARNESSES (claude,codex,gemini), DISPATCH_SANDBOX
 * (auto). Not part of the test suite; no assertions (exit 1 only when the bench itself went wrong).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { AgentProgram } from "../../src/harnesses/external/agent-program.ts";
import { ClaudeHarness } from "../../src/harnesses/external/claude.ts";
import { CodexHarness } from "../../src/harnesses/external/codex.ts";
import type {
  AgentIO,
  AgentSession,
  ExternalHarness,
  ExternalHarnessOptions,
  SessionSetup,
} from "../../src/harnesses/external/external-harness.ts";
import { GeminiHarness } from "../../src/harnesses/external/gemini.ts";
import { EXTERNAL_DEFAULT_MODELS } from "../../src/model/harness-wire.ts";
import type { RunRecord } from "../../src/model/run.ts";
import {
  type FakeModel,
  type Provider,
  type ScriptedTurn,
  startFakeModel,
} from "../../test/support/fake-model/server.ts";
import { type BenchDispatchProcess, startDispatchProcess } from "../support/dispatch.ts";
import { machineNow, type ResultRow, recordResults } from "../support/results.ts";

const RUNS = Number(process.env.BENCH_HARNESS_RUNS ?? 3);
const WANTED = (process.env.BENCH_HARNESSES ?? "claude,codex,gemini").split(",").map((h) => h.trim());
const PROMPT = "Run the command, then say that you are done.";
const RUN_TIMEOUT_MS = 120_000;
/** What the fakes check nothing of; the agent in (b) holds Dispatch's placeholder, never this. */
const KEY = "bench-provider-key";
/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

const log = (line: string) => process.stderr.write(`[bench:harnesses] ${line}\n`);

/** Each harness's program and session, exactly as Dispatch makes them (their protected parts, opened here). */
interface BareParts {
  program: AgentProgram | { problem: string };
  session: AgentSession;
}
type Opened = ExternalHarness & { parts(setup: SessionSetup): BareParts };

function opened<T extends new (opts: ExternalHarnessOptions) => ExternalHarness>(Base: T) {
  // biome-ignore lint/suspicious/noExplicitAny: a mixin over the harness classes' protected members
  return class extends (Base as any) {
    parts(setup: SessionSetup): BareParts {
      return { program: this.program(), session: this.session(setup) };
    }
  } as unknown as new (
    opts: ExternalHarnessOptions,
  ) => Opened;
}

interface Spec {
  key: "claude" | "codex" | "gemini";
  label: string;
  /** The provider whose wire format the fake model server speaks to this agent. */
  provider: Provider;
  /** Dispatch's variables pointing the harness's provider at the fake. */
  env(baseUrl: string): Record<string, string>;
  /** The model both runs name (provider/model), when the agent needs one named to act as with a real model. */
  model?: string;
  /** The scripted task's one tool call: a shell command, in this agent's tool. */
  call: { name: string; input: Record<string, unknown> };
  harness: new (opts: ExternalHarnessOptions) => Opened;
}

const SPECS: Spec[] = [
  {
    key: "claude",
    label: "Claude Code",
    provider: "anthropic",
    env: (baseUrl) => ({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: baseUrl }),
    call: { name: "Bash", input: { command: "echo benchmark", description: "Say benchmark" } },
    harness: opened(ClaudeHarness),
  },
  {
    key: "codex",
    label: "Codex",
    provider: "openai",
    env: (baseUrl) => ({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: baseUrl }),
    // As test/harnesses/codex.test.ts: without a model named, Codex's first request offers no tools.
    model: "openai/gpt-fake",
    call: { name: "exec_command", input: { cmd: "echo benchmark", yield_time_ms: 10_000 } },
    harness: opened(CodexHarness),
  },
  {
    key: "gemini",
    label: "Gemini CLI",
    provider: "gemini",
    env: (baseUrl) => ({ GEMINI_API_KEY: KEY, GEMINI_BASE_URL: baseUrl }),
    call: { name: "run_shell_command", input: { command: "echo benchmark" } },
    harness: opened(GeminiHarness),
  },
];

interface Sample {
  /** From start (a: spawn; b: the create request) to the agent's first event, its tool call. */
  firstEventMs: number;
  /** From start to the end (a: the CLI exited; b: SUCCEEDED arrived). */
  wallMs: number;
  /** Transcript events: those the driver saw (a), those of the run (b). */
  events: number;
  /** CPU seconds: the agent's and its children's (a); Dispatch's own process (b). */
  cpuSeconds: number;
}

/** The scripted task, queued for the next run: one tool call, then the answer. */
function queueTask(turns: ScriptedTurn[], spec: Spec): void {
  turns.push({ calls: [spec.call] }, { text: "Done: the command printed benchmark." });
}

/**
 * The agent's first event that counts: its tool call (the task's first step), the same on both sides. A
 * run without one did not do the task (an agent answering from a side request, say) and stops the bench.
 */
function isFirstStep(type: string): boolean {
  return type === "tool_call";
}

/** utime+stime (own) and cutime+cstime (waited-for children) of a process, in seconds. */
function cpuOf(pid: number | "self"): { own: number; children: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces), 1-based from field 3.
  const fields = stat
    .slice(stat.lastIndexOf(")") + 2)
    .split(" ")
    .map(Number);
  const at = (n: number) => fields[n - 3]!;
  return { own: (at(14) + at(15)) / TICKS_PER_SECOND, children: (at(16) + at(17)) / TICKS_PER_SECOND };
}

/** The model a run of `spec` uses: the one it names, else the agent's default. */
function modelOf(spec: Spec): string {
  return spec.model ?? EXTERNAL_DEFAULT_MODELS[spec.key]!;
}

/** (a) The CLI started directly against the fake, driven by the harness's own session. */
async function bareRun(spec: Spec, fake: FakeModel, turns: ScriptedTurn[]): Promise<Sample> {
  const dir = await mkdtemp(join(tmpdir(), "dispatch-bench-harness-"));
  try {
    const workspace = join(dir, "workspace");
    const home = join(dir, "home");
    await mkdir(workspace);
    await mkdir(home);
    const harness = new spec.harness({ provider: { apiKey: KEY, baseUrl: fake.baseUrl(spec.provider) } });
    const { program, session } = harness.parts({
      run: { agentConfig: {} } as RunRecord,
      workspace,
      input: [PROMPT],
      resume: undefined,
      // The model Dispatch runs too: the one named, else the agent's default (EXTERNAL_DEFAULT_MODELS).
      model: modelOf(spec).slice(modelOf(spec).indexOf("/") + 1),
      home,
      baseUrl: fake.baseUrl(spec.provider),
    });
    if ("problem" in program) throw new Error(program.problem);
    await session.prepare?.();
    queueTask(turns, spec);
    const cpuBefore = cpuOf("self").children;
    const started = performance.now();
    const child = spawn(program.command[0]!, [...program.command.slice(1), ...session.args], {
      cwd: workspace,
      env: {
        PATH: [...program.path, process.env.PATH ?? "/usr/bin:/bin"].join(":"),
        HOME: home,
        XDG_CONFIG_HOME: join(home, ".config"),
        XDG_CACHE_HOME: join(home, ".cache"),
        XDG_DATA_HOME: join(home, ".local", "share"),
        XDG_STATE_HOME: join(home, ".local", "state"),
        ...session.env,
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr = (stderr + d).slice(-4000);
    });
    const exited = new Promise<number | null>((done) => child.once("close", (code) => done(code)));
    let inputOpen = true;
    const close = () => {
      if (inputOpen) {
        inputOpen = false;
        child.stdin.end();
      }
    };
    let events = 0;
    let firstEventMs: number | undefined;
    let failure: string | undefined;
    const io: AgentIO = {
      emit: async (type) => {
        events++;
        if (firstEventMs === undefined && isFirstStep(type)) firstEventMs = performance.now() - started;
      },
      write: (line) => {
        if (inputOpen) child.stdin.write(`${line}\n`);
      },
      continueOrClose: async () => {
        close();
        return false;
      },
      closeInput: async () => close(),
      recordUsage: async () => {
        events++; // Dispatch writes a usage event for each
      },
      saveSession: async () => undefined,
      fail: (message) => {
        failure ??= message;
      },
      completed: () => undefined,
      // The bench's tasks ask the person nothing.
      asked: () => undefined,
    };
    session.begin(io);
    if (!session.liveInput) close();
    const timer = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS);
    for await (const line of createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY })) {
      if (!line.trim().startsWith("{")) continue;
      try {
        await session.handle(JSON.parse(line), io);
      } catch {
        // a line that is not JSON after all
      }
    }
    const code = await exited;
    clearTimeout(timer);
    const wallMs = performance.now() - started;
    if (code !== 0 || failure || firstEventMs === undefined) {
      throw new Error(
        `${spec.label} (bare) did not finish the task: exit ${code} ${failure ?? ""}\n${stderr}`,
      );
    }
    return { firstEventMs, wallMs, events, cpuSeconds: cpuOf("self").children - cpuBefore };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** (b) The same task as a Dispatch run, followed over SSE until SUCCEEDED. */
async function dispatchRun(spec: Spec, server: BenchDispatchProcess, turns: ScriptedTurn[]): Promise<Sample> {
  queueTask(turns, spec);
  const pid = server.child.proc.pid!;
  const cpuBefore = cpuOf(pid).own;
  const started = performance.now();
  const created = await server.api("POST", "/api/v1/agent/runs", {
    prompt: PROMPT,
    config: { harness: { type: spec.key }, ...(spec.model ? { model_id: spec.model } : {}) },
  });
  if (created.status !== 200)
    throw new Error(`create: HTTP ${created.status} ${JSON.stringify(created.body)}`);
  const runId = created.body.run_id as string;
  const res = await fetch(`${server.url}/api/v1/agent/runs/${runId}/events`, {
    headers: { authorization: `Bearer ${server.key}`, accept: "text/event-stream" },
    signal: AbortSignal.timeout(RUN_TIMEOUT_MS),
  });
  if (!res.ok || !res.body) throw new Error(`events: HTTP ${res.status}`);
  let events = 0;
  let firstEventMs: number | undefined;
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    let cut = buffer.indexOf("\n\n");
    while (cut >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      cut = buffer.indexOf("\n\n");
      const data = frame
        .split("\n")
        .filter((l) => l.startsWith("data: "))
        .map((l) => l.slice(6))
        .join("\n");
      if (!data) continue;
      const event = JSON.parse(data) as { type: string; data: Record<string, unknown> };
      events++;
      if (firstEventMs === undefined && isFirstStep(event.type)) {
        firstEventMs = performance.now() - started;
      }
      if (
        event.type === "state" &&
        ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"].includes(String(event.data.state))
      ) {
        const wallMs = performance.now() - started;
        if (event.data.state !== "SUCCEEDED" || firstEventMs === undefined) {
          const run = await server.api("GET", `/api/v1/agent/runs/${runId}`);
          throw new Error(
            `${spec.label} run ${event.data.state}: ${JSON.stringify(run.body.status_message)}`,
          );
        }
        // Returning ends the loop, which cancels the stream.
        return { firstEventMs, wallMs, events, cpuSeconds: cpuOf(pid).own - cpuBefore };
      }
    }
  }
  throw new Error(`${spec.label}: the event stream ended before the run did`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

interface Result {
  spec: Spec;
  bare: Sample[];
  dispatch: Sample[];
}

async function measure(spec: Spec): Promise<Result | string> {
  const turns: ScriptedTurn[] = [];
  const fake = await startFakeModel(turns);
  let server: BenchDispatchProcess | undefined;
  try {
    const probe = new spec.harness({ provider: { apiKey: KEY } }).parts({
      run: { agentConfig: {} } as RunRecord,
      workspace: tmpdir(),
      input: [],
      resume: undefined,
      model: modelOf(spec),
      home: tmpdir(),
      baseUrl: fake.baseUrl(spec.provider),
    }).program;
    if ("problem" in probe) return probe.problem;
    server = await startDispatchProcess({
      bench: "harnesses",
      env: {
        ...spec.env(fake.baseUrl(spec.provider)),
        ...(process.env.DISPATCH_SANDBOX ? { DISPATCH_SANDBOX: process.env.DISPATCH_SANDBOX } : {}),
        DISPATCH_LOG_LEVEL: "warn",
      },
    });
    log(`${spec.label}: warming up`);
    await bareRun(spec, fake, turns);
    await dispatchRun(spec, server, turns);
    const bare: Sample[] = [];
    const through: Sample[] = [];
    // Alternating, so that a change in the machine's load falls on both alike.
    for (let i = 0; i < RUNS; i++) {
      bare.push(await bareRun(spec, fake, turns));
      through.push(await dispatchRun(spec, server, turns));
      log(`${spec.label}: ${i + 1}/${RUNS}`);
    }
    return { spec, bare, dispatch: through };
  } finally {
    if (server?.child.exited) log(`Dispatch exited:\n${server.child.tail()}`);
    await server?.stop();
    await fake.close();
  }
}

async function main(): Promise<number> {
  const machine = machineNow();
  const [load1, load5] = loadavg();
  const cores = availableParallelism();
  log(`load average ${load1!.toFixed(2)} (1 min), ${load5!.toFixed(2)} (5 min) on ${cores} cores`);
  if (load1! > 0.5) log("warning: other processes compete for the CPU; the numbers will be noisy");
  const results: Result[] = [];
  const skipped: string[] = [];
  const failed: string[] = [];
  const rows: ResultRow[] = [];
  for (const spec of SPECS.filter((s) => WANTED.includes(s.key))) {
    let result: Result | string;
    try {
      result = await measure(spec);
    } catch (err) {
      // One agent CLI going wrong says nothing about the others: report it and measure the rest.
      log(`${spec.label} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      const reason = (err instanceof Error ? err.message : String(err)).split("\n")[0]!;
      failed.push(`${spec.label}: FAILED (${reason})`);
      rows.push({
        benchmark: `${spec.label} through Dispatch`,
        measured: "failed",
        target: "report",
        note: reason,
      });
      continue;
    }
    if (typeof result === "string") {
      skipped.push(`${spec.label}: skipped (${result})`);
      rows.push({
        benchmark: `${spec.label} through Dispatch`,
        measured: "skipped",
        target: "report",
        note: result,
      });
    } else results.push(result);
  }
  const ms = (n: number) => `${n.toFixed(0).padStart(6)} ms`;
  const cpu = (n: number) => `${(n * 1000).toFixed(2).padStart(7)} ms`;
  const ratio = (b: number, a: number) => `${(b / a).toFixed(2)}x`;
  const lines = [
    "",
    `External harnesses: the same scripted task (one shell tool call, then text) bare and through Dispatch; medians of ${RUNS} runs`,
    "",
    "agent        | first event: bare  Dispatch  ratio | wall time: bare   Dispatch  ratio | CPU/event: agent (bare)  Dispatch  ratio",
    "-------------|-------------------------------------|------------------------------------|------------------------------------------",
  ];
  for (const r of results) {
    const first = [
      median(r.bare.map((s) => s.firstEventMs)),
      median(r.dispatch.map((s) => s.firstEventMs)),
    ] as const;
    const wall = [median(r.bare.map((s) => s.wallMs)), median(r.dispatch.map((s) => s.wallMs))] as const;
    const perEvent = [
      median(r.bare.map((s) => s.cpuSeconds / Math.max(1, s.events))),
      median(r.dispatch.map((s) => s.cpuSeconds / Math.max(1, s.events))),
    ] as const;
    rows.push(
      {
        benchmark: `${r.spec.label}: wall time bare → through Dispatch (median of ${RUNS})`,
        measured: `${ms(wall[0]).trim()} → ${ms(wall[1]).trim()} (${ratio(wall[1], wall[0])})`,
        target: "report",
        note: `first event ${ms(first[0]).trim()} → ${ms(first[1]).trim()} (${ratio(first[1], first[0])})`,
      },
      {
        benchmark: `${r.spec.label}: Dispatch's CPU per transcript event`,
        measured: `${cpu(perEvent[1]).trim()} (${ratio(perEvent[1], perEvent[0])} the agent's own)`,
        target: "report",
      },
    );
    lines.push(
      `${r.spec.label.padEnd(12)} | ${ms(first[0])} ${ms(first[1])} ${ratio(first[1], first[0]).padStart(6)} | ${ms(wall[0])} ${ms(wall[1])} ${ratio(wall[1], wall[0]).padStart(6)} | ${cpu(perEvent[0]).padStart(18)} ${cpu(perEvent[1])} ${ratio(perEvent[1], perEvent[0]).padStart(6)}`,
    );
  }
  const [after1] = loadavg();
  lines.push(
    "",
    "  first event: the agent's tool call (a: on its stdout; b: on the run's event stream, from the create request).",
    "  CPU/event: (a) the agent and its children per event it printed; (b) Dispatch's own process per transcript event",
    "  of the run (the agent, relay and sandbox excluded); the ratio is Dispatch's CPU for an event to the agent's own.",
    ...skipped.map((s) => `  ${s}`),
    ...failed.map((s) => `  ${s}`),
    `  machine: ${cores} cores, load average ${load1!.toFixed(2)} before, ${after1!.toFixed(2)} after; sandbox ${process.env.DISPATCH_SANDBOX ?? "auto"}`,
    "",
  );
  process.stdout.write(lines.join("\n"));
  recordResults("harnesses", machine, rows);
  return failed.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
